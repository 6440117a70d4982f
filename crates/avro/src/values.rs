//! Values as a reader understands them: the logical type applied on top of the decoded datum,
//! so that two readers of the same bytes can be compared value for value. Structural replay
//! only proves that bytes parse; `"12.34"` read as `decimal(18,2)` parses fine and is
//! 2,112,952,860.68.

use crate::model::{Arena, Kind, Logical, NodeId};
use serde_json::Value;

/// The bytes of a bytes or fixed datum in the JSON encoding (code points 0-255).
fn raw_bytes(v: &Value) -> Option<Vec<u8>> {
    v.as_str()?
        .chars()
        .map(|c| u8::try_from(u32::from(c)).ok())
        .collect()
}

/// A decimal's unscaled two's-complement big-endian bytes as decimal text. Precision 38 fits
/// an `i128`, which covers every decimal the registry's samples use; longer ones are shown
/// as their bytes, which still compare exactly.
fn decimal_text(bytes: &[u8], scale: u32) -> String {
    if bytes.is_empty() || bytes.len() > 16 {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        return format!("decimal-bytes:{hex}/{scale}");
    }
    let fill = if bytes[0] & 0x80 != 0 { 0xff } else { 0 };
    let mut full = [fill; 16];
    full[16 - bytes.len()..].copy_from_slice(bytes);
    let unscaled = i128::from_be_bytes(full);
    let digits = unscaled.unsigned_abs().to_string();
    let sign = if unscaled < 0 { "-" } else { "" };
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    // Sixteen bytes hold at most 39 digits: a larger scale would only pad with zeros, as
    // many as the schema says.
    if scale > 64 {
        return format!("{sign}{digits}e-{scale}");
    }
    let scale = scale as usize;
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{sign}{int}.{frac}")
}

fn scaled(v: &Value, prefix: &str, nanos_per_unit: i64) -> Value {
    match v.as_i64() {
        Some(n) => Value::String(format!(
            "{prefix}:{}",
            i128::from(n) * i128::from(nanos_per_unit)
        )),
        None => v.clone(),
    }
}

/// `v`, decoded for the reader type `r` of `arena`, as that reader understands it.
pub fn apply(arena: &Arena, r: NodeId, v: Value) -> Value {
    let node = arena.node(r);
    match &node.logical {
        Some(Logical::Decimal { scale, .. }) => match raw_bytes(&v) {
            Some(bytes) => Value::String(decimal_text(&bytes, *scale)),
            None => v,
        },
        Some(Logical::TimestampMillis) => scaled(&v, "instant", 1_000_000),
        Some(Logical::TimestampMicros) => scaled(&v, "instant", 1_000),
        Some(Logical::LocalTimestampMillis) => scaled(&v, "local", 1_000_000),
        Some(Logical::LocalTimestampMicros) => scaled(&v, "local", 1_000),
        Some(Logical::Date) => scaled(&v, "date", 1),
        Some(Logical::TimeMillis) => scaled(&v, "time", 1_000_000),
        Some(Logical::TimeMicros) => scaled(&v, "time", 1_000),
        Some(Logical::Uuid | Logical::Duration) => v,
        None => match node.kind {
            Kind::Bytes | Kind::Fixed(_) => match raw_bytes(&v) {
                Some(bytes) => Value::String(String::from_utf8_lossy(&bytes).into_owned()),
                None => v,
            },
            _ => v,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_text_applies_scale_and_sign() {
        assert_eq!(decimal_text(&[0x04, 0xd2], 2), "12.34");
        assert_eq!(decimal_text(&[0xfb, 0x2e], 2), "-12.34");
        assert_eq!(decimal_text(&[0x05], 3), "0.005");
        assert_eq!(decimal_text(&[0x05], 0), "5");
        // The text "12.34" read as decimal(18,2): the bytes of the characters.
        assert_eq!(decimal_text(b"12.34", 2), "2112952860.68");
        // A scale far past the digits is not padded out.
        assert_eq!(decimal_text(&[0x05], u32::MAX), "5e-4294967295");
    }
}

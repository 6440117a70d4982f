//! Confluent's Protobuf framing details: message indexes, and a JSON view of decoded payloads.

use prost_reflect::{DynamicMessage, Kind, MapKey, Value};
use serde_json::{Map, Value as Json};

fn write_varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn zigzag(v: i32) -> u64 {
    u64::from(((v << 1) ^ (v >> 31)) as u32)
}

/// Encodes message indexes as Confluent serializers do: a zig-zag varint count, then each index
/// as a zig-zag varint; the common path `[0]` is the single byte `0x00`.
pub fn encode_message_indexes(indexes: &[i32]) -> Vec<u8> {
    if indexes == [0] {
        return vec![0];
    }
    let mut out = Vec::new();
    write_varint(&mut out, zigzag(indexes.len() as i32));
    for &i in indexes {
        write_varint(&mut out, zigzag(i));
    }
    out
}

fn read_varint(bytes: &[u8], pos: &mut usize) -> Result<i32, String> {
    let mut result: u64 = 0;
    let mut shift = 0;
    loop {
        let b = *bytes
            .get(*pos)
            .ok_or_else(|| "Message indexes end in the middle of a varint.".to_string())?;
        *pos += 1;
        result |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
        if shift > 35 {
            return Err("Message index varint is longer than 5 bytes.".to_string());
        }
    }
    let raw = result as u32;
    Ok(((raw >> 1) as i32) ^ -((raw & 1) as i32))
}

/// Decodes message indexes at the start of `bytes`; returns them with the number of bytes read.
/// A count of zero (the single `0x00` byte) means `[0]`.
pub fn decode_message_indexes(bytes: &[u8]) -> Result<(Vec<i32>, usize), String> {
    let mut pos = 0;
    let count = read_varint(bytes, &mut pos)?;
    if count < 0 {
        return Err(format!("Negative message index count {count}."));
    }
    if count == 0 {
        return Ok((vec![0], pos));
    }
    if count as usize > bytes.len() {
        return Err(format!(
            "Message index count {count} exceeds the {} bytes available.",
            bytes.len()
        ));
    }
    let mut out = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let i = read_varint(bytes, &mut pos)?;
        if i < 0 {
            return Err(format!("Negative message index {i}."));
        }
        out.push(i);
    }
    Ok((out, pos))
}

/// The error of a decoding stopped because the installed work budget is spent.
pub const BUDGET_SPENT: &str = "Decoding the payload ran out of the check's budget.";

/// Units of work gathered before they are charged to the installed budget (a poll takes a
/// lock). A unit is one value rendered, or 64 bytes of text.
const CHARGE_BATCH: u64 = 4096;

/// The work of one rendering, charged to the installed budget in batches.
#[derive(Default)]
struct Meter {
    pending: u64,
    spent: bool,
}

impl Meter {
    fn produce(&mut self, units: u64) {
        self.pending = self.pending.saturating_add(units);
        if self.pending >= CHARGE_BATCH {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if covenant_engine::budget::charge(std::mem::take(&mut self.pending)) {
            self.spent = true;
        }
    }
}

/// Units a payload of `len` bytes is charged before it is decoded: every value a Protobuf
/// payload holds takes at least one byte of it (an empty nested message two), and a decoded
/// value takes a few dozen bytes.
pub(crate) fn decoding_units(len: usize) -> u64 {
    len as u64 / 2 + 1
}

/// Proto3 JSON-like rendering: field names as declared JSON names, enums by name, bytes as
/// base64, 64-bit integers as strings. Every value rendered is charged to the installed
/// budget; a spent budget is [`BUDGET_SPENT`].
pub(crate) fn message_to_json(msg: &DynamicMessage) -> Result<Json, String> {
    let mut meter = Meter::default();
    let json = render_message(msg, &mut meter);
    meter.flush();
    if meter.spent {
        return Err(BUDGET_SPENT.into());
    }
    Ok(json)
}

fn render_message(msg: &DynamicMessage, meter: &mut Meter) -> Json {
    let mut map = Map::new();
    for (field, value) in msg.fields() {
        if meter.spent {
            break;
        }
        map.insert(
            field.json_name().to_string(),
            value_to_json(&field.kind(), value, meter),
        );
    }
    Json::Object(map)
}

fn value_to_json(kind: &Kind, value: &Value, meter: &mut Meter) -> Json {
    use base64::Engine;
    meter.produce(1);
    if meter.spent {
        return Json::Null;
    }
    match value {
        Value::Bool(b) => Json::Bool(*b),
        Value::I32(v) => Json::from(*v),
        Value::U32(v) => Json::from(*v),
        Value::I64(v) => Json::String(v.to_string()),
        Value::U64(v) => Json::String(v.to_string()),
        Value::F32(v) => serde_json::Number::from_f64(f64::from(*v))
            .map(Json::Number)
            .unwrap_or_else(|| Json::String(v.to_string())),
        Value::F64(v) => serde_json::Number::from_f64(*v)
            .map(Json::Number)
            .unwrap_or_else(|| Json::String(v.to_string())),
        Value::String(s) => {
            meter.produce(s.len() as u64 / 64);
            Json::String(s.clone())
        }
        Value::Bytes(b) => {
            meter.produce(b.len() as u64 / 48);
            Json::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        Value::EnumNumber(n) => match kind.as_enum().and_then(|e| e.get_value(*n)) {
            Some(v) => Json::String(v.name().to_string()),
            None => Json::from(*n),
        },
        Value::Message(m) => render_message(m, meter),
        Value::List(items) => {
            let mut out = Vec::new();
            for v in items {
                if meter.spent {
                    break;
                }
                out.push(value_to_json(kind, v, meter));
            }
            Json::Array(out)
        }
        Value::Map(entries) => {
            let value_kind = kind
                .as_message()
                .map(|m| m.map_entry_value_field().kind())
                .unwrap_or(Kind::String);
            let mut sorted: Vec<(&MapKey, &Value)> = entries.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(b.0));
            let mut map = Map::new();
            for (k, v) in sorted {
                if meter.spent {
                    break;
                }
                let key = match k {
                    MapKey::Bool(b) => b.to_string(),
                    MapKey::I32(v) => v.to_string(),
                    MapKey::I64(v) => v.to_string(),
                    MapKey::U32(v) => v.to_string(),
                    MapKey::U64(v) => v.to_string(),
                    MapKey::String(s) => s.clone(),
                };
                map.insert(key, value_to_json(&value_kind, v, meter));
            }
            Json::Object(map)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_message_is_single_zero_byte() {
        assert_eq!(encode_message_indexes(&[0]), vec![0]);
        assert_eq!(decode_message_indexes(&[0, 9, 9]).unwrap(), (vec![0], 1));
    }

    #[test]
    fn nested_path_round_trips_with_zigzag() {
        let bytes = encode_message_indexes(&[1, 0, 70]);
        // count 3 -> 6, 1 -> 2, 0 -> 0, 70 -> 140 (two bytes)
        assert_eq!(bytes, vec![6, 2, 0, 0x8c, 0x01]);
        assert_eq!(decode_message_indexes(&bytes).unwrap(), (vec![1, 0, 70], 5));
        // the long form of [0] is accepted too
        assert_eq!(decode_message_indexes(&[2, 0]).unwrap(), (vec![0], 2));
    }

    #[test]
    fn truncated_or_negative_input_is_an_error() {
        assert!(decode_message_indexes(&[]).is_err());
        assert!(decode_message_indexes(&[0x80]).is_err());
        assert!(decode_message_indexes(&[1]).is_err());
        assert!(decode_message_indexes(&[4, 1]).is_err());
    }
}

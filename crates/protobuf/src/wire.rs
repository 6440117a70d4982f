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

/// Proto3 JSON-like rendering: field names as declared JSON names, enums by name, bytes as
/// base64, 64-bit integers as strings.
pub(crate) fn message_to_json(msg: &DynamicMessage) -> Json {
    let mut map = Map::new();
    for (field, value) in msg.fields() {
        map.insert(
            field.json_name().to_string(),
            value_to_json(&field.kind(), value),
        );
    }
    Json::Object(map)
}

fn value_to_json(kind: &Kind, value: &Value) -> Json {
    use base64::Engine;
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
        Value::String(s) => Json::String(s.clone()),
        Value::Bytes(b) => Json::String(base64::engine::general_purpose::STANDARD.encode(b)),
        Value::EnumNumber(n) => match kind.as_enum().and_then(|e| e.get_value(*n)) {
            Some(v) => Json::String(v.name().to_string()),
            None => Json::from(*n),
        },
        Value::Message(m) => message_to_json(m),
        Value::List(items) => Json::Array(items.iter().map(|v| value_to_json(kind, v)).collect()),
        Value::Map(entries) => {
            let value_kind = kind
                .as_message()
                .map(|m| m.map_entry_value_field().kind())
                .unwrap_or(Kind::String);
            let mut sorted: Vec<(&MapKey, &Value)> = entries.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(b.0));
            let mut map = Map::new();
            for (k, v) in sorted {
                let key = match k {
                    MapKey::Bool(b) => b.to_string(),
                    MapKey::I32(v) => v.to_string(),
                    MapKey::I64(v) => v.to_string(),
                    MapKey::U32(v) => v.to_string(),
                    MapKey::U64(v) => v.to_string(),
                    MapKey::String(s) => s.clone(),
                };
                map.insert(key, value_to_json(&value_kind, v));
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

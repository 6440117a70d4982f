//! Schema text as a JSON tree that borrows its strings from the text.
//!
//! Parsing walks the schema's JSON once and keeps only a few of its values (defaults and
//! custom attributes), so building a `serde_json::Value` first would spend most of the parse
//! on allocating and hashing keys and strings that are looked at once and dropped. The same
//! `serde_json` deserializer reads the text, so syntax errors, numbers and the nesting limit
//! are exactly serde_json's; an object keeps its keys in order with duplicates as they came,
//! and lookups take the last value of a key, as `serde_json::Map` does.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::borrow::Cow;
use std::fmt;

#[derive(Debug)]
pub enum Json<'a> {
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(Object<'a>),
}

/// A JSON object's members in text order, duplicates included.
#[derive(Debug, Default)]
pub struct Object<'a>(Vec<(Cow<'a, str>, Json<'a>)>);

impl<'a> Object<'a> {
    /// The value of `key`; the last one when the key repeats.
    pub fn get(&self, key: &str) -> Option<&Json<'a>> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The members as a `serde_json::Map`, built like serde_json builds one from the text
    /// (a repeated key keeps its first position and takes its last value).
    pub fn to_map(&self) -> Map<String, Value> {
        let mut map = Map::new();
        for (k, v) in &self.0 {
            map.insert(k.to_string(), v.to_value());
        }
        map
    }

    /// Like [`Object::to_map`] without the members named in `known`.
    pub fn rest(&self, known: &[&str]) -> Map<String, Value> {
        let mut map = Map::new();
        for (k, v) in self.0.iter().filter(|(k, _)| !known.contains(&k.as_ref())) {
            map.insert(k.to_string(), v.to_value());
        }
        map
    }
}

impl Json<'_> {
    pub fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.clone()),
            Json::String(s) => Value::String(s.to_string()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(obj) => Value::Object(obj.to_map()),
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Json::Number(n) => n.as_u64(),
            _ => None,
        }
    }
}

/// The compact JSON text of the value, as `serde_json::Value` prints it (for messages).
impl fmt::Display for Json<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.to_value(), f)
    }
}

impl<'de> Deserialize<'de> for Json<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Json<'de>, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json<'de>, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Json<'de>, E> {
        // What serde_json's own `Value` makes of a float.
        Ok(Number::from_f64(v).map_or(Json::Null, Json::Number))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(v)))
    }
    fn visit_none<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Json<'de>, D::Error> {
        Deserialize::deserialize(d)
    }
    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let mut members = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some(Key(key)) = map.next_key()? {
            members.push((key, map.next_value()?));
        }
        Ok(Json::Object(Object(members)))
    }
}

/// An object key, borrowed from the text when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_as_serde_json_values() {
        let text =
            r#"{"b":1,"a":[true,null,"x\ny",-2,3.5e0,18446744073709551615],"b":{"c":"d"},"e":{}}"#;
        let ours: Json<'_> = serde_json::from_str(text).expect("parses");
        let theirs: Value = serde_json::from_str(text).expect("parses");
        assert_eq!(ours.to_value(), theirs);
        let Json::Object(obj) = &ours else {
            panic!("an object")
        };
        assert_eq!(
            obj.get("b").map(Json::to_value),
            theirs.get("b").cloned(),
            "the last value of a repeated key"
        );
        let keys: Vec<&String> = theirs.as_object().expect("object").keys().collect();
        let ours_keys: Vec<String> = obj.to_map().keys().cloned().collect();
        assert_eq!(ours_keys, keys.into_iter().cloned().collect::<Vec<_>>());
    }

    #[test]
    fn syntax_errors_are_serde_json_errors() {
        for text in ["{", "[1,]", "{\"a\" 1}", "nul", "1 2"] {
            let ours = serde_json::from_str::<Json<'_>>(text).expect_err("invalid");
            let theirs = serde_json::from_str::<Value>(text).expect_err("invalid");
            assert_eq!(ours.to_string(), theirs.to_string(), "{text}");
        }
    }
}

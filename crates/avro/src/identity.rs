//! The identity of an Avro schema without `normalize`, as Confluent compares it: the parsed
//! schema printed back by the Avro library, so whitespace, the order of the attributes Avro
//! knows, `{"type":"int"}` for `"int"`, a namespace equal to the enclosing one and an explicit
//! ascending field order do not make a schema new. Docs, defaults, aliases, custom properties
//! (in their order) and field order still do.
//!
//! Written over the JSON rather than a parsed schema so that it also applies to schemas whose
//! named types come from references; defaults and custom properties are copied untouched.

use serde_json::{Map, Value};

const PRIMITIVES: [&str; 8] = [
    "null", "boolean", "int", "long", "float", "double", "bytes", "string",
];

/// Attributes of a record field in the order Avro prints them.
const FIELD_ORDER: [&str; 6] = ["name", "type", "doc", "default", "order", "aliases"];

/// The identity string of Avro schema text, or `None` when the text is not JSON.
pub fn identity_string(text: &str) -> Option<String> {
    let value: Value = serde_json::from_str(text).ok()?;
    Some(identity_of(&value))
}

/// The identity string of Avro schema JSON already parsed: the same as [`identity_string`] of
/// its compact text.
pub fn identity_of(value: &Value) -> String {
    schema(value, None).to_string()
}

fn schema(value: &Value, enclosing: Option<&str>) -> Value {
    match value {
        Value::Array(branches) => {
            Value::Array(branches.iter().map(|b| schema(b, enclosing)).collect())
        }
        Value::Object(map) => object(map, enclosing),
        Value::String(name) => Value::String(reference(name, enclosing)),
        other => other.clone(),
    }
}

/// A named type referred to by name, as Avro prints it: without its namespace when that is
/// the enclosing one.
fn reference(name: &str, enclosing: Option<&str>) -> String {
    match name.rsplit_once('.') {
        Some((space, short)) if Some(space) == enclosing && !PRIMITIVES.contains(&short) => {
            short.to_string()
        }
        _ => name.to_string(),
    }
}

/// Attributes Avro reads as part of a schema; on a type that does not use one it is dropped,
/// never kept as a custom property (so `{"type":"int","name":"n"}` is `"int"`).
pub(crate) const RESERVED: [&str; 10] = [
    "doc",
    "fields",
    "items",
    "name",
    "namespace",
    "size",
    "symbols",
    "values",
    "type",
    "aliases",
];

/// The reserved attributes each type uses (`default` is an enum's own, a property elsewhere).
fn used_by(ty: &str) -> &'static [&'static str] {
    match ty {
        "record" | "error" => &["type", "name", "namespace", "doc", "fields", "aliases"],
        "enum" => &[
            "type",
            "name",
            "namespace",
            "doc",
            "symbols",
            "default",
            "aliases",
        ],
        "fixed" => &["type", "name", "namespace", "doc", "size", "aliases"],
        "array" => &["type", "items"],
        "map" => &["type", "values"],
        _ => &["type"],
    }
}

fn object(map: &Map<String, Value>, enclosing: Option<&str>) -> Value {
    let ty = map.get("type").and_then(Value::as_str);
    let used = ty.map_or(&["type"][..], used_by);
    let named = used.contains(&"name");
    let name = map.get("name").and_then(Value::as_str).filter(|_| named);
    let declared = map
        .get("namespace")
        .and_then(Value::as_str)
        .filter(|_| named);
    // The type's own namespace (a dotted name carries it; an empty one is none), which named
    // types inside this one inherit.
    let (space, short) = match name.and_then(|n| n.rsplit_once('.')) {
        Some((space, short)) => (Some(space), Some(short)),
        None => (declared.or(enclosing), name),
    };
    let space = space.filter(|s| !s.is_empty());
    let inner = if named { space } else { enclosing };
    let mut out = Map::new();
    // The kept attributes are borrowed, not copied: a copy cloned every nested type once per
    // level it sits under (the 1,524 Avro texts of the peer corpus, parse included: 4.1–5.5 ms
    // a pass against 6.3–8.8 ms with the copy, runs in turns; the same output for each).
    let kept = |key: &str| used.contains(&key) || !RESERVED.contains(&key);
    for (key, v) in ordered(map, used).filter(|(key, _)| kept(key)) {
        let v = match key {
            "type" | "items" | "values" => schema(v, inner),
            "fields" => match v {
                Value::Array(fields) => {
                    Value::Array(fields.iter().map(|f| field(f, inner)).collect())
                }
                other => other.clone(),
            },
            "name" => match short {
                Some(short) => Value::String(short.to_string()),
                None => v.clone(),
            },
            // Written right after the name below, only when it differs from the enclosing one.
            "namespace" => continue,
            // Aliases follow the custom properties.
            "aliases" => continue,
            _ => v.clone(),
        };
        out.insert(key.to_string(), v);
        if key == "name" && space != enclosing.filter(|s| !s.is_empty()) {
            out.insert(
                "namespace".into(),
                Value::String(space.unwrap_or("").into()),
            );
        }
    }
    if let Some(aliases) = map.get("aliases").filter(|_| kept("aliases")) {
        out.insert("aliases".into(), aliases.clone());
    }
    match (out.len(), out.get("type")) {
        (1, Some(Value::String(t))) if PRIMITIVES.contains(&t.as_str()) => Value::String(t.clone()),
        (1, Some(nested @ (Value::Object(_) | Value::Array(_)))) => nested.clone(),
        _ => Value::Object(out),
    }
}

fn field(value: &Value, enclosing: Option<&str>) -> Value {
    let Value::Object(map) = value else {
        return value.clone();
    };
    let mut out = Map::new();
    for (key, v) in ordered(map, &FIELD_ORDER) {
        let v = match key {
            "type" => schema(v, enclosing),
            "order" if v == "ascending" => continue,
            _ => v.clone(),
        };
        out.insert(key.to_string(), v);
    }
    Value::Object(out)
}

/// The entries of `map`: the `known` keys first in that order, then the rest as written.
fn ordered<'a>(
    map: &'a Map<String, Value>,
    known: &'a [&'a str],
) -> impl Iterator<Item = (&'a str, &'a Value)> {
    let first = known
        .iter()
        .filter_map(|k| map.get_key_value(*k))
        .map(|(k, v)| (k.as_str(), v));
    let rest = map
        .iter()
        .filter(|(k, _)| !known.contains(&k.as_str()))
        .map(|(k, v)| (k.as_str(), v));
    first.chain(rest)
}

#[cfg(test)]
mod tests {
    use super::identity_string;

    fn same(a: &str, b: &str) -> bool {
        identity_string(a) == identity_string(b)
    }

    #[test]
    fn attribute_order_whitespace_and_redundant_forms_are_ignored() {
        let a =
            r#"{"type":"record","name":"E","namespace":"n","fields":[{"name":"id","type":"int"}]}"#;
        let b = r#"{ "fields": [ {"type": {"type": "int"}, "order": "ascending", "name": "id"} ],
                   "namespace": "n", "name": "E", "type": "record" }"#;
        assert!(same(a, b));
        assert!(same(r#""int""#, r#"{"type":{"type":"int"}}"#));
        let inner = r#"{"type":"record","name":"O","namespace":"n","fields":[{"name":"i","type":{"type":"record","name":"I","namespace":"n","fields":[]}}]}"#;
        let plain = r#"{"type":"record","name":"O","namespace":"n","fields":[{"name":"i","type":{"type":"record","name":"I","fields":[]}}]}"#;
        assert!(same(inner, plain));
    }

    #[test]
    fn text_is_what_avros_printer_writes() {
        let print = |t: &str| identity_string(t).expect("json");
        // Reserved attributes a primitive does not use are dropped; others are properties.
        assert_eq!(
            print(r#"{"type":"int","name":"foo","doc":"d"}"#),
            r#""int""#
        );
        assert_eq!(
            print(r#"{"type":"int","name":"n","connect.name":"x"}"#),
            r#"{"type":"int","connect.name":"x"}"#
        );
        // A dotted name is split; the namespace follows the name, then doc, fields,
        // properties, aliases; references in the same namespace lose it.
        let written = r#"{"aliases":["Old"],"x":1,"fields":[{"type":"com.acme.Id","name":"a",
            "x":2,"aliases":["b"]}],"doc":"d","name":"com.acme.Order","type":"record"}"#;
        assert_eq!(
            print(written),
            r#"{"type":"record","name":"Order","namespace":"com.acme","doc":"d","fields":[{"name":"a","type":"Id","aliases":["b"],"x":2}],"x":1,"aliases":["Old"]}"#
        );
        // A nested type leaving the namespace says so, even for the null namespace.
        let nested = r#"{"type":"record","name":"O","namespace":"n","fields":[{"name":"i","type":{"type":"fixed","name":"F","namespace":"","size":2}}]}"#;
        assert_eq!(
            print(nested),
            r#"{"type":"record","name":"O","namespace":"n","fields":[{"name":"i","type":{"type":"fixed","name":"F","namespace":"","size":2}}]}"#
        );
        assert_eq!(
            print(r#"{"type":"array","items":"int","name":"ignored"}"#),
            r#"{"type":"array","items":"int"}"#
        );
    }

    #[test]
    fn what_avro_prints_still_tells_schemas_apart() {
        let base = r#"{"type":"record","name":"E","fields":[{"name":"a","type":"int"},{"name":"b","type":"int"}]}"#;
        let swapped = r#"{"type":"record","name":"E","fields":[{"name":"b","type":"int"},{"name":"a","type":"int"}]}"#;
        assert!(!same(base, swapped), "field order");
        let doc = r#"{"type":"record","name":"E","doc":"d","fields":[{"name":"a","type":"int"},{"name":"b","type":"int"}]}"#;
        assert!(!same(base, doc), "docs");
        assert!(!same(
            r#"{"type":"int","x":1,"y":2}"#,
            r#"{"type":"int","y":2,"x":1}"#
        ));
        assert!(!same(r#""int""#, r#"{"type":"int","logicalType":"date"}"#));
        let other_ns = r#"{"type":"record","name":"O","namespace":"n","fields":[{"name":"i","type":{"type":"record","name":"I","namespace":"m","fields":[]}}]}"#;
        let plain = r#"{"type":"record","name":"O","namespace":"n","fields":[{"name":"i","type":{"type":"record","name":"I","fields":[]}}]}"#;
        assert!(!same(other_ns, plain));
        // A default is data: an object in it is never read as a schema.
        let d1 = r#"{"type":"record","name":"E","fields":[{"name":"m","type":{"type":"map","values":"int"},"default":{"type":"int"}}]}"#;
        let d2 = r#"{"type":"record","name":"E","fields":[{"name":"m","type":{"type":"map","values":"int"},"default":{}}]}"#;
        assert!(!same(d1, d2));
    }
}

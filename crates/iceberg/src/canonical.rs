//! The normalized text of a schema, for identity and `normalize=true` lookups.

use crate::types::Type;
use crate::{Field, IcebergSchema};
use serde_json::{Map, Value, json};

pub fn normalized(schema: &IcebergSchema) -> String {
    let mut object = Map::new();
    object.insert("type".into(), json!("struct"));
    let mut ids = schema.identifier_field_ids.clone();
    ids.sort_unstable();
    ids.dedup();
    if !ids.is_empty() {
        object.insert("identifier-field-ids".into(), json!(ids));
    }
    object.insert("fields".into(), fields(&schema.fields));
    Value::Object(object).to_string()
}

fn fields(fields: &[Field]) -> Value {
    Value::Array(
        fields
            .iter()
            .map(|f| {
                let mut o = Map::new();
                o.insert("id".into(), json!(f.id));
                o.insert("name".into(), json!(f.name));
                o.insert("required".into(), json!(f.required));
                o.insert("type".into(), ty(&f.ty));
                if let Some(doc) = &f.doc {
                    o.insert("doc".into(), json!(doc));
                }
                if let Some(v) = &f.initial_default {
                    o.insert("initial-default".into(), v.clone());
                }
                if let Some(v) = &f.write_default {
                    o.insert("write-default".into(), v.clone());
                }
                Value::Object(o)
            })
            .collect(),
    )
}

/// A type's JSON form, as text.
pub fn type_json(t: &Type) -> String {
    ty(t).to_string()
}

fn ty(t: &Type) -> Value {
    match t {
        Type::Primitive(p) => json!(p.to_string()),
        Type::Struct(f) => json!({"type": "struct", "fields": fields(f)}),
        Type::List {
            element_id,
            element_required,
            element,
        } => json!({
            "type": "list", "element-id": element_id, "element": ty(element),
            "element-required": element_required,
        }),
        Type::Map {
            key_id,
            key,
            value_id,
            value_required,
            value,
        } => json!({
            "type": "map", "key-id": key_id, "key": ty(key), "value-id": value_id,
            "value": ty(value), "value-required": value_required,
        }),
    }
}

//! Response bodies: Confluent's shapes with "non-empty" field inclusion (null, empty lists and
//! empty maps are left out).

use covenant_registry::{ConfigView, Mode, Schema, Version};
use covenant_store::ConfigRecord;
use covenant_store::context::public_id;
use serde_json::{Map, Value, json};

fn put_non_empty(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    match value {
        None | Some(Value::Null) => {}
        Some(Value::Array(a)) if a.is_empty() => {}
        Some(Value::Object(o)) if o.is_empty() => {}
        Some(v) => {
            map.insert(key.to_string(), v);
        }
    }
}

/// The fields every schema-carrying response shares.
pub fn schema_fields(record: &Schema, text: String) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("guid".into(), json!(record.guid()));
    m.insert("schemaType".into(), json!(record.schema_type));
    put_non_empty(
        &mut m,
        "references",
        Some(json!(
            record
                .references
                .iter()
                .map(|r| json!({
                    "name": r.name, "subject": r.subject, "version": r.version
                }))
                .collect::<Vec<_>>()
        )),
    );
    put_non_empty(&mut m, "metadata", record.metadata.clone());
    put_non_empty(&mut m, "ruleSet", record.rule_set.clone());
    m.insert("schema".into(), Value::String(text));
    m
}

/// `{subject, version, id, schemaType, references?, metadata?, ruleSet?, schema, ts, deleted?}`.
pub fn version_view(v: &Version, text: String) -> Value {
    let mut m = Map::new();
    m.insert("subject".into(), json!(v.subject));
    m.insert("version".into(), json!(v.version));
    m.insert("id".into(), json!(public_id(v.schema.id)));
    m.extend(schema_fields(&v.schema, text));
    m.insert("ts".into(), json!(v.created_at));
    if v.deleted {
        m.insert("deleted".into(), json!(true));
    }
    Value::Object(m)
}

/// `GET /config` shape: `compatibilityLevel` plus the other stored settings.
pub fn config_view(c: &ConfigView) -> Value {
    let mut m = Map::new();
    m.insert("compatibilityLevel".into(), json!(c.level.as_str()));
    for (k, v) in &c.extra {
        put_non_empty(&mut m, k, Some(v.clone()));
    }
    Value::Object(m)
}

/// `PUT /config` shape: request-style `compatibility` key.
pub fn config_update_view(c: &ConfigRecord) -> Value {
    let mut m = Map::new();
    put_non_empty(
        &mut m,
        "compatibility",
        c.compatibility.clone().map(Value::String),
    );
    for (k, v) in &c.extra {
        put_non_empty(&mut m, k, Some(v.clone()));
    }
    Value::Object(m)
}

pub fn mode_view(m: Mode) -> Value {
    json!({"mode": m.as_str()})
}

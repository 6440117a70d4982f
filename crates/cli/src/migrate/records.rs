//! Confluent's JSON shapes (a subject version, a config, a `_schemas` record value) as the parts
//! of a [`Dump`]; registry reads and topic dumps both go through these.

use crate::transfer::{self, Dump, DumpConfig, DumpSchema};
use anyhow::{Context, Result, bail};
use covenant_store::SchemaRef;
use serde_json::Value;
use std::collections::BTreeMap;

pub fn empty_dump() -> Dump {
    Dump {
        format: transfer::FORMAT.to_string(),
        format_version: transfer::FORMAT_VERSION,
        exported_at: None,
        schemas: Vec::new(),
        subjects: Vec::new(),
        configs: Vec::new(),
        modes: Vec::new(),
        audit: Vec::new(),
        governance: Default::default(),
        samples: Vec::new(),
        live_marks: Vec::new(),
        profiles: Vec::new(),
        keks: Vec::new(),
        deks: Vec::new(),
    }
}

/// Adds one id's schema in the context of `subject`; the same id with other content in one
/// context is a source that contradicts itself, and stops the migration before anything is
/// written.
pub fn add_schema(
    schemas: &mut BTreeMap<(String, i64), (String, DumpSchema)>,
    subject: &str,
    mut schema: DumpSchema,
) -> Result<()> {
    schema.context = covenant_store::context::context_of(subject).to_string();
    let key = (schema.context.clone(), schema.id);
    match schemas.get(&key) {
        Some((first, held)) if held.content_key != schema.content_key => bail!(
            "schema id {} carries different schemas in subjects '{first}' and '{subject}'",
            schema.id
        ),
        Some(_) => Ok(()),
        None => {
            schemas.insert(key, (subject.to_string(), schema));
            Ok(())
        }
    }
}

/// A schema as Confluent's version and `_schemas` records carry it (`schemaType` absent means
/// Avro), keyed as the registry keys it.
pub fn schema_from(body: &Value) -> Result<DumpSchema> {
    let id = body
        .get("id")
        .and_then(Value::as_i64)
        .context("no numeric 'id'")?;
    let schema = body
        .get("schema")
        .and_then(Value::as_str)
        .context("no 'schema' text")?
        .to_string();
    let schema_type = body
        .get("schemaType")
        .and_then(Value::as_str)
        .unwrap_or("AVRO")
        .to_string();
    let references: Vec<SchemaRef> = match body.get("references") {
        None | Some(Value::Null) => Vec::new(),
        Some(r) => serde_json::from_value(r.clone()).context("malformed 'references'")?,
    };
    let present = |key: &str| body.get(key).filter(|v| !v.is_null()).cloned();
    let (metadata, rule_set) = (present("metadata"), present("ruleSet"));
    let content_key =
        covenant_registry::content_key(&schema_type, &schema, &references, &metadata, &rule_set);
    Ok(DumpSchema {
        id,
        context: covenant_store::context::DEFAULT_CONTEXT.to_string(),
        schema_type,
        schema,
        references,
        metadata,
        rule_set,
        content_key,
    })
}

/// A config as `GET /config` and `_schemas` CONFIG records show it.
pub fn config_from(subject: Option<&str>, body: &Value) -> DumpConfig {
    const NOT_SETTINGS: &[&str] = &[
        "compatibilityLevel",
        "compatibility",
        "subject",
        "offset",
        "ts",
    ];
    let compatibility = ["compatibilityLevel", "compatibility"]
        .iter()
        .find_map(|k| body.get(*k).and_then(Value::as_str))
        .map(str::to_string);
    let extra = body
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, v)| !NOT_SETTINGS.contains(&k.as_str()) && !v.is_null())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    DumpConfig {
        subject: subject.map(str::to_string),
        compatibility,
        extra,
    }
}

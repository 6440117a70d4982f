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
    }
}

/// Adds one id's schema; the same id with other content (as Confluent contexts allow) cannot be
/// kept in one id space, so it stops the migration before anything is written.
pub fn add_schema(
    schemas: &mut BTreeMap<i64, (String, DumpSchema)>,
    subject: &str,
    schema: DumpSchema,
) -> Result<()> {
    match schemas.get(&schema.id) {
        Some((first, held)) if held.content_key != schema.content_key => bail!(
            "schema id {} carries different schemas in subjects '{first}' and '{subject}' \
             (ids numbered per context cannot share one id space)",
            schema.id
        ),
        Some(_) => Ok(()),
        None => {
            schemas.insert(schema.id, (subject.to_string(), schema));
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

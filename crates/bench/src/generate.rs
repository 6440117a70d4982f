//! Deterministic large schema histories, written as files so that every tool (in process or as
//! a whole process) reads exactly the same inputs.
//!
//! Each history grows by additions only (fields with defaults, optional properties, new field
//! numbers), the way a real subject evolves under BACKWARD or FULL compatibility, so the checks
//! walk every field of every version instead of stopping at a first difference.

use anyhow::{Context, Result};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// How big the generated histories are.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    pub avro_fields: usize,
    pub avro_versions: usize,
    pub json_properties: usize,
    pub json_versions: usize,
    pub proto_messages: usize,
    pub proto_fields: usize,
    pub proto_versions: usize,
}

impl Sizes {
    pub const FULL: Sizes = Sizes {
        avro_fields: 300,
        avro_versions: 1000,
        json_properties: 200,
        json_versions: 200,
        proto_messages: 100,
        proto_fields: 50,
        proto_versions: 100,
    };
    pub const SMOKE: Sizes = Sizes {
        avro_fields: 30,
        avro_versions: 20,
        json_properties: 20,
        json_versions: 10,
        proto_messages: 5,
        proto_fields: 8,
        proto_versions: 4,
    };
}

/// Where one generated history lives: `history` holds versions 1..n-1 in file-name order
/// (oldest first), `newest` version n. `versions` lists every file, oldest first.
#[derive(Debug, Clone)]
pub struct History {
    pub newest: PathBuf,
    pub history_dir: PathBuf,
    pub versions: Vec<PathBuf>,
}

#[derive(Debug, Clone)]
pub struct Generated {
    pub avro: History,
    pub json: History,
    /// One folder per version (`v001/bench.proto`), since `buf` compares whole modules.
    pub proto: History,
    pub sizes: Sizes,
}

/// How many members version `v` (1-based) of `versions` has, growing from `start` to `max`.
fn grown(v: usize, versions: usize, start: usize, max: usize) -> usize {
    if versions <= 1 {
        return max;
    }
    start + (max - start) * (v - 1) / (versions - 1)
}

fn avro_field(i: usize) -> Value {
    let name = format!("field_{i}");
    match i % 7 {
        0 => json!({"name": name, "type": "string", "default": ""}),
        1 => json!({"name": name, "type": "long", "default": 0}),
        2 => json!({"name": name, "type": ["null", "string"], "default": null}),
        3 => json!({"name": name, "type": "double", "default": 0.0, "doc": "a measurement"}),
        4 => json!({"name": name, "type": {"type": "enum", "name": format!("Status{i}"),
            "symbols": ["UNKNOWN", "OPEN", "CLOSED"], "default": "UNKNOWN"}, "default": "UNKNOWN"}),
        5 => json!({"name": name, "type": {"type": "array", "items": "string"}, "default": []}),
        _ => {
            json!({"name": name, "type": {"type": "record", "name": format!("Line{i}"), "fields": [
            {"name": "sku", "type": "string", "default": ""},
            {"name": "quantity", "type": "int", "default": 0},
            {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}, "default": ""}
        ]}, "default": {"sku": "", "quantity": 0, "price": ""}})
        }
    }
}

/// Version `v` of the Avro subject: a record growing to `sizes.avro_fields` fields.
pub fn avro_version(sizes: &Sizes, v: usize) -> String {
    let n = grown(v, sizes.avro_versions, 1, sizes.avro_fields);
    let fields: Vec<Value> = (0..n).map(avro_field).collect();
    json!({"type": "record", "name": "Order", "namespace": "com.example.bench", "fields": fields})
        .to_string()
}

fn json_property(i: usize) -> Value {
    match i % 6 {
        0 => json!({"type": "string", "maxLength": 64}),
        1 => json!({"type": "integer", "minimum": 0}),
        2 => json!({"type": "number"}),
        3 => json!({"type": "array", "items": {"type": "string"}}),
        4 => json!({"type": "string", "enum": ["UNKNOWN", "OPEN", "CLOSED"]}),
        _ => json!({"type": "object", "properties": {
            "sku": {"type": "string"}, "quantity": {"type": "integer"}
        }, "additionalProperties": false}),
    }
}

/// Version `v` of the JSON Schema subject: a closed object growing to `sizes.json_properties`
/// optional properties (adding an optional property to a closed model is backward compatible).
pub fn json_version(sizes: &Sizes, v: usize) -> String {
    let n = grown(v, sizes.json_versions, 1, sizes.json_properties);
    let mut properties = serde_json::Map::new();
    for i in 0..n {
        properties.insert(format!("prop_{i}"), json_property(i));
    }
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Order",
        "type": "object",
        "properties": properties,
        "required": ["prop_0"],
        "additionalProperties": false
    })
    .to_string()
}

/// Version `v` of the Protobuf file: `sizes.proto_messages` messages, each growing to
/// `sizes.proto_fields` fields by adding new field numbers.
pub fn proto_version(sizes: &Sizes, v: usize) -> String {
    let start = sizes.proto_fields.clamp(1, 5);
    let n = grown(v, sizes.proto_versions, start, sizes.proto_fields);
    let m = sizes.proto_messages;
    let mut out = String::from(
        "syntax = \"proto3\";\n\npackage bench.v1;\n\nenum Status {\n  STATUS_UNSPECIFIED = 0;\n  STATUS_OPEN = 1;\n  STATUS_CLOSED = 2;\n}\n",
    );
    for i in 0..m {
        out.push_str(&format!("\nmessage Message{i} {{\n"));
        for j in 0..n {
            let number = j + 1;
            let line = match j % 8 {
                0 => format!("  string name_{j} = {number};"),
                1 => format!("  int64 count_{j} = {number};"),
                2 => format!("  double amount_{j} = {number};"),
                3 => format!("  bool flag_{j} = {number};"),
                4 => format!("  repeated string tags_{j} = {number};"),
                5 => format!("  Status status_{j} = {number};"),
                // A tree of references (each message points at its parent, the root at itself):
                // recursive, and about log2(m) deep, within the default depth limit.
                6 => format!("  Message{} child_{j} = {number};", i / 2),
                _ => format!("  map<string, int32> counters_{j} = {number};"),
            };
            out.push_str(&line);
            out.push('\n');
        }
        out.push_str("}\n");
    }
    out
}

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

fn flat_history(
    dir: &Path,
    extension: &str,
    versions: usize,
    text: impl Fn(usize) -> String,
) -> Result<History> {
    let history_dir = dir.join("history");
    let mut files = Vec::new();
    for v in 1..versions {
        let path = history_dir.join(format!("v{v:05}.{extension}"));
        write(&path, &text(v))?;
        files.push(path);
    }
    let newest = dir.join(format!("new.{extension}"));
    write(&newest, &text(versions))?;
    files.push(newest.clone());
    Ok(History {
        newest,
        history_dir,
        versions: files,
    })
}

/// Writes the three histories under `root`.
pub fn generate(root: &Path, sizes: Sizes) -> Result<Generated> {
    let avro = flat_history(&root.join("avro"), "avsc", sizes.avro_versions, |v| {
        avro_version(&sizes, v)
    })?;
    let json = flat_history(&root.join("json"), "json", sizes.json_versions, |v| {
        json_version(&sizes, v)
    })?;
    let proto_dir = root.join("proto");
    let mut versions = Vec::new();
    for v in 1..=sizes.proto_versions {
        let path = proto_dir.join(format!("v{v:03}")).join("bench.proto");
        write(&path, &proto_version(&sizes, v))?;
        versions.push(path);
    }
    let newest = versions
        .last()
        .cloned()
        .context("at least one Protobuf version")?;
    let proto = History {
        newest,
        history_dir: proto_dir,
        versions,
    };
    Ok(Generated {
        avro,
        json,
        proto,
        sizes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histories_grow_to_the_requested_size() {
        let s = Sizes::FULL;
        let first: Value = serde_json::from_str(&avro_version(&s, 1)).expect("json");
        let last: Value = serde_json::from_str(&avro_version(&s, s.avro_versions)).expect("json");
        assert_eq!(first["fields"].as_array().map(Vec::len), Some(1));
        assert_eq!(last["fields"].as_array().map(Vec::len), Some(300));
        let last: Value = serde_json::from_str(&json_version(&s, s.json_versions)).expect("json");
        assert_eq!(last["properties"].as_object().map(|o| o.len()), Some(200));
        let proto = proto_version(&s, s.proto_versions);
        assert_eq!(proto.matches("\nmessage ").count(), 100);
        assert_eq!(proto.matches("= 50;").count(), 100);
    }

    #[test]
    fn generation_is_deterministic_and_parses() {
        let a = tempfile::tempdir().expect("tempdir");
        let b = tempfile::tempdir().expect("tempdir");
        let ga = generate(a.path(), Sizes::SMOKE).expect("generate");
        let gb = generate(b.path(), Sizes::SMOKE).expect("generate");
        assert_eq!(ga.avro.versions.len(), Sizes::SMOKE.avro_versions);
        for (x, y) in ga.avro.versions.iter().zip(&gb.avro.versions) {
            assert_eq!(
                std::fs::read(x).expect("read"),
                std::fs::read(y).expect("read")
            );
        }
        for path in &ga.avro.versions {
            let text = std::fs::read_to_string(path).expect("read");
            covenant_schema::ParsedSchema::parse(covenant_schema::SchemaType::Avro, &text, &[])
                .expect("our Avro parser accepts the generated schema");
            apache_avro::Schema::parse_str(&text).expect("apache-avro accepts it too");
        }
    }
}

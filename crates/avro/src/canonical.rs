//! Identity: Parsing Canonical Form and its fingerprints, and the normalized and resolved
//! JSON forms used for registry lookups.

use crate::model::{Arena, Kind, Logical, Node, NodeId};
use serde_json::{Map, Value};
use std::collections::HashSet;

/// Parsing Canonical Form (Avro specification, "Transforming into Parsing Canonical Form").
/// Named types from references are inlined at first use, as they would be on the wire, so
/// the fingerprint identifies the complete writer schema.
pub fn parsing_canonical_form(arena: &Arena) -> String {
    let mut out = String::with_capacity(64 * arena.nodes.len());
    let mut seen = vec![false; arena.nodes.len()];
    pcf(arena, arena.root, &mut seen, &mut out);
    out
}

/// Appends `s` as a JSON string. Names and symbols are validated to plain ASCII letters,
/// digits, `_` and `.`, which need no escaping; anything else goes through the JSON encoder.
fn plain(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
}

fn push_quoted(out: &mut String, s: &str) {
    if plain(s) {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&Value::String(s.to_string()).to_string());
    }
}

fn push_full_name(out: &mut String, name: &crate::model::Name) {
    match &name.namespace {
        Some(ns) if !ns.is_empty() && plain(ns) && plain(&name.name) => {
            out.push('"');
            out.push_str(ns);
            out.push('.');
            out.push_str(&name.name);
            out.push('"');
        }
        _ => push_quoted(out, &name.full()),
    }
}

fn pcf(arena: &Arena, id: NodeId, seen: &mut [bool], out: &mut String) {
    let kind = arena.kind(id);
    if let Some(named) = kind.named() {
        if std::mem::replace(&mut seen[id], true) {
            push_full_name(out, &named.name);
            return;
        }
        out.push_str("{\"name\":");
        push_full_name(out, &named.name);
        out.push_str(",\"type\":\"");
        out.push_str(kind.type_name());
        out.push('"');
        match kind {
            Kind::Record(r) => {
                out.push_str(",\"fields\":[");
                for (i, f) in r.fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str("{\"name\":");
                    push_quoted(out, &f.name);
                    out.push_str(",\"type\":");
                    pcf(arena, f.ty, seen, out);
                    out.push('}');
                }
                out.push(']');
            }
            Kind::Enum(e) => {
                out.push_str(",\"symbols\":[");
                for (i, symbol) in e.symbols.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    push_quoted(out, symbol);
                }
                out.push(']');
            }
            Kind::Fixed(f) => {
                out.push_str(",\"size\":");
                out.push_str(&f.size.to_string());
            }
            _ => {}
        }
        out.push('}');
        return;
    }
    match kind {
        Kind::Array(items) => {
            out.push_str("{\"type\":\"array\",\"items\":");
            pcf(arena, *items, seen, out);
            out.push('}');
        }
        Kind::Map(values) => {
            out.push_str("{\"type\":\"map\",\"values\":");
            pcf(arena, *values, seen, out);
            out.push('}');
        }
        Kind::Union(branches) => {
            out.push('[');
            for (i, b) in branches.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                pcf(arena, *b, seen, out);
            }
            out.push(']');
        }
        k => {
            out.push('"');
            out.push_str(k.type_name());
            out.push('"');
        }
    }
}

const EMPTY64: u64 = 0xc15d_213a_a4d7_a795;

fn rabin_table() -> [u64; 256] {
    let mut table = [0u64; 256];
    for (i, slot) in table.iter_mut().enumerate() {
        let mut fp = i as u64;
        for _ in 0..8 {
            fp = (fp >> 1) ^ (EMPTY64 & (fp & 1).wrapping_neg());
        }
        *slot = fp;
    }
    table
}

/// CRC-64-AVRO, the specification's 64-bit Rabin fingerprint.
pub fn rabin(bytes: &[u8]) -> u64 {
    let table = rabin_table();
    let mut fp = EMPTY64;
    for b in bytes {
        fp = (fp >> 8) ^ table[((fp ^ u64::from(*b)) & 0xff) as usize];
    }
    fp
}

pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(bytes);
    let mut out = [0u8; 32];
    out.copy_from_slice(&digest);
    out
}

/// A stable JSON form that keeps every attribute: full names (no `namespace` key), fixed key
/// order, extra attributes sorted. With `inline_references` false, named types that came from
/// references stay as full-name references (the registry's identity of this schema alone);
/// with it true, the result is self-contained.
pub fn json_form(arena: &Arena, inline_references: bool) -> Value {
    let mut seen = HashSet::new();
    form(arena, arena.root, inline_references, &mut seen)
}

fn logical_attrs(node: &Node, obj: &mut Map<String, Value>) {
    if let Some(l) = &node.logical {
        obj.insert("logicalType".into(), Value::from(l.name()));
        if let Logical::Decimal { precision, scale } = l {
            obj.insert("precision".into(), Value::from(*precision));
            obj.insert("scale".into(), Value::from(*scale));
        }
    }
}

fn sorted_props(props: &Map<String, Value>, obj: &mut Map<String, Value>) {
    let mut keys: Vec<&String> = props.keys().collect();
    keys.sort();
    for k in keys {
        obj.insert(k.clone(), props[k].clone());
    }
}

fn form(arena: &Arena, id: NodeId, inline: bool, seen: &mut HashSet<NodeId>) -> Value {
    let node = arena.node(id);
    let kind = &node.kind;
    if let Some(named) = kind.named() {
        let full = named.name.full();
        if (named.from_reference && !inline) || !seen.insert(id) {
            return Value::String(full);
        }
        let mut obj = Map::new();
        let ty = match kind {
            Kind::Record(r) if r.is_error => "error",
            k => k.type_name(),
        };
        obj.insert("type".into(), Value::from(ty));
        obj.insert("name".into(), Value::String(full));
        if !named.aliases.is_empty() {
            obj.insert("aliases".into(), Value::from(named.aliases.clone()));
        }
        if let Some(doc) = &named.doc {
            obj.insert("doc".into(), Value::from(doc.clone()));
        }
        match kind {
            Kind::Record(r) => {
                let fields: Vec<Value> = r
                    .fields
                    .iter()
                    .map(|f| {
                        let mut fo = Map::new();
                        fo.insert("name".into(), Value::from(f.name.clone()));
                        fo.insert("type".into(), form(arena, f.ty, inline, seen));
                        if let Some(d) = &f.default {
                            fo.insert("default".into(), d.clone());
                        }
                        if let Some(o) = &f.order {
                            fo.insert("order".into(), Value::from(o.clone()));
                        }
                        if !f.aliases.is_empty() {
                            fo.insert("aliases".into(), Value::from(f.aliases.clone()));
                        }
                        if let Some(doc) = &f.doc {
                            fo.insert("doc".into(), Value::from(doc.clone()));
                        }
                        sorted_props(&f.props, &mut fo);
                        Value::Object(fo)
                    })
                    .collect();
                obj.insert("fields".into(), Value::Array(fields));
            }
            Kind::Enum(e) => {
                obj.insert("symbols".into(), Value::from(e.symbols.clone()));
                if let Some(d) = &e.default {
                    obj.insert("default".into(), Value::from(d.clone()));
                }
            }
            Kind::Fixed(f) => {
                obj.insert("size".into(), Value::from(f.size));
            }
            _ => {}
        }
        logical_attrs(node, &mut obj);
        sorted_props(&node.props, &mut obj);
        return Value::Object(obj);
    }
    let mut obj = Map::new();
    match kind {
        Kind::Union(branches) => {
            return Value::Array(
                branches
                    .iter()
                    .map(|b| form(arena, *b, inline, seen))
                    .collect(),
            );
        }
        Kind::Array(items) => {
            obj.insert("type".into(), Value::from("array"));
            obj.insert("items".into(), form(arena, *items, inline, seen));
        }
        Kind::Map(values) => {
            obj.insert("type".into(), Value::from("map"));
            obj.insert("values".into(), form(arena, *values, inline, seen));
        }
        k => {
            if node.logical.is_none() && node.props.is_empty() {
                return Value::from(k.type_name());
            }
            obj.insert("type".into(), Value::from(k.type_name()));
        }
    }
    logical_attrs(node, &mut obj);
    sorted_props(&node.props, &mut obj);
    Value::Object(obj)
}

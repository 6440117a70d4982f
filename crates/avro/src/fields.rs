//! The Avro schema lowered into the engine's format-neutral field tree, for semantic rules.
//!
//! Paths follow fields by name (`/fields/owner/fields/id`), with `/items` and `/values` for
//! records inside arrays and maps. A nullable union (`["null", T]`) becomes `T` with
//! `nullable` set, so making a field optional reads as a nullability change, not a new type.

use crate::AvroSchema;
use crate::model::{Arena, Field, Kind, Logical, NodeId};
use covenant_engine::budget::Metered;
use covenant_engine::{EnumValue, FieldTree, Node, NodeKind, TreeAllowance};
use serde_json::{Map, Value};

/// How deep nested records are followed; recursive types stop at their first repetition.
const MAX_DEPTH: usize = 64;

/// The records being expanded (recursion stops at one already open) and the nodes left.
struct Walk {
    open: Vec<NodeId>,
    nodes: TreeAllowance,
}

/// The schema as a neutral field tree, its nodes charged to the budget `m` proves installed
/// (a named type used in several places is expanded at each).
pub fn field_tree(m: Metered<'_>, schema: &AvroSchema) -> FieldTree {
    let arena = &schema.arena;
    let mut stack = Walk {
        open: Vec::new(),
        nodes: TreeAllowance::new(m),
    };
    let root = match arena.kind(arena.root) {
        Kind::Record(record) => {
            let full = record.named.name.full();
            let mut node = Node::new(NodeKind::Record, full.clone(), "", format!("record:{full}"));
            node.doc = record.named.doc.clone();
            node.aliases = record.named.aliases.clone();
            absorb_props(&mut node, &arena.node(arena.root).props);
            stack.open.push(arena.root);
            node.children = record
                .fields
                .iter()
                .map(|f| field(arena, f, "", &mut stack))
                .collect();
            node
        }
        _ => {
            let mut node = Node::new(NodeKind::Field, "", "", "");
            describe(arena, arena.root, &mut node, "", &mut stack);
            node
        }
    };
    FieldTree {
        format: "AVRO".into(),
        root,
    }
}

fn field(arena: &Arena, f: &Field, parent: &str, stack: &mut Walk) -> Node {
    let path = format!("{parent}/fields/{}", f.name);
    let mut node = Node::new(NodeKind::Field, f.name.clone(), path.clone(), "");
    node.required = true;
    node.has_default = f.default.is_some();
    node.default = f.default.clone();
    node.doc = f.doc.clone();
    node.aliases = f.aliases.clone();
    absorb_props(&mut node, &f.props);
    describe(arena, f.ty, &mut node, &path, stack);
    node
}

/// Fills type facts of `node` from the type `id`: type name, logical type, nullability, enum
/// symbols and, for records, the nested fields.
fn describe(arena: &Arena, id: NodeId, node: &mut Node, path: &str, stack: &mut Walk) {
    let mut ty = id;
    if let Kind::Union(branches) = arena.kind(id) {
        node.nullable = branches
            .iter()
            .any(|b| matches!(arena.kind(*b), Kind::Null));
        let rest: Vec<NodeId> = branches
            .iter()
            .copied()
            .filter(|b| !matches!(arena.kind(*b), Kind::Null))
            .collect();
        match rest.as_slice() {
            [one] => ty = *one,
            _ => {
                let names: Vec<String> = rest.iter().map(|b| type_name(arena, *b)).collect();
                node.type_name = format!("union<{}>", names.join(","));
                return;
            }
        }
    }
    node.type_name = type_name(arena, ty);
    let type_node = arena.node(ty);
    node.logical_type = type_node.logical.as_ref().map(|l| match l {
        Logical::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
        other => other.name().to_string(),
    });
    absorb_props(node, &type_node.props);
    match &type_node.kind {
        Kind::Enum(e) => {
            node.enum_values = e.symbols.iter().map(|s| EnumValue::new(s, None)).collect();
        }
        Kind::Record(_) => node.children = nested(arena, ty, path, stack),
        Kind::Array(items) => {
            node.children = nested(arena, *items, &format!("{path}/items"), stack)
        }
        Kind::Map(values) => {
            node.children = nested(arena, *values, &format!("{path}/values"), stack)
        }
        _ => {}
    }
}

/// The fields of the record at `id` (unwrapping a nullable union), or nothing.
fn nested(arena: &Arena, id: NodeId, path: &str, stack: &mut Walk) -> Vec<Node> {
    let id = match arena.kind(id) {
        Kind::Union(branches) => {
            let rest: Vec<NodeId> = branches
                .iter()
                .copied()
                .filter(|b| !matches!(arena.kind(*b), Kind::Null))
                .collect();
            match rest.as_slice() {
                [one] => *one,
                _ => return Vec::new(),
            }
        }
        _ => id,
    };
    let Kind::Record(record) = arena.kind(id) else {
        return Vec::new();
    };
    if stack.open.contains(&id) || stack.open.len() >= MAX_DEPTH {
        return Vec::new();
    }
    // A record used in many places is expanded at each, so the tree can be far larger than
    // the schema: the allowance bounds it.
    if !stack.nodes.take(record.fields.len()) {
        return Vec::new();
    }
    stack.open.push(id);
    let children = record
        .fields
        .iter()
        .map(|f| field(arena, f, path, stack))
        .collect();
    stack.open.pop();
    children
}

fn type_name(arena: &Arena, id: NodeId) -> String {
    match arena.kind(id) {
        Kind::Record(r) => format!("record:{}", r.named.name.full()),
        Kind::Enum(e) => format!("enum:{}", e.named.name.full()),
        Kind::Fixed(f) => format!("fixed:{}", f.named.name.full()),
        Kind::Array(items) => format!("array<{}>", type_name(arena, *items)),
        Kind::Map(values) => format!("map<{}>", type_name(arena, *values)),
        Kind::Union(branches) => {
            let names: Vec<String> = branches.iter().map(|b| type_name(arena, *b)).collect();
            format!("union<{}>", names.join(","))
        }
        k => k.type_name().to_string(),
    }
}

/// Custom attributes become annotations; `confluent:tags` become tags.
fn absorb_props(node: &mut Node, props: &Map<String, Value>) {
    for (key, value) in props {
        if key == "confluent:tags" {
            if let Value::Array(tags) = value {
                for tag in tags.iter().filter_map(Value::as_str) {
                    if !node.tags.iter().any(|t| t == tag) {
                        node.tags.push(tag.to_string());
                    }
                }
            }
            continue;
        }
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        node.annotations.entry(key.clone()).or_insert(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use covenant_engine::Format;

    fn tree(text: &str) -> FieldTree {
        match crate::AvroFormat::parse(text, &[]) {
            Ok(schema) => covenant_engine::budget::unlimited(|m| field_tree(m, &schema)),
            Err(e) => panic!("test schema does not parse: {e}"),
        }
    }

    #[test]
    fn fields_types_defaults_tags_and_annotations() {
        let t = tree(
            r#"{"type": "record", "name": "Case", "namespace": "acme", "doc": "One case.",
                "fields": [
                  {"name": "caseId", "type": "string"},
                  {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 18, "scale": 2}},
                  {"name": "closureReason", "type": ["null", "string"], "default": null, "doc": "Why."},
                  {"name": "email", "type": "string", "confluent:tags": ["PII"], "clock": "business"},
                  {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["OPEN", "CLOSED"]}},
                  {"name": "owner", "type": {"type": "record", "name": "Owner", "fields": [{"name": "id", "type": "long"}]}},
                  {"name": "next", "type": ["null", "Case"], "default": null}
                ]}"#,
        );
        assert_eq!(t.format, "AVRO");
        assert_eq!(t.root.type_name, "record:acme.Case");
        assert_eq!(t.root.doc.as_deref(), Some("One case."));
        let at = |p: &str| t.find(p).unwrap_or_else(|| panic!("no node at {p}"));
        assert_eq!(at("/fields/caseId").type_name, "string");
        assert!(!at("/fields/caseId").nullable && at("/fields/caseId").required);
        assert_eq!(at("/fields/amount").type_name, "bytes");
        assert_eq!(
            at("/fields/amount").logical_type.as_deref(),
            Some("decimal(18,2)")
        );
        let reason = at("/fields/closureReason");
        assert!(reason.nullable && reason.has_default);
        assert_eq!(reason.default, Some(Value::Null));
        assert_eq!(reason.type_name, "string");
        let email = at("/fields/email");
        assert_eq!(email.tags, ["PII"]);
        assert_eq!(
            email.annotations.get("clock").map(String::as_str),
            Some("business")
        );
        let status = at("/fields/status");
        assert_eq!(status.type_name, "enum:acme.Status");
        assert_eq!(status.enum_values.len(), 2);
        assert_eq!(at("/fields/owner/fields/id").type_name, "long");
        let next = at("/fields/next");
        assert!(next.nullable);
        assert_eq!(
            next.children.len(),
            0,
            "recursion stops at the repeated record"
        );
    }
}

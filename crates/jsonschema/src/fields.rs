//! The JSON Schema lowered into the engine's format-neutral field tree, for semantic rules.
//!
//! Built from the schema document itself: `properties` become fields at
//! `#/properties/a/properties/b` (`/items` for arrays of objects), local `$ref`s are followed
//! (a repeated one stops the descent), `format` is the logical type, `description` the doc,
//! unknown keywords are annotations and `confluent:tags` are tags. `"type": ["null", T]` and
//! a `oneOf`/`anyOf` with a `{"type": "null"}` branch count as a nullable `T`.

use crate::JsonSchema;
use covenant_engine::budget::Metered;
use covenant_engine::{EnumValue, FieldTree, Node, NodeKind, TreeAllowance};
use serde_json::Value;

/// How deep nested objects are followed.
const MAX_DEPTH: usize = 64;

/// Keywords with a meaning in some JSON Schema dialect; anything else is an annotation.
const KEYWORDS: &[&str] = &[
    "$schema",
    "$id",
    "id",
    "$ref",
    "$defs",
    "definitions",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "$recursiveAnchor",
    "$vocabulary",
    "$comment",
    "type",
    "enum",
    "const",
    "properties",
    "patternProperties",
    "additionalProperties",
    "required",
    "items",
    "prefixItems",
    "additionalItems",
    "contains",
    "minContains",
    "maxContains",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minProperties",
    "maxProperties",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "title",
    "description",
    "default",
    "examples",
    "readOnly",
    "writeOnly",
    "deprecated",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "confluent:tags",
];

/// The `$ref`s being followed (a repeated one stops the descent) and the nodes left.
struct Walk {
    open: Vec<String>,
    nodes: TreeAllowance,
}

/// The schema as a neutral field tree, its nodes charged to the budget `m` proves installed
/// (a `$ref` used in several places is expanded at each).
pub fn field_tree(m: Metered<'_>, schema: &JsonSchema) -> FieldTree {
    let doc = schema.value();
    let mut root = Node::new(NodeKind::Record, "", "#", "");
    let mut refs = Walk {
        open: Vec::new(),
        nodes: TreeAllowance::new(m),
    };
    describe(doc, doc, &mut root, "#", &mut refs, 0);
    if root.type_name != "object" {
        root.kind = NodeKind::Field;
    }
    FieldTree {
        format: "JSON".into(),
        root,
    }
}

/// Follows a local `$ref` (`#/definitions/Money`), returning the target and the ref taken.
fn resolve<'a>(doc: &'a Value, value: &'a Value) -> (&'a Value, Option<&'a str>) {
    match value.get("$ref").and_then(Value::as_str) {
        Some(r) if r.starts_with('#') => {
            let pointer = r.trim_start_matches('#');
            match doc.pointer(pointer) {
                Some(target) => (target, Some(r)),
                None => (value, None),
            }
        }
        _ => (value, None),
    }
}

fn describe(doc: &Value, raw: &Value, node: &mut Node, path: &str, refs: &mut Walk, depth: usize) {
    let (schema, taken) = resolve(doc, raw);
    if let Some(r) = taken {
        if refs.open.iter().any(|seen| seen == r) || depth >= MAX_DEPTH {
            node.type_name = format!("ref:{r}");
            return;
        }
        refs.open.push(r.to_string());
    }
    // Keywords beside a `$ref` (a description, tags) describe this use of it.
    for source in [raw, schema] {
        if node.doc.is_none() {
            node.doc = source
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        if !node.has_default
            && let Some(d) = source.get("default")
        {
            node.has_default = true;
            node.default = Some(d.clone());
        }
        absorb(source, node);
    }
    let (types, nullable) = types_of(doc, schema);
    node.nullable = nullable;
    let effective = nullable_branch(doc, schema).unwrap_or(schema);
    node.logical_type = effective
        .get("format")
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Some(Value::Array(values)) = effective.get("enum") {
        node.enum_values = values
            .iter()
            .filter(|v| !v.is_null())
            .map(|v| {
                EnumValue::new(
                    v.as_str().map_or_else(|| v.to_string(), str::to_string),
                    None,
                )
            })
            .collect();
    }
    node.type_name = if types.is_empty() {
        if effective.get("properties").is_some() {
            "object".to_string()
        } else if !node.enum_values.is_empty() {
            "enum".to_string()
        } else {
            "any".to_string()
        }
    } else {
        types.join("|")
    };
    if node.type_name.split('|').any(|t| t == "object") {
        node.additional_properties = match effective.get("additionalProperties") {
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => Some(true),
            None => None,
        };
        node.children = properties(doc, effective, path, refs, depth);
    } else if node.type_name.split('|').any(|t| t == "array")
        && let Some(items) = effective.get("items").filter(|i| i.is_object())
    {
        // The items' `$ref` is followed like a property's: a repeated one (`"items":
        // {"$ref": "#"}`, a tree) stops the descent.
        let (items, item_ref) = resolve(doc, items);
        let repeated = item_ref.is_some_and(|r| refs.open.iter().any(|seen| seen == r));
        if !repeated && depth < MAX_DEPTH {
            refs.open.extend(item_ref.map(str::to_string));
            node.children = properties(doc, items, &format!("{path}/items"), refs, depth + 1);
            if item_ref.is_some() {
                refs.open.pop();
            }
        }
    }
    if taken.is_some() {
        refs.open.pop();
    }
}

fn properties(doc: &Value, schema: &Value, path: &str, refs: &mut Walk, depth: usize) -> Vec<Node> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(Value::Object(props)) = schema.get("properties") else {
        return Vec::new();
    };
    // Shared definitions are expanded at every use, so the tree can be far larger than the
    // text (each level referring twice to the one below doubles it): the allowance bounds it.
    if !refs.nodes.take(props.len()) {
        return Vec::new();
    }
    props
        .iter()
        .map(|(name, sub)| {
            let child_path = format!("{path}/properties/{name}");
            let mut node = Node::new(NodeKind::Field, name.clone(), child_path.clone(), "");
            node.required = required.contains(&name.as_str());
            describe(doc, sub, &mut node, &child_path, refs, depth + 1);
            node
        })
        .collect()
}

/// The non-null types a schema allows, and whether it allows null.
fn types_of(doc: &Value, schema: &Value) -> (Vec<String>, bool) {
    types_within(doc, schema, MAX_DEPTH)
}

/// `types_of` through at most `hops` nullable wrappers (`$ref`s can make them a cycle).
fn types_within(doc: &Value, schema: &Value, hops: usize) -> (Vec<String>, bool) {
    let listed: Vec<String> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    };
    if !listed.is_empty() {
        let nullable = listed.iter().any(|t| t == "null");
        return (
            listed.into_iter().filter(|t| t != "null").collect(),
            nullable,
        );
    }
    match nullable_branch(doc, schema) {
        Some(branch) if hops > 0 => (types_within(doc, branch, hops - 1).0, true),
        Some(_) => (Vec::new(), true),
        None => (Vec::new(), false),
    }
}

/// For `oneOf`/`anyOf` of `{"type": "null"}` and one other schema: that other schema.
fn nullable_branch<'a>(doc: &'a Value, schema: &'a Value) -> Option<&'a Value> {
    for key in ["oneOf", "anyOf"] {
        if let Some(Value::Array(branches)) = schema.get(key) {
            let is_null = |b: &Value| b.get("type").and_then(Value::as_str) == Some("null");
            let rest: Vec<&Value> = branches.iter().filter(|b| !is_null(b)).collect();
            if rest.len() == 1 && rest.len() < branches.len() {
                return Some(resolve(doc, rest[0]).0);
            }
        }
    }
    None
}

/// Unknown keywords become annotations, `confluent:tags` tags.
fn absorb(schema: &Value, node: &mut Node) {
    let Some(object) = schema.as_object() else {
        return;
    };
    for (key, value) in object {
        if key == "confluent:tags" {
            for tag in value
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !node.tags.iter().any(|t| t == tag) {
                    node.tags.push(tag.to_string());
                }
            }
        } else if !KEYWORDS.contains(&key.as_str()) && !value.is_object() && !value.is_array() {
            let text = value
                .as_str()
                .map_or_else(|| value.to_string(), str::to_string);
            node.annotations.entry(key.clone()).or_insert(text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use covenant_engine::Format;

    fn tree(text: &str) -> FieldTree {
        match crate::JsonSchemaFormat::parse(text, &[]) {
            Ok(schema) => covenant_engine::budget::unlimited(|m| field_tree(m, &schema)),
            Err(e) => panic!("test schema does not parse: {e}"),
        }
    }

    #[test]
    fn properties_refs_nullability_and_annotations() {
        let t = tree(
            r##"{"$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object", "additionalProperties": false,
                "required": ["caseId"],
                "properties": {
                  "caseId": {"type": "string", "description": "Case id."},
                  "reason": {"type": ["null", "string"], "default": null},
                  "email": {"type": "string", "format": "email", "confluent:tags": ["PII"], "unit": "none"},
                  "status": {"enum": ["OPEN", "CLOSED"]},
                  "owner": {"$ref": "#/$defs/Owner"},
                  "parent": {"oneOf": [{"type": "null"}, {"$ref": "#/$defs/Node"}]}
                },
                "$defs": {
                  "Owner": {"type": "object", "properties": {"id": {"type": "integer"}}},
                  "Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}
                }}"##,
        );
        assert_eq!(t.format, "JSON");
        assert_eq!(t.root.path, "#");
        assert_eq!(t.root.additional_properties, Some(false));
        let at = |p: &str| t.find(p).unwrap_or_else(|| panic!("no node at {p}"));
        let id = at("#/properties/caseId");
        assert!(id.required && !id.nullable);
        assert_eq!(id.doc.as_deref(), Some("Case id."));
        let reason = at("#/properties/reason");
        assert!(reason.nullable && !reason.required && reason.has_default);
        assert_eq!(reason.type_name, "string");
        let email = at("#/properties/email");
        assert_eq!(email.logical_type.as_deref(), Some("email"));
        assert_eq!(email.tags, ["PII"]);
        assert_eq!(
            email.annotations.get("unit").map(String::as_str),
            Some("none")
        );
        assert_eq!(at("#/properties/status").enum_values.len(), 2);
        let owner = at("#/properties/owner");
        assert_eq!(owner.type_name, "object");
        assert_eq!(owner.additional_properties, None);
        assert_eq!(at("#/properties/owner/properties/id").type_name, "integer");
        let parent = at("#/properties/parent");
        assert!(parent.nullable);
        assert_eq!(parent.type_name, "object");
        assert_eq!(
            at("#/properties/parent/properties/next").type_name,
            "object"
        );
        assert_eq!(
            at("#/properties/parent/properties/next/properties/next").type_name,
            "ref:#/$defs/Node",
            "a repeated $ref stops the descent"
        );
    }
}

//! The schema lowered into the engine's format-neutral field tree, for the semantic rules,
//! governance and profiles.
//!
//! The root is the table's struct (kind `Record`); each field is a `Field` node at the path
//! the Iceberg findings use, carrying its id as the node's `number`, so the semantic rules
//! that follow identity by number (a rename under the same number, a name moved to another
//! number) treat Iceberg ids as they treat Protobuf field numbers. A list's element and a
//! map's key and value are `Field` nodes named `element`, `key` and `value`. Types keep
//! Iceberg's spelling (`long`, `decimal(38, 18)`, `timestamptz`), with containers in the
//! tree's vocabulary (`array<...>`, `map<...>`, `struct`).

use crate::types::Type;
use crate::{Field, IcebergSchema};
use covenant_engine::{FieldTree, Node, NodeKind, TreeAllowance};

/// The schema as a neutral field tree.
pub fn field_tree(schema: &IcebergSchema) -> FieldTree {
    let mut root = Node::new(NodeKind::Record, "", "", "struct");
    let mut allowance = TreeAllowance::default();
    root.children = fields(&schema.fields, "", &mut allowance);
    FieldTree {
        format: "ICEBERG".into(),
        root,
    }
}

fn fields(list: &[Field], path: &str, allowance: &mut TreeAllowance) -> Vec<Node> {
    if !allowance.take(list.len()) {
        return Vec::new();
    }
    list.iter()
        .map(|f| {
            let at = format!("{path}/fields/{}", f.name);
            let mut node = typed(&f.name, &at, f.id, f.required, &f.ty, allowance);
            node.doc = f.doc.clone();
            node.default = f
                .write_default
                .clone()
                .or_else(|| f.initial_default.clone());
            node.has_default = node.default.is_some();
            node
        })
        .collect()
}

/// A node for a value of type `ty` with its nested fields as children.
fn typed(
    name: &str,
    path: &str,
    id: i32,
    required: bool,
    ty: &Type,
    allowance: &mut TreeAllowance,
) -> Node {
    let mut node = Node::new(NodeKind::Field, name, path, type_name(ty));
    node.number = Some(i64::from(id));
    node.required = required;
    node.nullable = !required;
    node.children = match ty {
        Type::Primitive(_) => Vec::new(),
        Type::Struct(list) => fields(list, path, allowance),
        Type::List {
            element_id,
            element_required,
            element,
        } => {
            let at = format!("{path}/element");
            vec![typed(
                "element",
                &at,
                *element_id,
                *element_required,
                element,
                allowance,
            )]
        }
        Type::Map {
            key_id,
            key,
            value_id,
            value_required,
            value,
        } => vec![
            typed("key", &format!("{path}/key"), *key_id, true, key, allowance),
            typed(
                "value",
                &format!("{path}/value"),
                *value_id,
                *value_required,
                value,
                allowance,
            ),
        ],
    };
    node
}

fn type_name(ty: &Type) -> String {
    match ty {
        Type::Primitive(p) => p.to_string(),
        Type::Struct(_) => "struct".into(),
        Type::List { element, .. } => format!("array<{}>", type_name(element)),
        Type::Map { key, value, .. } => format!("map<{}, {}>", type_name(key), type_name(value)),
    }
}

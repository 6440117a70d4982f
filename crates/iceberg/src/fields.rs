//! The schema lowered into the engine's format-neutral field tree, for the semantic rules,
//! governance and profiles.
//!
//! The root is the table's struct (kind `Record`); each field is a `Field` node at the path
//! the Iceberg findings use, carrying its id as the node's `number`, so the semantic rules
//! that follow identity by number (a rename under the same number, a name moved to another
//! number) treat Iceberg ids as they treat Protobuf field numbers. A list of structs (or a map
//! to structs) carries the struct's fields as its children, like an Avro array of records;
//! element, key and value ids are judged by the Iceberg rules themselves. Types keep
//! Iceberg's spelling (`long`, `decimal(38, 18)`, `timestamptz`), with containers in the
//! tree's vocabulary (`array<...>`, `map<...>`, `struct`).

use crate::types::Type;
use crate::{Field, IcebergSchema};
use covenant_engine::budget::Metered;
use covenant_engine::{FieldTree, Node, NodeKind, TreeAllowance};

/// Root annotation holding the default partition spec by source id (`identity(2), day(3)`).
pub const PARTITION_SPEC: &str = "iceberg:partition-spec";
/// Root annotation holding the same spec by column name (`identity(exchange), day(valid_from)`).
pub const PARTITION_SPEC_TEXT: &str = "iceberg:partition-spec-text";

/// The schema as a neutral field tree, its nodes charged to the budget `m` proves installed.
pub fn field_tree(m: Metered<'_>, schema: &IcebergSchema) -> FieldTree {
    let mut root = Node::new(NodeKind::Record, "", "", "struct");
    let mut allowance = TreeAllowance::new(m);
    root.children = fields(&schema.fields, "", &mut allowance);
    // The table's partition spec, when the text was table metadata: what it partitions by
    // (source ids, for comparing) and how it reads.
    if let (Some(key), Some(text)) = (
        crate::partition::key(schema),
        crate::partition::describe(schema),
    ) {
        root.annotations.insert(PARTITION_SPEC.into(), key);
        root.annotations.insert(PARTITION_SPEC_TEXT.into(), text);
    }
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
    node.children = nested(path, ty, allowance);
    node
}

/// The struct fields a value of type `ty` holds: a struct's own, and through lists and maps
/// those of the element's or value's struct, as the other formats lower arrays and maps of
/// records (so profiles of the data meet the same names). Their paths keep the `element` or
/// `value` step the Iceberg findings use.
fn nested(path: &str, ty: &Type, allowance: &mut TreeAllowance) -> Vec<Node> {
    match ty {
        Type::Primitive(_) => Vec::new(),
        Type::Struct(list) => fields(list, path, allowance),
        Type::List { element, .. } => nested(&format!("{path}/element"), element, allowance),
        Type::Map { value, .. } => nested(&format!("{path}/value"), value, allowance),
    }
}

fn type_name(ty: &Type) -> String {
    match ty {
        Type::Primitive(p) => p.to_string(),
        Type::Struct(_) => "struct".into(),
        Type::List { element, .. } => format!("array<{}>", type_name(element)),
        Type::Map { key, value, .. } => format!("map<{}, {}>", type_name(key), type_name(value)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use covenant_engine::Format;

    #[test]
    fn ids_are_numbers_and_lists_of_structs_carry_the_struct_fields() {
        let text = r#"{"type":"struct","fields":[
            {"id":1,"name":"sk","required":true,"type":"long","doc":"key"},
            {"id":2,"name":"pts","required":false,"type":{"type":"list","element-id":3,"element-required":true,
              "element":{"type":"struct","fields":[{"id":4,"name":"x","required":true,"type":"double"}]}}}]}"#;
        let schema = crate::IcebergFormat::parse(text, &[]).expect("parses");
        let tree = covenant_engine::budget::unlimited(|m| field_tree(m, &schema));
        assert_eq!(tree.format, "ICEBERG");
        let sk = tree.find("/fields/sk").expect("sk");
        assert_eq!(
            (sk.number, sk.required, sk.nullable),
            (Some(1), true, false)
        );
        assert_eq!(sk.doc.as_deref(), Some("key"));
        let pts = tree.find("/fields/pts").expect("pts");
        assert_eq!(pts.type_name, "array<struct>");
        assert_eq!(pts.children.len(), 1);
        assert_eq!(pts.children[0].name, "x");
        assert_eq!(pts.children[0].path, "/fields/pts/element/fields/x");
        assert_eq!(pts.children[0].number, Some(4));
    }
}

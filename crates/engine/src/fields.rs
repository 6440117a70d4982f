//! A format-neutral view of a schema's fields, for rules about meaning rather than structure.
//!
//! Structural compatibility is each format's business: Avro resolution, JSON Schema content
//! models and Protobuf wire rules differ too much to share. Semantic rules do not: a renamed
//! field, an added enum value, a money field whose type changed or a removed PII tag mean the
//! same thing in every format. Each format crate therefore lowers its own model into this tree
//! (a `field_tree` function of about a hundred lines), and the semantic rules are written once
//! against it without knowing which format they look at.
//!
//! The tree is deliberately flat in vocabulary: a node is a record, a field, an enum or the
//! schema itself, with the facts a semantic rule needs (type, nullability, default, doc,
//! annotations, tags, numbers). Paths use the same readable style as findings, so a semantic
//! finding points at the same place a structural one would.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// One schema lowered into the neutral field view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldTree {
    /// The Confluent `schemaType` name: `AVRO`, `JSON` or `PROTOBUF`.
    pub format: String,
    pub root: Node,
}

/// What a node stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    /// A container of top-level declarations that is not itself a type (a `.proto` file).
    Schema,
    /// A named or anonymous structure: Avro record, Protobuf message, JSON Schema object.
    Record,
    /// A member of a record. A field whose type is a structure carries that structure's fields
    /// as its children, so nested fields keep readable paths (`/fields/a/fields/b`).
    Field,
    /// An enum declared on its own (Protobuf). Avro and JSON Schema enums are carried by the
    /// field that uses them, in [`Node::enum_values`].
    Enum,
}

/// One enum symbol, with its number where the format has one (Protobuf).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnumValue {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<i64>,
}

impl EnumValue {
    pub fn new(name: impl Into<String>, number: Option<i64>) -> EnumValue {
        EnumValue {
            name: name.into(),
            number,
        }
    }
}

/// An inclusive range of reserved numbers (Protobuf `reserved 3, 9 to 11;`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NumberRange {
    pub start: i64,
    pub end: i64,
}

impl NumberRange {
    pub fn contains(&self, number: i64) -> bool {
        self.start <= number && number <= self.end
    }
}

/// A record, field, enum or schema in the neutral view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub name: String,
    /// Readable path, the same one findings use: Avro `/fields/a/fields/b`, JSON Schema
    /// `#/properties/a/properties/b`, Protobuf `/acme.Order/fields/amount`.
    pub path: String,
    pub kind: NodeKind,
    /// The type a reader must decode, in the format's own vocabulary lightly normalized:
    /// scalars as the format names them (`string`, `long`, `int32`, `number`), `decimal` for
    /// decimals, and named types as `record:acme.Money`, `enum:acme.Status`,
    /// `message:acme.Money`; containers as `array<...>` and `map<...>`; Avro unions as
    /// `union<...>` without their `null` branch, which [`Node::nullable`] records instead.
    /// Two nodes of the same format have the same `type_name` exactly when a semantic rule
    /// should treat them as the same type.
    pub type_name: String,
    /// How the value is to be read: an Avro logical type (`decimal`, `timestamp-millis`,
    /// `date`, `uuid`), a JSON Schema `format`, or a well-known Protobuf type
    /// (`google.protobuf.Timestamp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical_type: Option<String>,
    /// Whether `null` (or, in Protobuf, explicit absence) is a legal value.
    #[serde(default)]
    pub nullable: bool,
    /// Whether a writer must always supply the field (JSON Schema `required`, proto2
    /// `required`; every Avro field, since Avro data always carries every field).
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub has_default: bool,
    /// The default as JSON, when `has_default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc: Option<String>,
    /// Custom attributes and options that state meaning: `unit`, `clock`, `meaning`,
    /// `currency`, and any other non-standard key the format allows (Avro extra attributes,
    /// JSON Schema unknown keywords, Protobuf custom options), as strings.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Data-contract tags (Confluent `confluent:tags`, e.g. `PII`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Protobuf field number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<i64>,
    /// Avro aliases: earlier names this field or type answers to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub enum_values: Vec<EnumValue>,
    /// Reserved numbers of a Protobuf message or enum.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reserved_numbers: Vec<NumberRange>,
    /// Reserved names of a Protobuf message or enum.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reserved_names: Vec<String>,
    /// For a JSON Schema object: `Some(b)` when `additionalProperties` is declared as the
    /// boolean `b` (or a schema, which counts as `true`), `None` when left implicit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_properties: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<Node>,
}

impl Node {
    /// A node with only its identity set; format crates fill in the rest field by field.
    pub fn new(
        kind: NodeKind,
        name: impl Into<String>,
        path: impl Into<String>,
        type_name: impl Into<String>,
    ) -> Node {
        Node {
            name: name.into(),
            path: path.into(),
            kind,
            type_name: type_name.into(),
            logical_type: None,
            nullable: false,
            required: false,
            has_default: false,
            default: None,
            doc: None,
            annotations: BTreeMap::new(),
            tags: Vec::new(),
            number: None,
            aliases: Vec::new(),
            enum_values: Vec::new(),
            reserved_numbers: Vec::new(),
            reserved_names: Vec::new(),
            additional_properties: None,
            children: Vec::new(),
        }
    }

    /// Whether `number` is reserved on this message or enum.
    pub fn reserves_number(&self, number: i64) -> bool {
        self.reserved_numbers.iter().any(|r| r.contains(number))
    }

    /// Whether `name` is reserved on this message or enum.
    pub fn reserves_name(&self, name: &str) -> bool {
        self.reserved_names.iter().any(|n| n == name)
    }

    /// The type with its logical type, for messages: `bytes (decimal)`.
    pub fn display_type(&self) -> String {
        match &self.logical_type {
            Some(logical) if logical != &self.type_name => {
                format!("{} ({logical})", self.type_name)
            }
            _ => self.type_name.clone(),
        }
    }

    /// How many nodes [`Node::walk`] gives, without collecting them.
    pub fn size(&self) -> usize {
        let mut size = 0;
        let mut stack = vec![self];
        while let Some(node) = stack.pop() {
            size += 1;
            stack.extend(node.children.iter());
        }
        size
    }

    /// This node and every descendant, depth first, parents before children.
    pub fn walk(&self) -> Vec<&Node> {
        let mut out = Vec::new();
        let mut stack = vec![self];
        while let Some(node) = stack.pop() {
            out.push(node);
            stack.extend(node.children.iter().rev());
        }
        out
    }
}

/// The most nodes one lowered tree may hold. A type used in several places is expanded at
/// each, so a small schema can describe a huge tree (each level referring twice to the one
/// below doubles it); lowering stops at this bound, which is above any tree a schema within
/// the default field limit makes.
pub const MAX_TREE_NODES: usize = 250_000;

/// Counts the nodes a format crate adds while lowering, and charges them to the check's
/// budget (eight units each: a node holds about 512 bytes).
#[derive(Debug)]
pub struct TreeAllowance {
    left: usize,
}

impl TreeAllowance {
    /// The allowance of one lowering, under the budget `m` proves installed.
    pub fn new(m: crate::budget::Metered<'_>) -> Self {
        let _ = m;
        TreeAllowance {
            left: MAX_TREE_NODES,
        }
    }

    /// Takes `n` more nodes: false when the lowering must stop. Past [`MAX_TREE_NODES`] the
    /// check's budget is spent too, so a budgeted check ends as too costly instead of
    /// judging a truncated tree.
    pub fn take(&mut self, n: usize) -> bool {
        if n > self.left {
            self.left = 0;
            crate::budget::exhaust();
            return false;
        }
        self.left -= n;
        !crate::budget::charge(8 * n as u64)
    }
}

impl FieldTree {
    /// The tree of "no earlier version": every node of a first version counts as added.
    pub fn empty(format: impl Into<String>) -> FieldTree {
        FieldTree {
            format: format.into(),
            root: Node::new(NodeKind::Schema, "", "", ""),
        }
    }

    /// Every node, depth first.
    pub fn nodes(&self) -> Vec<&Node> {
        self.root.walk()
    }

    /// The node at `path`, if any.
    pub fn find(&self, path: &str) -> Option<&Node> {
        self.nodes().into_iter().find(|n| n.path == path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> FieldTree {
        let mut root = Node::new(NodeKind::Record, "Case", "", "record:acme.Case");
        let mut owner = Node::new(
            NodeKind::Field,
            "owner",
            "/fields/owner",
            "record:acme.Owner",
        );
        owner.children.push(Node::new(
            NodeKind::Field,
            "id",
            "/fields/owner/fields/id",
            "string",
        ));
        root.children.push(owner);
        root.children.push(Node::new(
            NodeKind::Field,
            "status",
            "/fields/status",
            "string",
        ));
        FieldTree {
            format: "AVRO".into(),
            root,
        }
    }

    #[test]
    fn walk_visits_parents_before_children_in_declaration_order() {
        let tree = sample();
        let paths: Vec<&str> = tree.nodes().iter().map(|n| n.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "",
                "/fields/owner",
                "/fields/owner/fields/id",
                "/fields/status"
            ]
        );
        assert_eq!(
            tree.find("/fields/owner/fields/id")
                .map(|n| n.name.as_str()),
            Some("id")
        );
        assert!(tree.find("/fields/missing").is_none());
        assert_eq!(tree.root.size(), 4);
        assert_eq!(tree.root.children[0].size(), 2);
    }

    #[test]
    fn reserved_ranges_are_inclusive() {
        let mut message = Node::new(NodeKind::Record, "Case", "/acme.Case", "message:acme.Case");
        message
            .reserved_numbers
            .push(NumberRange { start: 3, end: 4 });
        message.reserved_names.push("legacy_owner".into());
        assert!(message.reserves_number(3) && message.reserves_number(4));
        assert!(!message.reserves_number(5));
        assert!(message.reserves_name("legacy_owner") && !message.reserves_name("owner"));
    }

    #[test]
    fn serializes_without_empty_facts() {
        let tree = sample();
        let json = serde_json::to_value(&tree).expect("serializable");
        let status = &json["root"]["children"][1];
        assert_eq!(status["type_name"], "string");
        assert!(status.get("tags").is_none() && status.get("number").is_none());
        let back: FieldTree = serde_json::from_value(json).expect("round trip");
        assert_eq!(back, tree);
    }

    #[test]
    fn the_allowance_stops_past_its_bound_and_spends_the_budget() {
        let spent = crate::budget::Budget::new(None, None).run(|m| {
            let mut nodes = TreeAllowance::new(m);
            assert!(nodes.take(MAX_TREE_NODES - 1));
            assert!(nodes.take(1));
            assert!(!nodes.take(1));
        });
        assert!(spent.is_err(), "passing the bound spends the budget");
        let within = crate::budget::Budget::new(None, Some(80)).run(|m| {
            let mut nodes = TreeAllowance::new(m);
            (nodes.take(10), nodes.take(1))
        });
        assert_eq!(
            within,
            Err(crate::budget::BudgetExceeded::Work(80)),
            "eight units a node"
        );
    }

    #[test]
    fn display_type_shows_the_logical_type_when_it_adds_something() {
        let mut amount = Node::new(NodeKind::Field, "amount", "/fields/amount", "bytes");
        amount.logical_type = Some("decimal".into());
        assert_eq!(amount.display_type(), "bytes (decimal)");
        amount.type_name = "decimal".into();
        assert_eq!(amount.display_type(), "decimal");
    }
}

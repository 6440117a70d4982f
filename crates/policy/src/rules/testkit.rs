//! Small builders for the trees the rule tests compare; each test reads like the seed example
//! it comes from.

use crate::{PolicyContext, PolicySettings};
use covenant_engine::{EnumValue, FieldTree, Finding, Node, NodeKind, NumberRange};
use serde_json::Value;

pub fn avro(name: &str, fields: Vec<Node>) -> FieldTree {
    let mut root = Node::new(NodeKind::Record, name, "", format!("record:{name}"));
    root.children = fields;
    FieldTree {
        format: "AVRO".into(),
        root,
    }
}

pub fn field(name: &str, type_name: &str) -> Node {
    let mut node = Node::new(NodeKind::Field, name, format!("/fields/{name}"), type_name);
    node.required = true;
    node
}

pub fn json(properties: Vec<Node>) -> FieldTree {
    let mut root = Node::new(NodeKind::Record, "", "#", "object");
    root.additional_properties = Some(false);
    root.children = properties;
    FieldTree {
        format: "JSON".into(),
        root,
    }
}

pub fn property(name: &str, type_name: &str) -> Node {
    Node::new(
        NodeKind::Field,
        name,
        format!("#/properties/{name}"),
        type_name,
    )
}

pub fn proto(declarations: Vec<Node>) -> FieldTree {
    let mut root = Node::new(NodeKind::Schema, "", "", "");
    root.children = declarations;
    FieldTree {
        format: "PROTOBUF".into(),
        root,
    }
}

pub fn message(full_name: &str, fields: Vec<(&str, &str, i64)>) -> Node {
    let mut node = Node::new(
        NodeKind::Record,
        full_name,
        format!("/{full_name}"),
        format!("message:{full_name}"),
    );
    node.children = fields
        .into_iter()
        .map(|(name, ty, number)| {
            let mut f = Node::new(
                NodeKind::Field,
                name,
                format!("/{full_name}/fields/{name}"),
                ty,
            );
            f.number = Some(number);
            f
        })
        .collect();
    node
}

pub fn proto_enum(full_name: &str, values: &[(&str, i64)]) -> Node {
    let mut node = Node::new(
        NodeKind::Enum,
        full_name,
        format!("/{full_name}"),
        format!("enum:{full_name}"),
    );
    node.enum_values = values
        .iter()
        .map(|(n, v)| EnumValue::new(*n, Some(*v)))
        .collect();
    node
}

/// Builder methods, so a test states only what the seed example states.
pub trait With {
    fn doc(self, doc: &str) -> Self;
    fn nullable(self) -> Self;
    fn default(self, value: Value) -> Self;
    fn logical(self, logical: &str) -> Self;
    fn annotate(self, key: &str, value: &str) -> Self;
    fn tag(self, tag: &str) -> Self;
    fn alias(self, alias: &str) -> Self;
    fn symbols(self, symbols: &[&str]) -> Self;
    fn reserve(self, numbers: &[i64], names: &[&str]) -> Self;
    fn open(self, open: Option<bool>) -> Self;
    fn child(self, child: Node) -> Self;
}

impl With for Node {
    fn doc(mut self, doc: &str) -> Self {
        self.doc = Some(doc.into());
        self
    }
    fn nullable(mut self) -> Self {
        self.nullable = true;
        self
    }
    fn default(mut self, value: Value) -> Self {
        self.has_default = true;
        self.default = Some(value);
        self
    }
    fn logical(mut self, logical: &str) -> Self {
        self.logical_type = Some(logical.into());
        self
    }
    fn annotate(mut self, key: &str, value: &str) -> Self {
        self.annotations.insert(key.into(), value.into());
        self
    }
    fn tag(mut self, tag: &str) -> Self {
        self.tags.push(tag.into());
        self
    }
    fn alias(mut self, alias: &str) -> Self {
        self.aliases.push(alias.into());
        self
    }
    fn symbols(mut self, symbols: &[&str]) -> Self {
        self.enum_values = symbols.iter().map(|s| EnumValue::new(*s, None)).collect();
        self
    }
    fn reserve(mut self, numbers: &[i64], names: &[&str]) -> Self {
        self.reserved_numbers
            .extend(numbers.iter().map(|&n| NumberRange { start: n, end: n }));
        self.reserved_names
            .extend(names.iter().map(|n| n.to_string()));
        self
    }
    fn open(mut self, open: Option<bool>) -> Self {
        self.additional_properties = open;
        self
    }
    fn child(mut self, mut child: Node) -> Self {
        child.path = format!("{}{}", self.path, child.path);
        self.children.push(child);
        self
    }
}

/// Findings of one rule only, at its default level.
pub fn run(rule: &str, old: &FieldTree, new: &FieldTree, context: &PolicyContext) -> Vec<Finding> {
    covenant_engine::budget::unlimited(|m| run_in(m, rule, old, new, context))
}

/// [`run`] under the caller's budget.
pub fn run_in(
    m: covenant_engine::budget::Metered<'_>,
    rule: &str,
    old: &FieldTree,
    new: &FieldTree,
    context: &PolicyContext,
) -> Vec<Finding> {
    crate::evaluate(m, old, new, context, &PolicySettings::default())
        .into_iter()
        .filter(|f| f.rule == rule)
        .collect()
}

/// [`run`] with every earlier version known (oldest first; the last is the one replaced).
pub fn run_in_history(
    rule: &str,
    lineage: &[(i64, &FieldTree)],
    new: &FieldTree,
    context: &PolicyContext,
) -> Vec<Finding> {
    covenant_engine::budget::unlimited(|m| {
        crate::evaluate_in_history(m, lineage, new, context, &PolicySettings::default())
    })
    .into_iter()
    .filter(|f| f.rule == rule)
    .collect()
}

pub fn none() -> PolicyContext {
    PolicyContext::default()
}

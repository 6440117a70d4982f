//! Covenant's own Avro schema model.
//!
//! We keep our own model instead of `apache_avro::Schema` because the registry needs things
//! that crate does not give: every parse error with a path, default validation with Java's
//! rules, compatibility that reports every incompatibility with a readable path and an
//! explanation, and resolution that matches Java `SchemaCompatibility` on enums and aliases
//! (where the crate's checker is wrong). Named types live once in an arena and are referred
//! to by index, so recursive schemas are plain cycles of indexes and a (reader, writer) pair
//! of indexes is a cheap memoization key.

use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::OnceLock;

/// Index of a node in [`Arena::nodes`].
pub type NodeId = usize;

/// An Avro full name split into its parts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Name {
    pub name: String,
    pub namespace: Option<String>,
}

impl Name {
    pub fn full(&self) -> String {
        let mut out = String::with_capacity(self.name.len() + 16);
        // Writing into a `String` cannot fail.
        let _ = self.write_to(&mut out);
        out
    }

    /// `namespace.name`, or the bare name when the namespace is absent or empty.
    pub fn write_to(&self, out: &mut impl std::fmt::Write) -> std::fmt::Result {
        if let Some(ns) = self.namespace.as_deref().filter(|ns| !ns.is_empty()) {
            out.write_str(ns)?;
            out.write_str(".")?;
        }
        out.write_str(&self.name)
    }
}

/// What named types share: name, aliases (as full names), doc and where they were defined.
#[derive(Debug, Clone)]
pub struct Named {
    pub name: Name,
    pub aliases: Vec<String>,
    pub doc: Option<String>,
    /// Set when the type was defined by a reference rather than by the schema itself.
    pub from_reference: bool,
}

#[derive(Debug, Clone)]
pub struct Field {
    pub name: String,
    pub ty: NodeId,
    pub default: Option<Value>,
    pub aliases: Vec<String>,
    pub order: Option<String>,
    pub doc: Option<String>,
    pub props: Props,
}

#[derive(Debug, Clone)]
pub struct Record {
    pub named: Named,
    pub is_error: bool,
    pub fields: Vec<Field>,
    /// Field positions by name, built on the first lookup in a large record: a check looks
    /// fields up by name in every comparison of the record, a parse never does.
    pub by_name: OnceLock<HashMap<String, usize>>,
}

/// Up to this many fields, a scan finds a field faster than hashing its name.
const SCAN_FIELDS: usize = 16;

impl Record {
    pub fn new(named: Named, is_error: bool, fields: Vec<Field>) -> Record {
        Record {
            named,
            is_error,
            fields,
            by_name: OnceLock::new(),
        }
    }

    /// The field named `name`, if any.
    pub fn field(&self, name: &str) -> Option<&Field> {
        if self.fields.len() <= SCAN_FIELDS {
            return self.fields.iter().find(|f| f.name == name);
        }
        let index = self.by_name.get_or_init(|| {
            self.fields
                .iter()
                .enumerate()
                .map(|(i, f)| (f.name.clone(), i))
                .collect()
        });
        index.get(name).map(|i| &self.fields[*i])
    }
}

#[derive(Debug, Clone)]
pub struct Enum {
    pub named: Named,
    pub symbols: Vec<String>,
    pub default: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Fixed {
    pub named: Named,
    pub size: usize,
}

/// A logical type that passed the specification's validity rules; invalid ones are dropped
/// (the node reads as its underlying type) but their attributes are kept in `props`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Logical {
    Decimal { precision: u32, scale: u32 },
    Uuid,
    Date,
    TimeMillis,
    TimeMicros,
    TimestampMillis,
    TimestampMicros,
    LocalTimestampMillis,
    LocalTimestampMicros,
    Duration,
}

impl Logical {
    pub fn name(&self) -> &'static str {
        match self {
            Logical::Decimal { .. } => "decimal",
            Logical::Uuid => "uuid",
            Logical::Date => "date",
            Logical::TimeMillis => "time-millis",
            Logical::TimeMicros => "time-micros",
            Logical::TimestampMillis => "timestamp-millis",
            Logical::TimestampMicros => "timestamp-micros",
            Logical::LocalTimestampMillis => "local-timestamp-millis",
            Logical::LocalTimestampMicros => "local-timestamp-micros",
            Logical::Duration => "duration",
        }
    }
}

#[derive(Debug, Clone)]
pub enum Kind {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    String,
    Array(NodeId),
    Map(NodeId),
    Union(Vec<NodeId>),
    // Boxed so that the many unnamed nodes of a schema do not each take a record's size.
    Record(Box<Record>),
    Enum(Box<Enum>),
    Fixed(Box<Fixed>),
}

impl Kind {
    /// The Avro type name (`record` for errors, as the canonical form wants).
    pub fn type_name(&self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Boolean => "boolean",
            Kind::Int => "int",
            Kind::Long => "long",
            Kind::Float => "float",
            Kind::Double => "double",
            Kind::Bytes => "bytes",
            Kind::String => "string",
            Kind::Array(_) => "array",
            Kind::Map(_) => "map",
            Kind::Union(_) => "union",
            Kind::Record(_) => "record",
            Kind::Enum(_) => "enum",
            Kind::Fixed(_) => "fixed",
        }
    }

    pub fn named(&self) -> Option<&Named> {
        match self {
            Kind::Record(r) => Some(&r.named),
            Kind::Enum(e) => Some(&e.named),
            Kind::Fixed(f) => Some(&f.named),
            _ => None,
        }
    }

    pub fn is_primitive(&self) -> bool {
        matches!(
            self,
            Kind::Null
                | Kind::Boolean
                | Kind::Int
                | Kind::Long
                | Kind::Float
                | Kind::Double
                | Kind::Bytes
                | Kind::String
        )
    }
}

#[derive(Debug, Clone)]
pub struct Node {
    pub kind: Kind,
    pub logical: Option<Logical>,
    /// Attributes beyond the ones the model understands (including an invalid `logicalType`
    /// and its parameters), kept for the normalized form.
    pub props: Props,
}

/// Attributes beyond the ones the model understands. Most nodes and fields have none, and a
/// parsed schema stays in the registry's cache, so an empty set takes one word instead of an
/// empty map's 72 bytes.
#[derive(Debug, Clone, Default)]
pub struct Props(Option<Box<Map<String, Value>>>);

impl From<Map<String, Value>> for Props {
    fn from(map: Map<String, Value>) -> Props {
        Props((!map.is_empty()).then(|| Box::new(map)))
    }
}

impl std::ops::Deref for Props {
    type Target = Map<String, Value>;
    fn deref(&self) -> &Map<String, Value> {
        static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
        self.0.as_deref().unwrap_or(&EMPTY)
    }
}

/// All nodes of one schema (and of the references it was parsed with).
#[derive(Debug, Clone, Default)]
pub struct Arena {
    pub nodes: Vec<Node>,
    pub root: NodeId,
    /// Structural hashes of the nodes (see `crate::shape`).
    pub shapes: crate::shape::Shapes,
}

impl Arena {
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id]
    }
    pub fn kind(&self, id: NodeId) -> &Kind {
        &self.nodes[id].kind
    }

    /// Whether `id` here and `other_id` in `other` are the same structure as far as the
    /// compatibility check can tell (both reach no cycle and hash equal).
    pub fn same_shape(&self, id: NodeId, other: &Arena, other_id: NodeId) -> bool {
        matches!(
            (self.shapes.nodes.get(id), other.shapes.nodes.get(other_id)),
            (Some(Some(a)), Some(Some(b))) if a == b
        )
    }

    /// A short human description of a node: its type name, or full name for named types.
    pub fn describe(&self, id: NodeId) -> String {
        self.describing(id).to_string()
    }

    /// [`Arena::describe`] as a `Display`, for writing into a message without a temporary.
    pub fn describing(&self, id: NodeId) -> Describe<'_> {
        Describe { arena: self, id }
    }

    /// The segment naming a union branch in a path: its type name or full name.
    pub fn branch_label(&self, id: NodeId) -> String {
        match self.kind(id).named() {
            Some(n) => n.name.full(),
            None => self.kind(id).type_name().to_string(),
        }
    }
}

/// See [`Arena::describing`].
pub struct Describe<'a> {
    arena: &'a Arena,
    id: NodeId,
}

impl Describe<'_> {
    /// Written through `fmt::Write` so that a message built as a `String` (see
    /// [`crate::text`]) skips the `Formatter`.
    pub fn write_to(&self, out: &mut impl std::fmt::Write) -> std::fmt::Result {
        let arena = self.arena;
        match arena.kind(self.id) {
            Kind::Union(branches) => {
                out.write_str("[")?;
                for (i, b) in branches.iter().enumerate() {
                    if i > 0 {
                        out.write_str(", ")?;
                    }
                    arena.describing(*b).write_to(out)?;
                }
                out.write_str("]")
            }
            Kind::Array(items) => {
                out.write_str("array<")?;
                arena.describing(*items).write_to(out)?;
                out.write_str(">")
            }
            Kind::Map(values) => {
                out.write_str("map<")?;
                arena.describing(*values).write_to(out)?;
                out.write_str(">")
            }
            k => match k.named() {
                Some(n) => n.name.write_to(out),
                None => out.write_str(k.type_name()),
            },
        }
    }
}

impl std::fmt::Display for Describe<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.write_to(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A schema's unnamed nodes (primitives, unions, arrays, maps) far outnumber its named
    /// ones, and parsed schemas stay in the registry's cache: a node must not grow back to a
    /// record's size.
    #[test]
    fn an_unnamed_node_stays_small() {
        assert!(
            std::mem::size_of::<Node>() <= 64,
            "{} bytes",
            std::mem::size_of::<Node>()
        );
    }

    #[test]
    fn props_hold_nothing_when_empty_and_read_back_what_they_were_given() {
        let empty = Props::from(Map::new());
        assert!(empty.0.is_none());
        assert!(empty.is_empty());

        let mut map = Map::new();
        map.insert("connect.name".into(), Value::from("x"));
        let props = Props::from(map.clone());
        assert_eq!(*props, map);
        assert_eq!(props.get("connect.name"), Some(&Value::from("x")));
    }
}

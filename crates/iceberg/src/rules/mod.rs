//! Every Iceberg rule: one module per rule id with its spec, its check and its tests.
//!
//! Two families: readability rules answer "can `reader` read data written with `writer`?"
//! and run in every pass; history rules describe how the table changed from an earlier
//! schema to a later one (renames, moves, reused ids, identifier and partition fields,
//! initial defaults) and run once per earlier version, whatever the direction.

pub mod column_added;
pub mod column_deleted;
pub mod column_moved;
pub mod column_renamed;
pub mod column_reparented;
pub mod field_id_reused;
pub mod identifier_fields_changed;
pub mod initial_default_changed;
pub mod optional_to_required;
pub mod partition_source_changed;
pub mod required_column_added;
pub mod required_to_optional;
pub mod type_changed;
pub mod type_promoted;

use crate::IcebergSchema;
use crate::index::{Column, Index, Role};
use crate::types::{Type, promotable};
use covenant_engine::{Finding, RuleSpec};

/// Every rule in catalog order.
pub static ALL: &[&RuleSpec] = &[
    &column_added::RULE,
    &required_column_added::RULE,
    &column_deleted::RULE,
    &type_promoted::RULE,
    &type_changed::RULE,
    &required_to_optional::RULE,
    &optional_to_required::RULE,
    &column_renamed::RULE,
    &field_id_reused::RULE,
    &column_moved::RULE,
    &column_reparented::RULE,
    &identifier_fields_changed::RULE,
    &partition_source_changed::RULE,
    &initial_default_changed::RULE,
];

/// Two schemas indexed by id. For readability rules `old` is the writer and `new` the reader;
/// for history rules `old` is the earlier schema and `new` the later one.
pub struct Pair<'a> {
    pub old: Index<'a>,
    pub new: Index<'a>,
    pub old_schema: &'a IcebergSchema,
    pub new_schema: &'a IcebergSchema,
}

impl<'a> Pair<'a> {
    pub fn new(old: &'a IcebergSchema, new: &'a IcebergSchema) -> Pair<'a> {
        Pair {
            old: Index::new(old),
            new: Index::new(new),
            old_schema: old,
            new_schema: new,
        }
    }

    /// Ids in both schemas, in the new schema's order.
    pub fn matched(&self) -> impl Iterator<Item = (&Column<'a>, &Column<'a>)> {
        self.new
            .iter()
            .filter_map(|n| Some((self.old.get(n.id)?, n)))
    }

    /// Struct fields only in the new schema whose parent is in both (the top of an addition).
    pub fn added_fields(&self) -> impl Iterator<Item = &Column<'a>> {
        self.new.iter().filter(|c| {
            c.role == Role::Field
                && self.old.get(c.id).is_none()
                && c.parent.is_none_or(|p| self.old.get(p).is_some())
        })
    }

    /// Struct fields only in the old schema whose parent is in both (the top of a removal).
    pub fn deleted_fields(&self) -> impl Iterator<Item = &Column<'a>> {
        self.old.iter().filter(|c| {
            c.role == Role::Field
                && self.new.get(c.id).is_none()
                && c.parent.is_none_or(|p| self.new.get(p).is_some())
        })
    }
}

/// How a column's type changed from `old` to `new`, looking at this level only (nested
/// fields are columns of their own): `None` when unchanged.
pub enum Change {
    Promoted,
    Incompatible(String),
}

pub fn type_change(old: &Type, new: &Type) -> Option<Change> {
    match (old, new) {
        (Type::Primitive(a), Type::Primitive(b)) if a == b => None,
        (Type::Primitive(a), Type::Primitive(b)) if promotable(a, b) => Some(Change::Promoted),
        (Type::Primitive(a), Type::Primitive(b)) => Some(Change::Incompatible(refusal(a, b))),
        (Type::Struct(_), Type::Struct(_)) => None,
        (Type::List { element_id: a, .. }, Type::List { element_id: b, .. }) if a != b => Some(
            Change::Incompatible(format!("the list's element id changed from {a} to {b}")),
        ),
        (
            Type::Map {
                key_id: a,
                value_id: c,
                ..
            },
            Type::Map {
                key_id: b,
                value_id: d,
                ..
            },
        ) if a != b || c != d => Some(Change::Incompatible(format!(
            "the map's key and value ids changed from {a}/{c} to {b}/{d}"
        ))),
        (Type::List { .. }, Type::List { .. }) | (Type::Map { .. }, Type::Map { .. }) => None,
        _ => Some(Change::Incompatible(format!(
            "{} cannot become {}: Iceberg never converts between primitives and nested types",
            old.kind(),
            new.kind()
        ))),
    }
}

/// Why a primitive change is refused, with the cases where the specification and the
/// implementations differ spelled out.
fn refusal(from: &crate::types::Primitive, to: &crate::types::Primitive) -> String {
    use crate::types::Primitive as P;
    let why = match (from, to) {
        (P::Date, P::Timestamp | P::TimestampNs) => {
            "the specification allows it for format version 3 tables, but the Java and Rust implementations refuse it and it changes partition transforms on the column"
        }
        (P::Unknown, _) => {
            "the specification allows it for format version 3 tables, but the Java and Rust implementations refuse it"
        }
        (P::Decimal { scale: s, .. }, P::Decimal { scale: t, .. }) if s != t => {
            "a decimal's scale can never change"
        }
        (P::Decimal { .. }, P::Decimal { .. }) => "a decimal's precision can only widen",
        _ => "Iceberg promotes only int to long, float to double and decimal precision widening",
    };
    format!("{from} cannot be read as {to}: {why}")
}

/// The findings of reading `writer` data with `reader`.
pub fn readability(reader: &IcebergSchema, writer: &IcebergSchema) -> Vec<Finding> {
    let pair = Pair::new(writer, reader);
    let mut out = Vec::new();
    column_added::check(&pair, &mut out);
    required_column_added::check(&pair, &mut out);
    column_deleted::check(&pair, &mut out);
    type_promoted::check(&pair, &mut out);
    type_changed::check(&pair, &mut out);
    required_to_optional::check(&pair, &mut out);
    optional_to_required::check(&pair, &mut out);
    out
}

/// The findings about how the table changed from `earlier` to `later`.
pub fn history(earlier: &IcebergSchema, later: &IcebergSchema) -> Vec<Finding> {
    let pair = Pair::new(earlier, later);
    let mut out = Vec::new();
    column_renamed::check(&pair, &mut out);
    field_id_reused::check(&pair, &mut out);
    column_moved::check(&pair, &mut out);
    column_reparented::check(&pair, &mut out);
    identifier_fields_changed::check(&pair, &mut out);
    partition_source_changed::check(&pair, &mut out);
    initial_default_changed::check(&pair, &mut out);
    out
}

/// A column as messages name it: `'a.b' (id 3)`.
pub fn describe(column: &Column<'_>) -> String {
    format!("'{}' (id {})", column.names.join("."), column.id)
}

#[cfg(test)]
pub(crate) mod testing {
    use crate::IcebergFormat;
    use covenant_engine::{CheckOptions, Direction, Finding, Format, RuleSpec, check_pair};

    /// A schema of top-level fields given as `(id, name, required, type)`.
    pub fn schema(fields: &[(i32, &str, bool, &str)]) -> String {
        let fields: Vec<String> = fields
            .iter()
            .map(|(id, name, required, ty)| {
                let ty = if ty.starts_with('{') {
                    ty.to_string()
                } else {
                    format!("\"{ty}\"")
                };
                format!(r#"{{"id":{id},"name":"{name}","required":{required},"type":{ty}}}"#)
            })
            .collect();
        format!(
            r#"{{"type":"struct","schema-id":0,"fields":[{}]}}"#,
            fields.join(",")
        )
    }

    /// The BACKWARD findings of `new` against `old` (new reads old data; history old → new).
    pub fn backward(old: &str, new: &str) -> Vec<Finding> {
        let old = IcebergFormat::parse(old, &[]).unwrap_or_else(|e| panic!("old: {e}"));
        let new = IcebergFormat::parse(new, &[]).unwrap_or_else(|e| panic!("new: {e}"));
        covenant_engine::budget::unlimited(|m| {
            check_pair::<IcebergFormat>(
                m,
                Direction::Backward,
                &new,
                &old,
                &CheckOptions::default(),
            )
        })
    }

    pub fn of(rule: &RuleSpec, findings: &[Finding]) -> Vec<Finding> {
        findings
            .iter()
            .filter(|f| f.rule == rule.id)
            .cloned()
            .collect()
    }

    /// The one finding of `rule` for the change; panics unless there is exactly one.
    pub fn fires(rule: &RuleSpec, old: &str, new: &str) -> Finding {
        let all = backward(old, new);
        let mine = of(rule, &all);
        assert_eq!(mine.len(), 1, "{}: {all:#?}", rule.id);
        mine[0].clone()
    }

    pub fn silent(rule: &RuleSpec, old: &str, new: &str) {
        let all = backward(old, new);
        assert!(of(rule, &all).is_empty(), "{}: {all:#?}", rule.id);
    }
}

//! Field default validation, with Java's `Schema.isValidDefault` rules (what Confluent
//! accepts): a union default may match any branch, `bytes`, `fixed` and enum defaults are
//! strings.

use crate::model::{Arena, Kind, NodeId};
use serde_json::Value;

pub fn is_valid(arena: &Arena, ty: NodeId, value: &Value, depth: usize) -> bool {
    if depth > crate::parse::MAX_DEPTH {
        return false;
    }
    match arena.kind(ty) {
        Kind::Null => value.is_null(),
        Kind::Boolean => value.is_boolean(),
        Kind::Int => value.as_i64().is_some_and(|v| i32::try_from(v).is_ok()),
        Kind::Long => value.is_i64() || value.as_u64().is_some_and(|v| i64::try_from(v).is_ok()),
        Kind::Float | Kind::Double => value.is_number(),
        Kind::Bytes | Kind::String | Kind::Enum(_) | Kind::Fixed(_) => value.is_string(),
        Kind::Array(items) => value
            .as_array()
            .is_some_and(|a| a.iter().all(|v| is_valid(arena, *items, v, depth + 1))),
        Kind::Map(values) => value
            .as_object()
            .is_some_and(|m| m.values().all(|v| is_valid(arena, *values, v, depth + 1))),
        Kind::Union(branches) => branches
            .iter()
            .any(|b| is_valid(arena, *b, value, depth + 1)),
        Kind::Record(r) => match value.as_object() {
            None => false,
            Some(obj) => r
                .fields
                .iter()
                .all(|f| match obj.get(&f.name).or(f.default.as_ref()) {
                    Some(v) => is_valid(arena, f.ty, v, depth + 1),
                    None => false,
                }),
        },
    }
}

/// Whether a union default matches the branch the specification says it must: the first.
pub fn matches_first_branch(arena: &Arena, ty: NodeId, value: &Value) -> bool {
    match arena.kind(ty) {
        Kind::Union(branches) => branches
            .first()
            .is_some_and(|b| is_valid(arena, *b, value, 0)),
        _ => true,
    }
}

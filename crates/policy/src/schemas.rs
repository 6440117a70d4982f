//! The policy over parsed schemas of any format, for callers that hold schemas rather than
//! field trees (the registry, the command line).

use crate::{PolicyContext, PolicySettings, evaluate, evaluate_in_history};
use covenant_engine::{FieldTree, Finding};
use covenant_schema::ParsedSchema;

/// The neutral field tree of a parsed schema, whatever its format.
pub fn field_tree(schema: &ParsedSchema) -> FieldTree {
    match schema {
        ParsedSchema::Avro(s) => covenant_avro::field_tree(s),
        ParsedSchema::Json(s) => covenant_jsonschema::field_tree(s),
        ParsedSchema::Protobuf(s) => covenant_protobuf::field_tree(s),
        ParsedSchema::Iceberg(s) => covenant_iceberg::field_tree(s),
    }
}

/// [`evaluate`] over two parsed schemas. Schemas of different types are not compared (the
/// structural check reports `SCHEMA_TYPE_CHANGED`).
pub fn evaluate_schemas(
    old: &ParsedSchema,
    new: &ParsedSchema,
    context: &PolicyContext,
    settings: &PolicySettings,
) -> Vec<Finding> {
    evaluate(&field_tree(old), &field_tree(new), context, settings)
}

/// [`evaluate`] for a subject's first version: everything in `new` counts as added.
pub fn evaluate_first_schema(
    new: &ParsedSchema,
    context: &PolicyContext,
    settings: &PolicySettings,
) -> Vec<Finding> {
    let new = field_tree(new);
    evaluate(
        &FieldTree::empty(new.format.clone()),
        &new,
        context,
        settings,
    )
}

/// [`evaluate_in_history`] over parsed schemas: `lineage` is every earlier version, oldest
/// first, the last one the version being replaced.
pub fn evaluate_schemas_in_history(
    lineage: &[(i64, &ParsedSchema)],
    new: &ParsedSchema,
    context: &PolicyContext,
    settings: &PolicySettings,
) -> Vec<Finding> {
    // Only Protobuf and Iceberg rules read the whole lineage (numbers, names and field ids);
    // other formats are compared with the latest version alone, so the other trees are not
    // built.
    let wanted = match new {
        ParsedSchema::Protobuf(_) | ParsedSchema::Iceberg(_) => lineage,
        _ => &lineage[lineage.len().saturating_sub(1)..],
    };
    let trees: Vec<(i64, FieldTree)> = wanted.iter().map(|(v, s)| (*v, field_tree(s))).collect();
    let refs: Vec<(i64, &FieldTree)> = trees.iter().map(|(v, t)| (*v, t)).collect();
    evaluate_in_history(&refs, &field_tree(new), context, settings)
}

//! The policy over parsed schemas of any format, for callers that hold schemas rather than
//! field trees (the registry, the command line).

use crate::{PolicyContext, PolicySettings, evaluate, evaluate_against_lineage};
use covenant_engine::budget::Metered;
use covenant_engine::{FieldTree, Finding, Numbering};
use covenant_schema::ParsedSchema;
use std::borrow::Cow;

/// The neutral field tree of a parsed schema, whatever its format, under the budget `m`
/// proves installed (a type used in several places is expanded at each).
pub fn field_tree(m: Metered<'_>, schema: &ParsedSchema) -> FieldTree {
    match schema {
        ParsedSchema::Avro(s) => covenant_avro::field_tree(m, s),
        ParsedSchema::Json(s) => covenant_jsonschema::field_tree(m, s),
        ParsedSchema::Protobuf(s) => covenant_protobuf::field_tree(s),
        ParsedSchema::Iceberg(s) => covenant_iceberg::field_tree(m, s),
    }
}

/// [`evaluate`] over two parsed schemas. Schemas of different types are not compared (the
/// structural check reports `SCHEMA_TYPE_CHANGED`).
pub fn evaluate_schemas(
    m: Metered<'_>,
    old: &ParsedSchema,
    new: &ParsedSchema,
    context: &PolicyContext,
    settings: &PolicySettings,
) -> Vec<Finding> {
    evaluate(
        m,
        &field_tree(m, old),
        &field_tree(m, new),
        context,
        settings,
    )
}

/// [`evaluate`] for a subject's first version: everything in `new` counts as added.
pub fn evaluate_first_schema(
    m: Metered<'_>,
    new: &ParsedSchema,
    context: &PolicyContext,
    settings: &PolicySettings,
) -> Vec<Finding> {
    let new = field_tree(m, new);
    evaluate(
        m,
        &FieldTree::empty(new.format.clone()),
        &new,
        context,
        settings,
    )
}

/// [`crate::evaluate_in_history`] over parsed schemas: `lineage` is every earlier version, oldest
/// first, the last one the version being replaced.
pub fn evaluate_schemas_in_history(
    m: Metered<'_>,
    lineage: &[(i64, &ParsedSchema)],
    new: &ParsedSchema,
    context: &PolicyContext,
    settings: &PolicySettings,
) -> Vec<Finding> {
    let new_tree = field_tree(m, new);
    match lineage.split_last() {
        Some((&latest, earlier)) => {
            LoweredLineage::of(m, latest, earlier, new).evaluate(m, &new_tree, context, settings)
        }
        None => {
            let empty = FieldTree::empty(new_tree.format.clone());
            evaluate(m, &empty, &new_tree, context, settings)
        }
    }
}

/// What the semantic rules read of a lineage: the field tree of the version being replaced
/// and what each version numbered and named. Made apart from the new version's tree, so the
/// two can be made at once.
pub(crate) struct LoweredLineage<'a> {
    latest: FieldTree,
    numberings: Vec<(i64, Cow<'a, Numbering>)>,
}

impl<'a> LoweredLineage<'a> {
    /// `latest` is the version being replaced, `earlier` the versions before it, oldest
    /// first. Only Protobuf and Iceberg rules read the whole lineage (numbers, names and field
    /// ids), and only what each version numbered and named, which a Protobuf schema keeps
    /// once made; only the version being replaced is lowered into a field tree, once for both.
    pub(crate) fn of(
        m: Metered<'_>,
        (latest_version, latest): (i64, &'a ParsedSchema),
        earlier: &[(i64, &'a ParsedSchema)],
        new: &ParsedSchema,
    ) -> LoweredLineage<'a> {
        let (latest_tree, latest_numbering) = match latest {
            ParsedSchema::Protobuf(s) => {
                let (tree, numbering) = s.field_tree_and_numbering();
                (tree, Some(numbering))
            }
            other => (field_tree(m, other), None),
        };
        let numberings = match new {
            ParsedSchema::Protobuf(_) | ParsedSchema::Iceberg(_) => {
                let latest_numbering = match latest_numbering {
                    Some(n) => Cow::Borrowed(n),
                    None => Cow::Owned(Numbering::of(&latest_tree)),
                };
                let earlier = earlier.iter().map(|&(v, s)| (v, numbering(m, s)));
                earlier
                    .chain([(latest_version, latest_numbering)])
                    .collect()
            }
            _ => Vec::new(),
        };
        LoweredLineage {
            latest: latest_tree,
            numberings,
        }
    }

    pub(crate) fn evaluate(
        &self,
        m: Metered<'_>,
        new_tree: &FieldTree,
        context: &PolicyContext,
        settings: &PolicySettings,
    ) -> Vec<Finding> {
        let numbered: Vec<(i64, &Numbering)> =
            self.numberings.iter().map(|(v, n)| (*v, &**n)).collect();
        evaluate_against_lineage(m, &self.latest, &numbered, new_tree, context, settings)
    }
}

fn numbering<'s>(m: Metered<'_>, schema: &'s ParsedSchema) -> Cow<'s, Numbering> {
    match schema {
        ParsedSchema::Protobuf(s) => Cow::Borrowed(s.numbering()),
        other => Cow::Owned(Numbering::of(&field_tree(m, other))),
    }
}

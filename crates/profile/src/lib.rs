//! What the data carries: field-prevalence profiles of records and the findings they support.
//!
//! A [`Profile`] counts, for every field path of a set of records, where it is present and
//! filled, the types seen, an approximate distinct count, ranges and examples; profiles of
//! partitions merge into the profile of the whole (exactly, but for the distinct-count
//! sketch). Compared with a schema's fields (through the format-neutral field tree), a profile
//! names promotion candidates from escape-hatch columns, removal candidates, type drift, and
//! fields the data and the schema disagree on, as findings with rule ids like every other
//! verdict.

mod profile;
pub mod rules;
pub mod sketch;
pub mod source;
mod tape;

pub use profile::{
    DEFAULT_MAX_PATHS, EXAMPLES, FORMAT, FORMAT_VERSION, GroupStats, NO_GROUP, PathStats, Profile,
    ProfileError, ProfileOptions, Profiler, json_type, segment,
};
pub use rules::{Evidence, Thresholds, findings, rules};
pub use source::Record;
pub use tape::Tape;

use covenant_engine::{FieldTree, Node, NodeKind};

/// A field of the schema, located in the data.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredField {
    /// Where the profile records it: `/limits[]/cap`.
    pub path: String,
    /// Where findings point in the schema: the field tree's path.
    pub schema_path: String,
    pub nullable: bool,
}

/// The fields of a schema as data paths: a record's fields under `/name`, an array's items
/// under `[]`. For a `.proto` file the first message is the record the data holds.
pub fn declared_fields(tree: &FieldTree) -> Vec<DeclaredField> {
    let root = match tree.root.kind {
        NodeKind::Schema => tree
            .root
            .children
            .iter()
            .find(|n| n.kind == NodeKind::Record),
        _ => Some(&tree.root),
    };
    let mut out = Vec::new();
    let mut stack: Vec<(String, &Node)> = root
        .map(|r| {
            r.children
                .iter()
                .rev()
                .map(|c| (String::new(), c))
                .collect()
        })
        .unwrap_or_default();
    while let Some((base, node)) = stack.pop() {
        if node.kind != NodeKind::Field {
            continue;
        }
        let path = format!("{base}/{}", segment(&node.name));
        let nullable = node.nullable || !node.required;
        out.push(DeclaredField {
            path: path.clone(),
            schema_path: node.path.clone(),
            nullable,
        });
        let inner = if node.type_name.starts_with("array<") {
            let items = format!("{path}[]");
            out.push(DeclaredField {
                path: items.clone(),
                schema_path: node.path.clone(),
                nullable: false,
            });
            items
        } else {
            path
        };
        for child in node.children.iter().rev() {
            stack.push((inner.clone(), child));
        }
    }
    out
}

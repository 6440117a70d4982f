//! The format-neutral core of Covenant's compatibility checking.
//!
//! A format crate (Avro, JSON Schema, Protobuf) implements [`Format`]: it parses schema text
//! into its own model and compares a reader with a writer, returning [`Finding`]s. This crate
//! turns pairwise comparisons into verdicts for a [`Level`] over an ordered history of
//! versions, and renders reports. It knows nothing of HTTP, SQL or any particular format.
//!
//! An incompatibility is not an error: a check returns a [`Report`]. `Err` only means the
//! check could not run (the schema text was invalid).

pub mod budget;
mod fields;
mod finding;
mod format;
mod level;
mod limits;
pub mod numbering;
pub mod parallel;
pub mod position;
mod render;
mod rule;
pub mod shape;

pub use fields::{
    EnumValue, FieldTree, MAX_TREE_NODES, Node, NodeKind, NumberRange, TreeAllowance,
};
pub use finding::{Finding, Severity};
pub use format::{
    CheckOptions, Format, InfoFindings, JsonPolicy, ProtobufStrictness, Reference, SchemaError,
    SchemaErrorKind,
};
pub use level::{Direction, Level, Pass, PriorVersion, Report, check_history, check_pair};
pub use limits::{Counter, Limit, Limits, bracket_depth};
pub use numbering::Numbering;
pub use position::{JsonText, Position, Step};
pub use render::{
    render_json, render_sarif, render_sarif_located, render_text, render_text_located,
};
pub use rule::{RuleCatalog, RuleSpec, rules_markdown, rules_markdown_with};

//! Apache Iceberg table schemas as a schema format: the specification's JSON form (or a
//! table's `metadata.json`, whose current schema is taken), compatibility by field id, and
//! the Spark SQL DDL that takes a table from one schema to the next.
//!
//! Iceberg binds data to field ids, not names: a column keeps its id through renames and
//! moves, and a dropped column's id is never used again. Every rule here therefore pairs
//! columns by id ([`index`]); a rename is a changed name under the same id, and an id that
//! comes back with another type is a reuse. The readability rules answer the engine's one
//! question (can `reader` read data written with `writer`?) so that BACKWARD, FORWARD, FULL
//! and the transitive levels mean what they mean for the other formats; the rules about the
//! history of the table (renames, moves, reused ids, identifier and partition fields, initial
//! defaults) compare the earlier schema with the later one once per version.
//!
//! The Apache `iceberg` crate is not used: only the schema JSON is needed, and that crate is a
//! table implementation whose required dependencies (about fifty, among them Arrow, Parquet,
//! Avro, tokio, opendal-style I/O, zstd with its C library and a cache) would more than double
//! the build for a parser of a few hundred lines; it also needs a newer Rust than the
//! workspace's minimum. Its type-promotion rules are followed (see [`types::promotable`]).
//!
//! Finding paths name fields, never indexes: `/fields/a/fields/b` for a nested field,
//! `/fields/points/element` for a list element, `/fields/m/key` and `/fields/m/value` for
//! map entries, `/identifier-field-ids` and `/partition-spec` for the table-level facts.

mod canonical;
pub mod ddl;
mod fields;
pub mod index;
mod parse;
pub mod partition;
mod position;
pub mod rules;
pub mod types;

pub use ddl::{DdlOp, DdlPlan, plan_ddl};
pub use fields::{PARTITION_SPEC, PARTITION_SPEC_TEXT, field_tree};
pub use parse::MAX_FIELD_ID;
pub use position::locate;

use covenant_engine::budget::Metered;
use covenant_engine::{
    CheckOptions, Direction, Finding, Format, Limits, Pass, Reference, RuleSpec, SchemaError,
};
use serde_json::Value;
use types::Type;

/// One struct field: a column, or a field of a nested struct.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub id: i32,
    pub name: String,
    pub required: bool,
    pub ty: Type,
    pub doc: Option<String>,
    /// Format version 3: the value of rows written before the field existed; never changes.
    pub initial_default: Option<Value>,
    /// Format version 3: the value writers use when they do not supply the field.
    pub write_default: Option<Value>,
}

/// A field of a partition spec: the source column's id and the transform applied to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionField {
    pub source_id: i32,
    pub name: String,
    pub transform: String,
}

/// A parsed Iceberg schema.
#[derive(Debug, Clone, PartialEq)]
pub struct IcebergSchema {
    pub schema_id: Option<i64>,
    pub identifier_field_ids: Vec<i32>,
    pub fields: Vec<Field>,
    /// The default partition spec, when the text was table metadata.
    pub partition: Option<Vec<PartitionField>>,
    /// The highest id the table ever assigned, when the text was table metadata: an id at or
    /// below it that the schema lacks belonged to a dropped column.
    pub last_column_id: Option<i32>,
}

impl IcebergSchema {
    /// The normalized text: the schema object alone, keys in a fixed order, types in the
    /// specification's spelling, without `schema-id` (a table's counter, not part of what the
    /// schema says).
    pub fn normalized(&self) -> String {
        canonical::normalized(self)
    }
}

/// The [`Format`] implementation.
pub struct IcebergFormat;

impl Format for IcebergFormat {
    type Schema = IcebergSchema;
    const NAME: &'static str = "ICEBERG";

    fn parse_with(
        text: &str,
        _references: &[Reference],
        limits: &Limits,
    ) -> Result<IcebergSchema, SchemaError> {
        parse::parse(text, limits)
    }

    fn normalized(schema: &IcebergSchema) -> String {
        schema.normalized()
    }

    /// Reading `writer` data with `reader`, and the history rules as if `reader` came later.
    fn check(
        _: Metered<'_>,
        reader: &IcebergSchema,
        writer: &IcebergSchema,
        _: &CheckOptions,
    ) -> Vec<Finding> {
        let mut out = rules::readability(reader, writer);
        out.extend(rules::history(writer, reader));
        out
    }

    fn check_pass(
        _: Metered<'_>,
        reader: &IcebergSchema,
        writer: &IcebergSchema,
        _: &CheckOptions,
        pass: Pass,
    ) -> Vec<Finding> {
        let mut out = rules::readability(reader, writer);
        if pass.history {
            out.extend(match pass.direction {
                Direction::Backward => rules::history(writer, reader),
                Direction::Forward => rules::history(reader, writer),
            });
        }
        out
    }
}

/// Every Iceberg rule, in catalog order.
pub fn rules() -> &'static [&'static RuleSpec] {
    rules::ALL
}

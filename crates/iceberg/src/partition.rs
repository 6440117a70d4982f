//! Partition-spec changes: how a spec reads (for findings) and the Spark SQL statements that
//! evolve one spec into the next (`ALTER TABLE ... ADD / DROP / REPLACE PARTITION FIELD`,
//! with the Iceberg SQL extensions). Partition evolution is metadata only: files already
//! written keep their layout, new writes use the new spec, and planning is split per spec.

use crate::ddl::{DdlOp, Statement};
use crate::types::{Type, quote};
use crate::{Field, IcebergSchema, PartitionField};

/// The dotted name of the column with `id`, searching nested structs.
pub fn column_name(fields: &[Field], id: i32) -> Option<String> {
    for f in fields {
        if f.id == id {
            return Some(f.name.clone());
        }
        if let Type::Struct(children) = &f.ty
            && let Some(inner) = column_name(children, id)
        {
            return Some(format!("{}.{inner}", f.name));
        }
    }
    None
}

/// A partition field as a Spark SQL transform expression: `exchange`, `day(valid_from)`,
/// `bucket(16, id)`, `truncate(4, name)`.
pub fn expression(field: &PartitionField, column: &str) -> String {
    let column = column.split('.').map(quote).collect::<Vec<_>>().join(".");
    let transform = field.transform.as_str();
    let argument = |prefix: &str| {
        transform
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix(']'))
            .map(str::to_string)
    };
    if transform == "identity" {
        column
    } else if let Some(n) = argument("bucket[") {
        format!("bucket({n}, {column})")
    } else if let Some(w) = argument("truncate[") {
        format!("truncate({w}, {column})")
    } else {
        format!("{transform}({column})")
    }
}

/// The spec's fields keyed by what they do (source id and transform), `void` fields left out:
/// they partition nothing.
fn active(spec: &[PartitionField]) -> Vec<&PartitionField> {
    spec.iter().filter(|f| f.transform != "void").collect()
}

/// The spec as it reads in a finding: `identity(exchange), month(valid_from)`, or `unpartitioned`.
pub fn describe(schema: &IcebergSchema) -> Option<String> {
    let spec = schema.partition.as_ref()?;
    let parts: Vec<String> = active(spec)
        .iter()
        .map(|f| {
            let column =
                column_name(&schema.fields, f.source_id).unwrap_or_else(|| f.source_id.to_string());
            format!("{}({column})", f.transform)
        })
        .collect();
    Some(if parts.is_empty() {
        "unpartitioned".to_string()
    } else {
        parts.join(", ")
    })
}

/// What identifies the spec for comparison: source ids and transforms, so that renaming a
/// source column does not count as a partition change.
pub fn key(schema: &IcebergSchema) -> Option<String> {
    let spec = schema.partition.as_ref()?;
    Some(
        active(spec)
            .iter()
            .map(|f| format!("{}({})", f.transform, f.source_id))
            .collect::<Vec<_>>()
            .join(", "),
    )
}

/// The statements that take `old`'s default partition spec to `new`'s on `table`; none when
/// either text carries no spec (a bare schema) or the specs partition alike. A removed field
/// and an added one are paired, in order, into one `REPLACE` (one metadata update); the rest
/// are `DROP`s and `ADD`s.
pub fn statements(old: &IcebergSchema, new: &IcebergSchema, table: &str) -> Vec<Statement> {
    let (Some(before), Some(after)) = (&old.partition, &new.partition) else {
        return Vec::new();
    };
    let same = |a: &PartitionField, b: &PartitionField| {
        a.source_id == b.source_id && a.transform == b.transform
    };
    let before = active(before);
    let after = active(after);
    let removed: Vec<&PartitionField> = before
        .iter()
        .copied()
        .filter(|o| !after.iter().any(|n| same(o, n)))
        .collect();
    let added: Vec<&PartitionField> = after
        .iter()
        .copied()
        .filter(|n| !before.iter().any(|o| same(o, n)))
        .collect();
    let expr = |f: &PartitionField| {
        let column = column_name(&new.fields, f.source_id)
            .or_else(|| column_name(&old.fields, f.source_id))
            .unwrap_or_else(|| f.source_id.to_string());
        let e = expression(f, &column);
        // Named explicitly unless the name is the column itself (identity's default).
        if f.name.is_empty() || f.name == column {
            e
        } else {
            format!("{e} AS {}", quote(&f.name))
        }
    };
    let mut out = Vec::new();
    let mut push = |sql: String, op: DdlOp| {
        out.push(Statement {
            sql: format!("ALTER TABLE {table} {sql};"),
            op,
        })
    };
    let pairs = removed.len().min(added.len());
    for (o, n) in removed.iter().zip(&added) {
        push(
            format!(
                "REPLACE PARTITION FIELD {} WITH {}",
                quote(&o.name),
                expr(n)
            ),
            DdlOp::ReplacePartitionField {
                field: o.name.clone(),
                with: expr(n),
            },
        );
    }
    for o in &removed[pairs..] {
        push(
            format!("DROP PARTITION FIELD {}", quote(&o.name)),
            DdlOp::DropPartitionField {
                field: o.name.clone(),
            },
        );
    }
    for n in &added[pairs..] {
        push(
            format!("ADD PARTITION FIELD {}", expr(n)),
            DdlOp::AddPartitionField { field: expr(n) },
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use covenant_engine::Format;

    fn table(spec: &str) -> IcebergSchema {
        let text = format!(
            r#"{{"format-version":2,"last-column-id":3,"current-schema-id":0,"schemas":[{{"type":"struct","schema-id":0,"fields":[{{"id":1,"name":"symbol","required":true,"type":"string"}},{{"id":2,"name":"exchange","required":true,"type":"string"}},{{"id":3,"name":"valid_from","required":true,"type":"timestamp"}}]}}],"default-spec-id":0,"partition-specs":[{{"spec-id":0,"fields":{spec}}}]}}"#
        );
        crate::IcebergFormat::parse(&text, &[]).expect("valid metadata")
    }

    #[test]
    fn identity_exchange_to_day_valid_from_is_one_replace() {
        let old =
            table(r#"[{"source-id":2,"field-id":1000,"name":"exchange","transform":"identity"}]"#);
        let new =
            table(r#"[{"source-id":3,"field-id":1001,"name":"valid_from_day","transform":"day"}]"#);
        let sql: Vec<String> = statements(&old, &new, "refdata.silver_instruments")
            .into_iter()
            .map(|s| s.sql)
            .collect();
        assert_eq!(
            sql,
            [
                "ALTER TABLE refdata.silver_instruments REPLACE PARTITION FIELD exchange WITH day(valid_from) AS valid_from_day;"
            ]
        );
        assert_eq!(describe(&old).as_deref(), Some("identity(exchange)"));
        assert_eq!(describe(&new).as_deref(), Some("day(valid_from)"));
        assert!(statements(&old, &old, "t").is_empty());
    }

    #[test]
    fn added_and_dropped_fields_and_transform_arguments() {
        let old = table(
            r#"[{"source-id":2,"field-id":1000,"name":"exchange","transform":"identity"},{"source-id":1,"field-id":1001,"name":"symbol_trunc","transform":"truncate[4]"}]"#,
        );
        let new = table(
            r#"[{"source-id":2,"field-id":1000,"name":"exchange","transform":"identity"},{"source-id":1,"field-id":1002,"name":"symbol_bucket","transform":"bucket[16]"},{"source-id":3,"field-id":1003,"name":"valid_from_month","transform":"month"}]"#,
        );
        let sql: Vec<String> = statements(&old, &new, "t")
            .into_iter()
            .map(|s| s.sql)
            .collect();
        assert_eq!(
            sql,
            [
                "ALTER TABLE t REPLACE PARTITION FIELD symbol_trunc WITH bucket(16, symbol) AS symbol_bucket;",
                "ALTER TABLE t ADD PARTITION FIELD month(valid_from) AS valid_from_month;"
            ]
        );
    }
}

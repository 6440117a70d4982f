//! Parsing (schemas, table metadata, what is refused and why) and the DDL of a change.

use covenant_engine::{Format, Limits, SchemaErrorKind};
use covenant_iceberg::{DdlOp, IcebergFormat, plan_ddl};

fn parse(text: &str) -> covenant_iceberg::IcebergSchema {
    IcebergFormat::parse(text, &[]).unwrap_or_else(|e| panic!("{e}"))
}

fn refused(text: &str, needle: &str) {
    let err = IcebergFormat::parse(text, &[]).expect_err(text);
    assert!(err.to_string().contains(needle), "{needle}: {err}");
}

const V1: &str = r#"{"type":"struct","schema-id":0,"identifier-field-ids":[1],"fields":[
 {"id":1,"name":"instrument_sk","required":true,"type":"string"},
 {"id":2,"name":"tick_size","required":false,"type":"decimal(38, 18)"},
 {"id":3,"name":"max_leverage","required":false,"type":"int"},
 {"id":4,"name":"legacy_code","required":true,"type":"string"}]}"#;

const V2: &str = r#"{"type":"struct","schema-id":1,"identifier-field-ids":[1],"fields":[
 {"id":1,"name":"instrument_sk","required":true,"type":"string"},
 {"id":3,"name":"max_leverage","required":false,"type":"long"},
 {"id":2,"name":"price_increment","required":false,"type":"decimal(38,18)","doc":"Smallest price step"},
 {"id":5,"name":"margin_trading_allowed","required":false,"type":"boolean"}]}"#;

#[test]
fn table_metadata_gives_its_current_schema_partition_spec_and_last_column_id() {
    let meta = format!(
        r#"{{"format-version":2,"table-uuid":"x","location":"s3://b/t","last-column-id":9,"current-schema-id":1,
        "schemas":[{{"type":"struct","schema-id":0,"fields":[{{"id":1,"name":"old","required":false,"type":"int"}}]}},{}],
        "default-spec-id":0,"partition-specs":[{{"spec-id":0,"fields":[{{"source-id":1,"field-id":1000,"name":"sk_bucket","transform":"bucket[16]"}}]}}]}}"#,
        V1.replace(r#""schema-id":0"#, r#""schema-id":1"#)
    );
    let schema = parse(&meta);
    assert_eq!(schema.fields.len(), 4, "the current schema, not the first");
    assert_eq!(schema.last_column_id, Some(9));
    assert_eq!(
        schema.partition.as_ref().map(|p| p[0].transform.as_str()),
        Some("bucket[16]")
    );
    let v1_meta = r#"{"format-version":1,"schema":{"type":"struct","fields":[{"id":1,"name":"a","required":true,"type":"int"}]},"partition-spec":[]}"#;
    assert_eq!(parse(v1_meta).fields[0].name, "a");
}

#[test]
fn invalid_schemas_are_refused_with_a_path_and_reason() {
    refused(
        r#"{"type":"struct","fields":[{"id":1,"name":"a","required":true,"type":"int"},{"id":1,"name":"b","required":true,"type":"int"}]}"#,
        "Field id 1 is already used at /fields/a",
    );
    refused(
        r#"{"type":"struct","fields":[{"id":1,"name":"a","required":true,"type":{"type":"list","element-id":1,"element":"int","element-required":true}}]}"#,
        "already used",
    );
    refused(
        r#"{"type":"struct","fields":[{"id":2147483448,"name":"a","required":true,"type":"int"}]}"#,
        "reserved for metadata columns",
    );
    refused(
        r#"{"type":"struct","fields":[{"id":-1,"name":"a","required":true,"type":"int"}]}"#,
        "out of range",
    );
    refused(
        r#"{"type":"struct","fields":[{"id":1,"name":"a","required":"yes","type":"int"}]}"#,
        "'required' must be true or false",
    );
    refused(
        r#"{"type":"struct","fields":[{"id":1,"name":"a","required":true,"type":"varchar(3)"}]}"#,
        "not an Iceberg type",
    );
    refused(
        r#"{"type":"struct","identifier-field-ids":[1],"fields":[{"id":1,"name":"a","required":true,"type":"double"}]}"#,
        "cannot be of type double",
    );
    refused(
        r#"{"type":"struct","identifier-field-ids":[1],"fields":[{"id":1,"name":"a","required":false,"type":"long"}]}"#,
        "must be required",
    );
    refused(
        r#"{"type":"struct","identifier-field-ids":[2],"fields":[{"id":1,"name":"s","required":false,"type":{"type":"struct","fields":[{"id":2,"name":"k","required":true,"type":"long"}]}}]}"#,
        "optional struct",
    );
    refused(
        r#"{"type":"struct","identifier-field-ids":[3],"fields":[{"id":1,"name":"l","required":true,"type":{"type":"list","element-id":2,"element-required":true,"element":{"type":"struct","fields":[{"id":3,"name":"k","required":true,"type":"long"}]}}}]}"#,
        "list or a map",
    );
    refused(
        r#"{"type":"struct","identifier-field-ids":[7],"fields":[]}"#,
        "not a field of the schema",
    );
    refused(
        r#"{"format-version":2,"current-schema-id":4,"schemas":[]}"#,
        "current-schema-id 4",
    );
    refused(
        r#"{"format-version":2,"last-column-id":1,"current-schema-id":0,"schemas":[{"type":"struct","schema-id":0,"fields":[{"id":5,"name":"a","required":true,"type":"int"}]}]}"#,
        "above the table's last-column-id 1",
    );
    refused(
        r#"{"format-version":2,"current-schema-id":0,"schemas":[{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"a","required":true,"type":"int"}]}],"default-spec-id":0,"partition-specs":[{"spec-id":0,"fields":[{"source-id":8,"field-id":1000,"name":"p","transform":"identity"}]}]}"#,
        "source-id 8",
    );
    refused("[1]", "JSON object");
    refused(
        r#"{"type":"struct","fields":[{"id":1,"name":"a","required":true,"type":"int","initial-default":"x"}]}"#,
        "'initial-default' \"x\" does not fit the field's type int",
    );
    refused(
        r#"{"type":"struct","fields":[{"id":1,"name":"a","required":false,"type":"decimal(9, 2)","write-default":1.5}]}"#,
        "does not fit",
    );
    parse(
        r#"{"type":"struct","fields":[{"id":1,"name":"a","required":true,"type":"decimal(9, 2)","initial-default":"1.50","write-default":"2.00"}]}"#,
    );
    let err = IcebergFormat::parse("{", &[]).expect_err("syntax");
    assert_eq!(err.kind, SchemaErrorKind::Syntax);
}

#[test]
fn depth_and_field_limits_apply() {
    let mut ty = "\"int\"".to_string();
    for i in 0..70 {
        ty = format!(
            r#"{{"type":"list","element-id":{},"element":{ty},"element-required":false}}"#,
            i + 10
        );
    }
    let deep = format!(
        r#"{{"type":"struct","fields":[{{"id":1,"name":"d","required":false,"type":{ty}}}]}}"#
    );
    let err = IcebergFormat::parse(&deep, &[]).expect_err("too deep");
    assert_eq!(err.kind, SchemaErrorKind::LimitExceeded, "{err}");
    let limits = Limits {
        max_fields: 3,
        ..Limits::default()
    };
    let err = IcebergFormat::parse_with(V1, &[], &limits).expect_err("too wide");
    assert!(err.to_string().contains("max-fields = 3"), "{err}");
}

#[test]
fn normalized_form_ignores_layout_schema_id_and_identifier_order() {
    let a = parse(
        r#"{"type":"struct","schema-id":3,"identifier-field-ids":[2,1],"fields":[{"id":1,"name":"a","required":true,"type":"decimal(9,2)"},{"id":2,"name":"b","required":true,"type":"long"}]}"#,
    );
    let b = parse(
        r#"{"fields":[{"type":"decimal(9, 2)","name":"a","id":1,"required":true},{"id":2,"name":"b","required":true,"type":"long"}],"identifier-field-ids":[1,2],"type":"struct"}"#,
    );
    assert_eq!(a.normalized(), b.normalized());
    assert!(a.normalized().contains("\"decimal(9, 2)\""));
}

#[test]
fn the_seed_change_as_spark_ddl_in_a_valid_order() {
    let plan = plan_ddl(&parse(V1), &parse(V2), "refdata.silver_instruments").expect("applicable");
    let sql: Vec<&str> = plan.statements.iter().map(|s| s.sql.as_str()).collect();
    assert_eq!(
        sql,
        [
            "ALTER TABLE refdata.silver_instruments DROP COLUMN legacy_code;",
            "ALTER TABLE refdata.silver_instruments RENAME COLUMN tick_size TO price_increment;",
            "ALTER TABLE refdata.silver_instruments ALTER COLUMN max_leverage TYPE bigint;",
            "ALTER TABLE refdata.silver_instruments ALTER COLUMN price_increment COMMENT 'Smallest price step';",
            "ALTER TABLE refdata.silver_instruments ADD COLUMN margin_trading_allowed boolean;",
            "ALTER TABLE refdata.silver_instruments ALTER COLUMN price_increment AFTER max_leverage;",
        ]
    );
    assert!(
        matches!(&plan.statements[1].op, DdlOp::RenameColumn { path, to } if path == &["tick_size"] && to == "price_increment")
    );
}

#[test]
fn swapped_names_go_through_a_temporary_name() {
    let old = parse(
        r#"{"type":"struct","fields":[{"id":1,"name":"a","required":true,"type":"int"},{"id":2,"name":"b","required":true,"type":"int"}]}"#,
    );
    let new = parse(
        r#"{"type":"struct","fields":[{"id":1,"name":"b","required":true,"type":"int"},{"id":2,"name":"a","required":true,"type":"int"}]}"#,
    );
    let plan = plan_ddl(&old, &new, "t").expect("applicable");
    let sql: Vec<&str> = plan.statements.iter().map(|s| s.sql.as_str()).collect();
    assert_eq!(
        sql,
        [
            "ALTER TABLE t RENAME COLUMN a TO a__renaming;",
            "ALTER TABLE t RENAME COLUMN b TO a;",
            "ALTER TABLE t RENAME COLUMN a__renaming TO b;"
        ]
    );
}

#[test]
fn changes_iceberg_cannot_apply_get_no_ddl() {
    let old = parse(
        r#"{"type":"struct","fields":[{"id":1,"name":"max_leverage","required":false,"type":"int"}]}"#,
    );
    let decimal = parse(
        r#"{"type":"struct","fields":[{"id":1,"name":"max_leverage","required":false,"type":"decimal(10, 2)"}]}"#,
    );
    let findings = plan_ddl(&old, &decimal, "t").expect_err("int to decimal");
    assert_eq!(findings[0].rule, "ICEBERG_TYPE_CHANGED");
    let uuid = parse(
        r#"{"type":"struct","fields":[{"id":1,"name":"max_leverage","required":false,"type":"int"},{"id":2,"name":"u","required":false,"type":"uuid"}]}"#,
    );
    let findings = plan_ddl(&old, &uuid, "t").expect_err("no Spark type");
    assert!(
        findings[0].message.contains("Spark SQL has no type"),
        "{findings:#?}"
    );
}

#[test]
fn nested_additions_promotions_and_identifiers() {
    let old = parse(
        r#"{"type":"struct","identifier-field-ids":[1],"fields":[{"id":1,"name":"id","required":true,"type":"long"},{"id":2,"name":"pts","required":false,"type":{"type":"list","element-id":3,"element-required":true,"element":{"type":"struct","fields":[{"id":4,"name":"x","required":true,"type":"float"}]}}}]}"#,
    );
    let new = parse(
        r#"{"type":"struct","identifier-field-ids":[1,6],"fields":[{"id":1,"name":"id","required":true,"type":"long"},{"id":2,"name":"pts","required":false,"type":{"type":"list","element-id":3,"element-required":false,"element":{"type":"struct","fields":[{"id":4,"name":"x","required":true,"type":"double"},{"id":5,"name":"y","required":false,"type":"double"}]}}},{"id":6,"name":"venue code","required":true,"type":"string","initial-default":"X"}]}"#,
    );
    let err = plan_ddl(&old, &new, "t").expect_err("a default cannot be set in Spark SQL");
    assert!(err[0].message.contains("default value"), "{err:#?}");
    let new = parse(&new_without_venue());
    let plan = plan_ddl(&old, &new, "t").expect("applicable");
    let sql: Vec<&str> = plan.statements.iter().map(|s| s.sql.as_str()).collect();
    assert_eq!(
        sql,
        [
            "ALTER TABLE t ALTER COLUMN pts.element DROP NOT NULL;",
            "ALTER TABLE t ALTER COLUMN pts.element.x TYPE double;",
            "ALTER TABLE t ADD COLUMN pts.element.y double;",
        ]
    );
    let keyed = parse(&new_without_venue().replace(
        r#""identifier-field-ids":[1]"#,
        r#""identifier-field-ids":[]"#,
    ));
    let plan = plan_ddl(&new, &keyed, "t").expect("applicable");
    assert_eq!(
        plan.statements.last().map(|s| s.sql.as_str()),
        Some("ALTER TABLE t DROP IDENTIFIER FIELDS id;")
    );
}

fn new_without_venue() -> String {
    r#"{"type":"struct","identifier-field-ids":[1],"fields":[{"id":1,"name":"id","required":true,"type":"long"},{"id":2,"name":"pts","required":false,"type":{"type":"list","element-id":3,"element-required":false,"element":{"type":"struct","fields":[{"id":4,"name":"x","required":true,"type":"double"},{"id":5,"name":"y","required":false,"type":"double"}]}}}]}"#.to_string()
}

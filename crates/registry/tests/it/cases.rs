//! The inputs that once aborted the process or grew without bound, each a named test, and
//! builders of schemas past one limit for the generators.

use crate::{Outcome, drive, on_worker_stack};
use covenant_engine::{CheckOptions, Level, Limit, Limits, SchemaErrorKind};
use covenant_policy::{PolicyContext, PolicySettings};
use covenant_schema::{ParsedSchema, SchemaType};
use proptest::prelude::RngExt;
use proptest::test_runner::TestRng;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// A verdict must come back within this, even in a debug build on a busy machine (before
/// these cases were fixed they aborted the process or ran for minutes).
const QUICK: Duration = Duration::from_secs(60);

fn judged(schema_type: SchemaType, old: &str, new: &str) -> bool {
    let started = Instant::now();
    let outcome = on_worker_stack(|| drive(schema_type, old, new, &Limits::default()));
    assert!(started.elapsed() < QUICK, "took {:?}", started.elapsed());
    match outcome {
        Outcome::Judged { compatible } => compatible,
        other => panic!("expected a verdict, got {other:?}"),
    }
}

fn refused(schema_type: SchemaType, text: &str, limits: &Limits) -> String {
    let started = Instant::now();
    let err = on_worker_stack(|| ParsedSchema::parse_with(schema_type, text, &[], limits))
        .expect_err("refused");
    assert!(started.elapsed() < QUICK, "took {:?}", started.elapsed());
    assert_eq!(err.kind, SchemaErrorKind::LimitExceeded, "{err}");
    err.to_string()
}

/// The findings of checking `new` against `old` at `level`, on a worker stack.
fn findings(schema_type: SchemaType, old: &str, new: &str, level: Level) -> Vec<(String, String)> {
    on_worker_stack(|| {
        let old = ParsedSchema::parse(schema_type, old, &[]).expect("old parses");
        let new = ParsedSchema::parse(schema_type, new, &[]).expect("new parses");
        covenant_engine::budget::unlimited(|m| {
            covenant_policy::judge(
                m,
                level,
                &new,
                &[(1, &old)],
                &[(1, &old)],
                &CheckOptions::default(),
                &PolicyContext::default(),
                &PolicySettings::default(),
            )
        })
        .errors()
        .map(|f| (f.rule.to_string(), f.path.clone()))
        .collect()
    })
}

// ----- 1: recursive JSON Schema ---------------------------------------------------------

const TREE: &str = r##"{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#"}}}}"##;

#[test]
fn case1_a_recursive_json_schema_is_judged_like_any_other() {
    assert!(
        judged(SchemaType::Json, TREE, TREE),
        "a tree against itself"
    );
    let closed = TREE.replace(
        r#""type":"object","#,
        r#""type":"object","additionalProperties":false,"#,
    );
    let without_name = closed.replace(r#""name":{"type":"string"},"#, "");
    let errors = findings(SchemaType::Json, &closed, &without_name, Level::Backward);
    let paths: Vec<&str> = errors.iter().map(|(_, p)| p.as_str()).collect();
    assert!(
        paths.contains(&"#/properties/name"),
        "the removed property is named at the root: {errors:?}"
    );
    assert!(
        paths.contains(&"#/properties/children/items/properties/name"),
        "and in the recursive children: {errors:?}"
    );
    assert!(!judged(SchemaType::Json, &closed, &without_name));
}

#[test]
fn case1_confluents_recursive_category_tree_is_compatible_with_itself() {
    let category = r##"{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"categories":{"type":"array","items":{"$ref":"#/definitions/Category"}}},"required":["categories"],"definitions":{"Category":{"type":"object","properties":{"category_id":{"type":"integer"},"categories":{"type":"array","items":{"$ref":"#/definitions/Category"}}},"required":["category_id","categories"]}}}"##;
    assert!(judged(SchemaType::Json, category, category));
    let id_as_string = category.replace(
        r#""category_id":{"type":"integer"}"#,
        r#""category_id":{"type":"string"}"#,
    );
    assert!(!judged(SchemaType::Json, category, &id_as_string));
}

#[test]
fn mutual_and_dynamic_json_recursion_is_judged() {
    let mutual = r##"{"$ref":"#/definitions/A","definitions":{"A":{"type":"object","properties":{"b":{"$ref":"#/definitions/B"}}},"B":{"type":"object","properties":{"a":{"$ref":"#/definitions/A"},"v":{"type":"integer"}}}}}"##;
    assert!(judged(SchemaType::Json, mutual, mutual));
    let retyped = mutual.replace(r#""v":{"type":"integer"}"#, r#""v":{"type":"string"}"#);
    assert!(!judged(SchemaType::Json, mutual, &retyped));
    let dynamic = r##"{"$schema":"https://json-schema.org/draft/2020-12/schema","$dynamicAnchor":"node","type":"object","properties":{"kids":{"type":"array","items":{"$dynamicRef":"#node"}}}}"##;
    assert!(judged(SchemaType::Json, dynamic, dynamic));
    let recursive = r##"{"$schema":"https://json-schema.org/draft/2019-09/schema","$recursiveAnchor":true,"type":"object","properties":{"kids":{"type":"array","items":{"$recursiveRef":"#"}}}}"##;
    assert!(judged(SchemaType::Json, recursive, recursive));
}

#[test]
fn a_nullable_wrapper_that_refers_to_itself_ends() {
    let looped = r##"{"definitions":{"A":{"oneOf":[{"type":"null"},{"$ref":"#/definitions/A"}]}},"type":"object","properties":{"a":{"$ref":"#/definitions/A"}}}"##;
    judged(SchemaType::Json, looped, looped);
}

// ----- 2: a long $ref chain -------------------------------------------------------------

fn ref_chain(n: usize) -> String {
    let mut definitions = serde_json::Map::new();
    definitions.insert("d0".into(), json!({"type": "string"}));
    for i in 1..n {
        definitions.insert(
            format!("d{i}"),
            json!({"type": "array", "items": {"$ref": format!("#/definitions/d{}", i - 1)}}),
        );
    }
    json!({"definitions": definitions, "$ref": format!("#/definitions/d{}", n - 1)}).to_string()
}

#[test]
fn case2_a_ref_chain_within_the_depth_limit_is_judged_and_past_it_refused() {
    let limits = Limits::default();
    // Each level is two: the `items` subschema and the `$ref` hop.
    let within = ref_chain(limits.max_depth / 2 - 2);
    assert!(judged(SchemaType::Json, &within, &within));
    let message = refused(SchemaType::Json, &ref_chain(600), &limits);
    assert!(message.contains("max-depth = 64"), "{message}");
    assert!(message.starts_with("#/definitions/d"), "{message}");
}

// ----- 3: Protobuf option aggregates nested 1,000 deep ----------------------------------

fn option_nested(n: usize) -> String {
    format!(
        "syntax = \"proto2\";\nimport \"google/protobuf/descriptor.proto\";\nmessage O {{ optional O o = 1; optional int32 v = 2; }}\nextend google.protobuf.MessageOptions {{ optional O opt = 50001; }}\nmessage M {{ option (opt) = {{ {}v: 1{} }}; optional int32 x = 1; }}\n",
        "o { ".repeat(n),
        " }".repeat(n)
    )
}

#[test]
fn case3_deeply_nested_option_values_are_refused_before_parsing() {
    let within = option_nested(50);
    assert!(judged(SchemaType::Protobuf, &within, &within));
    let message = refused(
        SchemaType::Protobuf,
        &option_nested(1000),
        &Limits::default(),
    );
    assert!(message.contains("max-protobuf-nesting = 64"), "{message}");
    let nested_messages = format!(
        "syntax = \"proto3\";\n{}int32 x = 1;{}",
        "message M { ".repeat(5000),
        " }".repeat(5000)
    );
    refused(SchemaType::Protobuf, &nested_messages, &Limits::default());
}

#[test]
fn recursive_protobuf_messages_are_judged() {
    let tree = "syntax = \"proto3\";\nmessage Node { int32 v = 1; repeated Node children = 2; }\n";
    assert!(judged(SchemaType::Protobuf, tree, tree));
    let retyped = tree.replace("int32 v = 1", "string v = 1");
    assert!(!judged(SchemaType::Protobuf, tree, &retyped));
    let mutual =
        "syntax = \"proto3\";\nmessage A { B b = 1; }\nmessage B { A a = 1; int32 v = 2; }\n";
    assert!(judged(SchemaType::Protobuf, mutual, mutual));
}

// ----- 4: products of two sizes ---------------------------------------------------------

fn avro_union_chain(n: usize, extra: bool) -> String {
    let records: Vec<Value> = (0..n)
        .map(|i| {
            let mut fields = vec![json!({"name": "x", "type": "int"})];
            if i > 0 {
                fields.push(json!({"name": "p", "type": format!("R{}", i - 1)}));
            }
            if extra && i == n - 1 {
                fields.push(json!({"name": "y", "type": "int", "default": 0}));
            }
            json!({"type": "record", "name": format!("R{i}"), "fields": fields})
        })
        .collect();
    Value::Array(records).to_string()
}

#[test]
fn case4_an_avro_union_of_records_referring_to_each_other() {
    let depth = Limits::default().max_depth;
    let (old, new) = (
        avro_union_chain(depth, false),
        avro_union_chain(depth, true),
    );
    assert!(judged(SchemaType::Avro, &old, &new));
    let message = refused(
        SchemaType::Avro,
        &avro_union_chain(300, true),
        &Limits::default(),
    );
    assert!(message.contains("max-depth = 64 (found 300)"), "{message}");
}

#[test]
fn case4_a_wide_union_of_unrelated_records_is_judged_in_time() {
    let union = |n: usize| {
        let records: Vec<Value> = (0..n)
            .map(|i| json!({"type": "record", "name": format!("R{i}"), "fields": [{"name": format!("f{i}"), "type": "int"}]}))
            .collect();
        Value::Array(records).to_string()
    };
    let (old, new) = (union(1000), union(1001));
    let started = Instant::now();
    let backward = findings(SchemaType::Avro, &old, &new, Level::Backward);
    assert!(backward.is_empty(), "a branch added: {backward:?}");
    let forward = findings(SchemaType::Avro, &old, &new, Level::Forward);
    assert_eq!(forward.len(), 1, "old readers lack one branch: {forward:?}");
    assert!(started.elapsed() < QUICK, "took {:?}", started.elapsed());
    judged(SchemaType::Avro, &old, &new);
}

fn any_of(n: usize) -> String {
    let branches: Vec<Value> = (0..n)
        .map(|i| json!({"type": "object", "properties": {format!("p{i}"): {"type": "string"}}, "required": [format!("p{i}")]}))
        .collect();
    json!({"anyOf": branches}).to_string()
}

#[test]
fn case4_a_branch_added_to_a_large_any_of_is_judged_in_time() {
    let (old, new) = (any_of(2000), any_of(2001));
    let errors = findings(SchemaType::Json, &old, &new, Level::Backward);
    assert!(
        errors.is_empty(),
        "adding a branch is backward compatible: {errors:?}"
    );
    let errors = findings(SchemaType::Json, &old, &new, Level::Forward);
    assert!(!errors.is_empty(), "but not forward compatible");
    judged(SchemaType::Json, &old, &new);
    let message = refused(SchemaType::Json, &any_of(3000), &Limits::default());
    assert!(message.contains("max-branches = 2500"), "{message}");
}

#[test]
fn case4_an_avro_record_defining_ten_thousand_named_records() {
    let fields: Vec<Value> = (0..10_000)
        .map(|i| json!({"name": format!("f{i}"), "type": {"type": "record", "name": format!("N{i}"), "fields": [{"name": "a", "type": "int"}]}}))
        .collect();
    let text = json!({"type": "record", "name": "Top", "fields": fields}).to_string();
    assert!(judged(SchemaType::Avro, &text, &text));
}

// ----- 5: wide schemas ------------------------------------------------------------------

#[test]
fn case5_enums_and_records_past_their_limits_are_refused_naming_them() {
    let symbols = |n: usize| (0..n).map(|i| format!("S{i}")).collect::<Vec<_>>();
    let limits = Limits::default();
    let at_limit =
        json!({"type": "enum", "name": "E", "symbols": symbols(limits.max_enum_symbols)})
            .to_string();
    let grown =
        json!({"type": "enum", "name": "E", "symbols": symbols(limits.max_enum_symbols - 1)})
            .to_string();
    let added = findings(SchemaType::Avro, &grown, &at_limit, Level::Backward);
    assert!(added.is_empty(), "a symbol added: {added:?}");
    judged(SchemaType::Avro, &grown, &at_limit);
    let over = json!({"type": "enum", "name": "E", "symbols": symbols(100_000)}).to_string();
    let message = refused(SchemaType::Avro, &over, &limits);
    assert!(message.starts_with("/symbols: "), "{message}");
    assert!(
        message.contains("max-enum-symbols = 50000 (found 100000)"),
        "{message}"
    );
    let fields: Vec<Value> = (0..200_000)
        .map(|i| json!({"name": format!("f{i}"), "type": "int"}))
        .collect();
    let wide = json!({"type": "record", "name": "R", "fields": fields}).to_string();
    let message = refused(SchemaType::Avro, &wide, &limits);
    assert!(message.contains("max-fields = 100000"), "{message}");
}

#[test]
fn case5_a_large_json_schema_is_judged_in_time() {
    let properties: serde_json::Map<String, Value> = (0..10_000)
        .map(|i| {
            (
                format!("p{i}"),
                json!({"type": "string", "description": "x".repeat(20)}),
            )
        })
        .collect();
    let old = json!({"type": "object", "properties": properties}).to_string();
    let mut renamed = properties.clone();
    renamed.remove("p7");
    renamed.insert("q7".into(), json!({"type": "string"}));
    let new = json!({"type": "object", "properties": renamed}).to_string();
    assert!(judged(SchemaType::Json, &old, &old));
    judged(SchemaType::Json, &old, &new);
}

// ----- exponential lowering -------------------------------------------------------------

#[test]
fn a_schema_whose_field_tree_doubles_at_every_level_is_stopped_by_the_budget() {
    // Each definition holds two properties of the one below: 2^25 paths in 25 small lines.
    let mut definitions = serde_json::Map::new();
    definitions.insert("d0".into(), json!({"type": "string"}));
    for i in 1..25 {
        let below = format!("#/definitions/d{}", i - 1);
        definitions.insert(
            format!("d{i}"),
            json!({"type": "object", "properties": {"l": {"$ref": below}, "r": {"$ref": below}}}),
        );
    }
    let text = json!({"definitions": definitions, "$ref": "#/definitions/d24"}).to_string();
    let started = Instant::now();
    let outcome = on_worker_stack(|| drive(SchemaType::Json, &text, &text, &Limits::default()));
    assert!(started.elapsed() < QUICK, "took {:?}", started.elapsed());
    assert_eq!(
        outcome,
        Outcome::OverBudget,
        "a 42250, not a truncated verdict"
    );
}

// ----- builders past one limit, for the generators --------------------------------------

fn small_limits(limit: Limit, value: usize) -> Limits {
    let mut limits = Limits::default();
    match limit {
        Limit::Depth => limits.max_depth = value,
        Limit::NamedTypes => limits.max_named_types = value,
        Limit::Fields => limits.max_fields = value,
        Limit::EnumSymbols => limits.max_enum_symbols = value,
        Limit::Branches => limits.max_branches = value,
        Limit::ProtobufNesting => limits.max_protobuf_nesting = value,
    }
    limits
}

/// An Avro schema one past a random limit set to a random small value.
pub fn avro_past_a_limit(rng: &mut TestRng) -> (String, Limits, Limit) {
    let n = rng.random_range(1..20);
    let over = n + 1 + rng.random_range(0..5);
    let (limit, text) = match rng.random_range(0..5) {
        0 => (Limit::Depth, avro_union_chain(over, false)),
        1 => (
            Limit::EnumSymbols,
            json!({"type": "enum", "name": "E", "symbols": (0..over).map(|i| format!("S{i}")).collect::<Vec<_>>()}).to_string(),
        ),
        2 => (
            Limit::Fields,
            json!({"type": "record", "name": "R", "fields": (0..over).map(|i| json!({"name": format!("f{i}"), "type": "int"})).collect::<Vec<_>>()}).to_string(),
        ),
        3 => (
            Limit::Branches,
            json!((0..over).map(|i| json!({"type": "fixed", "name": format!("F{i}"), "size": 1})).collect::<Vec<_>>()).to_string(),
        ),
        _ => (Limit::NamedTypes, avro_union_chain(over, false)),
    };
    let limits = small_limits(limit, n);
    (text, limits, limit)
}

/// A JSON Schema one past a random limit set to a random small value.
pub fn json_past_a_limit(rng: &mut TestRng) -> (String, Limits, Limit) {
    let n = rng.random_range(2..20);
    let over = n + 1 + rng.random_range(0..5);
    let (limit, text) = match rng.random_range(0..4) {
        0 => (Limit::Depth, ref_chain(over + 1)),
        1 => (
            Limit::EnumSymbols,
            json!({"enum": (0..over).collect::<Vec<_>>()}).to_string(),
        ),
        2 => (
            Limit::Fields,
            json!({"type": "object", "properties": (0..over).map(|i| (format!("p{i}"), json!({"type": "integer"}))).collect::<serde_json::Map<_, _>>()}).to_string(),
        ),
        _ => (Limit::Branches, any_of(over)),
    };
    (text, small_limits(limit, n), limit)
}

/// A Protobuf file one past a random limit set to a random small value.
pub fn proto_past_a_limit(rng: &mut TestRng) -> (String, Limits, Limit) {
    let n = rng.random_range(2..20);
    let over = n + 1 + rng.random_range(0..5);
    let (limit, text) = match rng.random_range(0..4) {
        0 => (Limit::ProtobufNesting, option_nested(over)),
        1 => (
            Limit::EnumSymbols,
            format!(
                "syntax = \"proto3\";\nenum E {{ {} }}\n",
                (0..over)
                    .map(|i| format!("E{i} = {i};"))
                    .collect::<String>()
            ),
        ),
        2 => (
            Limit::Fields,
            format!(
                "syntax = \"proto3\";\nmessage M {{ {} }}\n",
                (1..=over)
                    .map(|i| format!("int32 f{i} = {i};"))
                    .collect::<String>()
            ),
        ),
        _ => (
            Limit::Depth,
            format!(
                "syntax = \"proto3\";\nmessage M0 {{ int32 x = 1; }}\n{}",
                (1..=over)
                    .map(|i| format!("message M{i} {{ M{} p = 1; }}\n", i - 1))
                    .collect::<String>()
            ),
        ),
    };
    // The built-in imports count too: named types and fields are set above them.
    let limits = small_limits(limit, n);
    (text, limits, limit)
}

#[test]
fn a_cycle_through_not_ends() {
    // `not` swaps the roles of reader and writer; a cycle through it once recursed until
    // the stack ran out (found by the generators).
    for text in [
        r##"{"definitions":{"A":{"not":{"$ref":"#/definitions/A"}}},"$ref":"#/definitions/A"}"##,
        r##"{"type":"object","properties":{"x":{"not":{"$ref":"#"}},"y":{"type":"string"}}}"##,
    ] {
        let started = Instant::now();
        let outcome = on_worker_stack(|| drive(SchemaType::Json, text, text, &Limits::default()));
        assert!(started.elapsed() < QUICK, "took {:?}", started.elapsed());
        assert!(
            matches!(outcome, Outcome::Judged { .. }),
            "{text}: {outcome:?}"
        );
    }
    let old =
        r##"{"type":"object","properties":{"x":{"not":{"$ref":"#"}},"y":{"type":"string"}}}"##;
    let new = old.replace(r#""y":{"type":"string"}"#, r#""y":{"type":"integer"}"#);
    assert!(
        !judged(SchemaType::Json, old, &new),
        "a retyped property is still seen"
    );
}

// ----- Iceberg: deep lists and maps, wide structs, ids at the edge ----------------------

/// A column nested `levels` lists deep (each list one level, the table's struct one more).
fn iceberg_nested_lists(levels: usize) -> String {
    let mut ty = json!("long");
    for i in 0..levels {
        ty =
            json!({"type": "list", "element-id": 10 + i, "element-required": false, "element": ty});
    }
    json!({"type": "struct", "fields": [{"id": 1, "name": "deep", "required": false, "type": ty}]})
        .to_string()
}

/// An Iceberg schema one past a random limit set to a random small value.
pub fn iceberg_past_a_limit(rng: &mut TestRng) -> (String, Limits, Limit) {
    let n = rng.random_range(2..20);
    let over = n + 1 + rng.random_range(0..5);
    let (limit, text) = if rng.random_bool(0.5) {
        (Limit::Depth, iceberg_nested_lists(over))
    } else {
        (
            Limit::Fields,
            json!({"type": "struct", "fields": (0..over).map(|i| json!({"id": i + 1, "name": format!("f{i}"), "required": false, "type": "int"})).collect::<Vec<_>>()}).to_string(),
        )
    };
    (text, small_limits(limit, n), limit)
}

#[test]
fn iceberg_deep_lists_and_maps_within_the_limit_are_judged_and_past_it_refused() {
    let depth = Limits::default().max_depth;
    let within = iceberg_nested_lists(depth - 1);
    assert!(judged(SchemaType::Iceberg, &within, &within));
    let promoted = within.replace("\"long\"", "\"int\"");
    assert!(
        !judged(SchemaType::Iceberg, &within, &promoted),
        "long to int deep inside lists"
    );
    let message = refused(
        SchemaType::Iceberg,
        &iceberg_nested_lists(depth + 5),
        &Limits::default(),
    );
    assert!(message.contains("max-depth"), "{message}");
    let mut ty = json!("string");
    for i in 0..depth - 1 {
        ty = json!({"type": "map", "key-id": 100 + 2 * i, "key": "string", "value-id": 101 + 2 * i, "value-required": false, "value": ty});
    }
    let maps = json!({"type": "struct", "fields": [{"id": 1, "name": "m", "required": false, "type": ty}]}).to_string();
    assert!(judged(SchemaType::Iceberg, &maps, &maps));
}

#[test]
fn iceberg_wide_structs_and_edge_ids() {
    let wide = |n: usize| {
        json!({"type": "struct", "fields": (0..n).map(|i| json!({"id": i + 1, "name": format!("c{i}"), "required": false, "type": "long"})).collect::<Vec<_>>()}).to_string()
    };
    let (old, new) = (wide(10_000), wide(10_001));
    assert!(
        judged(SchemaType::Iceberg, &old, &new),
        "an optional column added to 10,000"
    );
    let message = refused(
        SchemaType::Iceberg,
        &wide(Limits::default().max_fields + 1),
        &Limits::default(),
    );
    assert!(message.contains("max-fields"), "{message}");
    let edge = json!({"type": "struct", "fields": [{"id": 2_147_483_447, "name": "last", "required": false, "type": "int"}]}).to_string();
    assert!(judged(SchemaType::Iceberg, &edge, &edge));
    for id in ["2147483448", "9223372036854775807", "1e40", "-1"] {
        let text = format!(
            r#"{{"type":"struct","fields":[{{"id":{id},"name":"x","required":false,"type":"int"}}]}}"#
        );
        let err = ParsedSchema::parse(SchemaType::Iceberg, &text, &[]).expect_err(id);
        assert_eq!(err.kind, SchemaErrorKind::Invalid, "{id}: {err}");
    }
}

// ----- Protobuf text: the shapes the text parser's own loops see --------------------------

/// Comments by the hundred thousand, long runs of literals, options and empty statements,
/// numbers longer than any integer, nesting past protoc's bound and declarations before
/// thousands of fields (the locations' sort falls back from insertion): each is judged, or
/// refused as invalid or over a limit, within [`QUICK`], and never takes the process down.
#[test]
fn protobuf_text_of_hostile_shapes_is_judged_or_refused_quickly() {
    let head = "syntax = \"proto3\";\n";
    let mut cases: Vec<(&str, String)> = vec![
        (
            "line comments",
            format!(
                "{head}{}message M {{ int32 a = 1; }}\n",
                "// c\n".repeat(200_000)
            ),
        ),
        (
            "block comments between tokens",
            format!(
                "{head}message M {{ int32 {}a = 1; }}\n",
                "/* c */ ".repeat(100_000)
            ),
        ),
        (
            "one block comment of many lines",
            format!(
                "{head}/*{}*/\nmessage M {{ int32 a = 1; }}\n",
                "\n * x".repeat(200_000)
            ),
        ),
        (
            "an unterminated block comment",
            format!(
                "{head}message M {{ int32 a = 1; }}\n/*{}",
                " x\n".repeat(100_000)
            ),
        ),
        (
            "adjacent string literals",
            format!(
                "{head}option java_package = {};\nmessage M {{ int32 a = 1; }}\n",
                "\"a\" ".repeat(50_000)
            ),
        ),
        (
            "options in one list",
            format!(
                "{head}message M {{ int32 a = 1 [{}]; }}\n",
                vec!["deprecated = true"; 20_000].join(", ")
            ),
        ),
        (
            "a number of many digits",
            format!("{head}message M {{ int32 a = {}; }}\n", "9".repeat(100_000)),
        ),
        (
            "empty statements",
            format!(
                "{head}{}message M {{ {} int32 a = 1; }}\n",
                ";".repeat(100_000),
                ";".repeat(100_000)
            ),
        ),
        (
            "nesting past protoc's bound",
            format!(
                "{head}{}int32 a = 1;{}\n",
                (0..40)
                    .map(|i| format!("message N{i} {{ "))
                    .collect::<String>(),
                " }".repeat(40)
            ),
        ),
    ];
    let mut declarations_first = format!("{head}message Outer {{\n");
    for i in 0..200 {
        declarations_first.push_str(&format!("  enum E{i} {{ E{i}_ZERO = 0; }}\n"));
    }
    for i in 1..=2_000 {
        declarations_first.push_str(&format!("  E{} f{i} = {i};\n", i % 200));
    }
    declarations_first.push_str("}\n");
    cases.push(("declarations before many fields", declarations_first));
    // Each simple type name is looked for in every enclosing scope before the pool resolves
    // it (`qualify`): 30 scopes for each of 20,000 names defined nowhere.
    let deep = (0..30)
        .map(|i| format!("message Scope{i} {{ "))
        .collect::<String>();
    let fields = (1..=20_000)
        .map(|i| format!("Undefined{i} f{i} = {i}; "))
        .collect::<String>();
    cases.push((
        "undefined types deep in nested messages",
        format!("{head}package a.b.c;\n{deep}{fields}{}\n", " }".repeat(30)),
    ));
    for (name, text) in cases {
        let started = Instant::now();
        let outcome =
            on_worker_stack(|| drive(SchemaType::Protobuf, &text, &text, &Limits::default()));
        assert!(
            started.elapsed() < QUICK,
            "{name}: took {:?}",
            started.elapsed()
        );
        match outcome {
            Outcome::Judged { compatible } => assert!(compatible, "{name}: a file against itself"),
            Outcome::Invalid(_) | Outcome::OverBudget => {}
        }
    }
}

//! Parsing Canonical Form and fingerprints, cross-checked with the `apache-avro` crate and
//! the specification's published values.

use covenant_avro::{AvroFormat, AvroSchema};
use covenant_engine::Format;
use serde_json::Value;
use std::path::Path;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/peer-corpus");

fn parse(text: &str) -> AvroSchema {
    AvroFormat::parse(text, &[]).expect("schema parses")
}

fn apache(text: &str) -> Option<(String, u64)> {
    let s = apache_avro::Schema::parse_str(text).ok()?;
    let fp = s.fingerprint::<apache_avro::rabin::Rabin>();
    let mut b = [0u8; 8];
    b.copy_from_slice(&fp.bytes);
    Some((s.canonical_form(), u64::from_le_bytes(b)))
}

#[test]
fn specification_values() {
    assert_eq!(parse("\"null\"").rabin_fingerprint(), 0x63dd_24e7_cc25_8f8a);
    assert_eq!(parse(r#"{"type":"int"}"#).canonical_form(), "\"int\"");
    let s = parse(
        r#"{"type":"record","name":"R","namespace":"a.b","doc":"x","fields":[
            {"name":"f","type":{"type":"enum","name":"E","symbols":["A"],"default":"A"},"default":"A","doc":"d"},
            {"name":"g","type":{"type":"fixed","name":"c.F","size":3,"aliases":["G"]}},
            {"name":"h","type":["null","E",{"type":"long","logicalType":"timestamp-millis"}]},
            {"name":"i","type":{"type":"map","values":{"type":"array","items":"c.F"}}}]}"#,
    );
    assert_eq!(
        s.canonical_form(),
        r#"{"name":"a.b.R","type":"record","fields":[{"name":"f","type":{"name":"a.b.E","type":"enum","symbols":["A"]}},{"name":"g","type":{"name":"c.F","type":"fixed","size":3}},{"name":"h","type":["null","a.b.E","long"]},{"name":"i","type":{"type":"map","values":{"type":"array","items":"c.F"}}}]}"#
    );
    let hex: String = s
        .sha256_fingerprint()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(hex.len(), 64);
}

#[test]
fn matches_apache_avro_on_the_corpus() {
    let mut texts = vec![
        "\"string\"".to_string(),
        r#"{"type":"array","items":{"type":"map","values":"bytes"}}"#.to_string(),
        r#"{"type":"error","name":"Oops","fields":[{"name":"m","type":"string"}]}"#.to_string(),
        r#"{"type":"record","name":"L","fields":[{"name":"n","type":["null","L"]}]}"#.to_string(),
    ];
    let corpus = Path::new(CORPUS).join("avro.jsonl");
    if corpus.exists() {
        for line in std::fs::read_to_string(corpus).expect("readable").lines() {
            let case: Value = serde_json::from_str(line).expect("json");
            if case.get("references").is_some() {
                continue;
            }
            for k in ["writer", "reader"] {
                texts.push(case[k].as_str().unwrap_or_default().to_string());
            }
        }
    } else {
        println!("peer corpus not found; checking built-in schemas only");
    }
    texts.sort();
    texts.dedup();
    let mut compared = 0;
    for t in &texts {
        let (Ok(ours), Some((pcf, fp))) = (AvroFormat::parse(t, &[]), apache(t)) else {
            continue;
        };
        assert_eq!(ours.canonical_form(), pcf, "canonical form of {t}");
        assert_eq!(ours.rabin_fingerprint(), fp, "fingerprint of {t}");
        compared += 1;
    }
    println!(
        "canonical form: {compared}/{} schemas compared with apache-avro",
        texts.len()
    );
    assert!(compared >= 4);
}

#[test]
fn normalized_ignores_whitespace_key_order_and_namespace_spelling() {
    let a = parse(
        r#"{"type":"record","name":"R","namespace":"x","fields":[{"name":"a","type":"int","default":1}]}"#,
    );
    let b = parse(
        r#"{ "fields" : [ {"default":1, "type":"int", "name":"a"} ], "name" : "x.R", "type":"record" }"#,
    );
    assert_eq!(AvroFormat::normalized(&a), AvroFormat::normalized(&b));
    let c = parse(
        r#"{"type":"record","name":"R","namespace":"x","fields":[{"name":"a","type":"int","default":2}]}"#,
    );
    assert_ne!(AvroFormat::normalized(&a), AvroFormat::normalized(&c));
    assert_eq!(a.canonical_form(), c.canonical_form());
}

#[test]
fn references_stay_names_when_normalized_and_are_inlined_when_resolved() {
    let refs = [covenant_engine::Reference {
        name: "country.avsc".into(),
        subject: "country".into(),
        version: 1,
        schema: r#"{"type":"record","name":"Country","namespace":"geo","fields":[{"name":"code","type":"string"}]}"#.into(),
    }];
    let s = AvroFormat::parse(
        r#"{"type":"record","name":"Address","namespace":"geo","fields":[{"name":"country","type":"Country"}]}"#,
        &refs,
    )
    .expect("parses with reference");
    assert!(AvroFormat::normalized(&s).contains(r#""type":"geo.Country""#));
    assert!(s.resolved_form().contains(r#""name":"geo.Country""#));
    assert!(
        s.canonical_form()
            .contains(r#"{"name":"geo.Country","type":"record""#)
    );
    let missing = AvroFormat::parse(
        r#"{"type":"record","name":"Address","namespace":"geo","fields":[{"name":"country","type":"Country"}]}"#,
        &[],
    );
    let err = missing.expect_err("unknown without the reference");
    assert_eq!(err.path, "/fields/country/type");
}

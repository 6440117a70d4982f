//! Truth by data: generated schema evolutions are checked by our rules, and data written with
//! the writer is decoded with the reader by the specification's resolution (ours, and the
//! `apache-avro` crate's as a second opinion). Compatible means every datum decodes, with
//! kept fields unchanged and added fields at their defaults; incompatible means some datum
//! fails, unless the incompatibility is data-dependent and the sample never hit it (an enum
//! symbol or union branch never written, an array or map that happened to be empty).

use covenant_avro::{AvroFormat, AvroSchema, decode_with, encode_with};
use covenant_engine::budget::unlimited;
use covenant_engine::{CheckOptions, Finding, Format, Severity};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Small deterministic generator, so one proptest seed describes a whole case.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

const SYMBOLS: [&str; 4] = ["A", "B", "C", "D"];

fn primitive(rng: &mut Rng) -> Value {
    let p = [
        "int", "long", "float", "double", "string", "bytes", "boolean",
    ];
    json!(p[rng.below(p.len())])
}

/// A field type; named types get names unique within the schema via `counter`.
fn field_type(rng: &mut Rng, depth: usize, counter: &mut usize) -> Value {
    *counter += 1;
    match rng.below(if depth > 1 { 3 } else { 8 }) {
        0 | 1 => primitive(rng),
        2 => {
            let n = 2 + rng.below(3);
            json!({"type":"enum","name":format!("E{counter}"),"symbols":SYMBOLS[..n]})
        }
        3 => json!(["null", primitive(rng)]),
        4 => json!({"type":"array","items":field_type(rng, depth + 1, counter)}),
        5 => json!({"type":"map","values":field_type(rng, depth + 1, counter)}),
        6 => {
            json!(["null", primitive(rng), {"type":"enum","name":format!("U{counter}"),"symbols":["X","Y"]}])
        }
        _ => record(rng, depth + 1, counter, &format!("N{counter}")),
    }
}

fn record(rng: &mut Rng, depth: usize, counter: &mut usize, name: &str) -> Value {
    let n = 1 + rng.below(4);
    let fields: Vec<Value> = (0..n)
        .map(|i| json!({"name": format!("f{i}"), "type": field_type(rng, depth, counter)}))
        .collect();
    json!({"type":"record","name":name,"fields":fields})
}

/// One evolution step of a type: safe, unsafe or neutral.
fn evolve_type(rng: &mut Rng, ty: &Value) -> Value {
    if let Some(p) = ty.as_str() {
        let options: &[&str] = match p {
            "int" => &["long", "float", "double", "string"],
            "long" => &["float", "double", "int"],
            "float" => &["double", "long"],
            "double" => &["float"],
            "string" => &["bytes", "int"],
            "bytes" => &["string"],
            _ => &["int"],
        };
        return match rng.below(3) {
            0 => json!(options[rng.below(options.len())]),
            1 => json!(["null", p]),
            _ => ty.clone(),
        };
    }
    if let Some(branches) = ty.as_array() {
        let mut b = branches.clone();
        match rng.below(3) {
            0 if b.len() > 1 => {
                b.remove(1 + rng.below(b.len() - 1));
            }
            1 if !b.contains(&json!("string")) => b.push(json!("string")),
            _ => return b[b.len() - 1].clone(),
        }
        return Value::Array(b);
    }
    let mut t = ty.clone();
    match ty["type"].as_str() {
        Some("enum") => {
            let mut symbols: Vec<Value> = ty["symbols"].as_array().cloned().unwrap_or_default();
            match rng.below(3) {
                0 if symbols.len() > 1 => {
                    symbols.pop();
                }
                1 if symbols.len() < 4 => symbols.push(json!(SYMBOLS[symbols.len()])),
                _ => {
                    symbols.pop();
                    t["default"] = symbols[0].clone();
                }
            }
            t["symbols"] = Value::Array(symbols);
        }
        Some("array") => t["items"] = evolve_type(rng, &ty["items"]),
        Some("map") => t["values"] = evolve_type(rng, &ty["values"]),
        Some("record") => t = evolve_record(rng, ty),
        _ => {}
    }
    t
}

fn default_for(ty: &Value) -> Option<Value> {
    Some(match ty {
        Value::String(p) => match p.as_str() {
            "int" | "long" => json!(7),
            "float" | "double" => json!(1.5),
            "string" | "bytes" => json!("d"),
            "boolean" => json!(true),
            _ => return None,
        },
        Value::Array(b) if b.first() == Some(&json!("null")) => Value::Null,
        Value::Object(o) => match o.get("type").and_then(Value::as_str) {
            Some("enum") => o["symbols"][0].clone(),
            Some("array") => json!([]),
            Some("map") => json!({}),
            _ => return None,
        },
        _ => return None,
    })
}

fn evolve_record(rng: &mut Rng, rec: &Value) -> Value {
    let mut fields: Vec<Value> = Vec::new();
    for f in rec["fields"].as_array().cloned().unwrap_or_default() {
        match rng.below(6) {
            0 => continue, // removed
            1 => {
                let mut g = f.clone();
                g["type"] = evolve_type(rng, &f["type"]);
                fields.push(g);
            }
            _ => fields.push(f),
        }
    }
    for _ in 0..rng.below(3) {
        let ty = primitive(rng);
        let mut f = json!({"name": format!("added{}", fields.len()), "type": ty});
        if rng.chance(70)
            && let Some(d) = default_for(&f["type"])
        {
            f["default"] = d;
        }
        fields.push(f);
    }
    let mut out = rec.clone();
    out["fields"] = Value::Array(fields);
    out
}

fn datum(rng: &mut Rng, ty: &Value) -> Value {
    match ty {
        Value::String(p) => match p.as_str() {
            "null" => Value::Null,
            "boolean" => json!(rng.chance(50)),
            "int" => json!(rng.below(2000) as i64 - 1000),
            "long" => json!((rng.next() >> 20) as i64 - (1 << 40)),
            "float" | "double" => json!(rng.below(1000) as f64 / 4.0),
            "string" => json!(format!("s{}", rng.below(100))),
            // Valid UTF-8: bytes read as string are decoded as UTF-8, and the spec leaves
            // invalid sequences to the implementation (apache-avro fails, Java replaces).
            "bytes" => json!(format!("b{}", rng.below(10))),
            _ => Value::Null,
        },
        Value::Array(branches) => {
            let b = &branches[rng.below(branches.len())];
            if b == "null" {
                return Value::Null;
            }
            let label = b
                .as_str()
                .map(str::to_string)
                .or_else(|| b["name"].as_str().map(str::to_string))
                .unwrap_or_default();
            json!({ label: datum(rng, b) })
        }
        Value::Object(o) => match o.get("type").and_then(Value::as_str) {
            Some("enum") => {
                let s = o["symbols"].as_array().cloned().unwrap_or_default();
                s[rng.below(s.len())].clone()
            }
            Some("array") => {
                let n = if rng.chance(80) { 1 + rng.below(3) } else { 0 };
                Value::Array((0..n).map(|_| datum(rng, &o["items"])).collect())
            }
            Some("map") => {
                let n = if rng.chance(80) { 1 + rng.below(3) } else { 0 };
                Value::Object(
                    (0..n)
                        .map(|i| (format!("k{i}"), datum(rng, &o["values"])))
                        .collect(),
                )
            }
            Some("record") => Value::Object(
                o["fields"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .iter()
                    .map(|f| {
                        (
                            f["name"].as_str().unwrap_or_default().to_string(),
                            datum(rng, &f["type"]),
                        )
                    })
                    .collect(),
            ),
            _ => Value::Null,
        },
        _ => Value::Null,
    }
}

fn data_dependent(f: &Finding) -> bool {
    matches!(
        f.rule.as_ref(),
        "MISSING_ENUM_SYMBOLS" | "MISSING_UNION_BRANCH"
    ) || f.path.contains("/items")
        || f.path.contains("/values")
        || f.message.contains("writer type 'null'")
}

fn apache_decodes(writer: &str, reader: &str, bytes: &[u8]) -> Result<(), String> {
    let w = apache_avro::Schema::parse_str(writer).map_err(|e| e.to_string())?;
    let r = apache_avro::Schema::parse_str(reader).map_err(|e| e.to_string())?;
    let reader = apache_avro::reader::datum::GenericDatumReader::builder(&w)
        .reader_schema(&r)
        .build()
        .map_err(|e| e.to_string())?;
    reader
        .read_value(&mut &bytes[..])
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn run_case(seed: u64) -> Result<(), TestCaseError> {
    let mut rng = Rng(seed | 1);
    let mut counter = 0;
    let writer_json = record(&mut rng, 0, &mut counter, "Root");
    let reader_json = evolve_record(&mut rng, &writer_json);
    let (wt, rt) = (writer_json.to_string(), reader_json.to_string());
    let writer: AvroSchema =
        AvroFormat::parse(&wt, &[]).map_err(|e| TestCaseError::fail(format!("{e}: {wt}")))?;
    let reader: AvroSchema =
        AvroFormat::parse(&rt, &[]).map_err(|e| TestCaseError::fail(format!("{e}: {rt}")))?;
    let errors: Vec<Finding> =
        unlimited(|m| AvroFormat::check(m, &reader, &writer, &CheckOptions::default()))
            .into_iter()
            .filter(|f| f.severity == Severity::Error)
            .collect();
    let mut failed = None;
    for _ in 0..48 {
        let d = datum(&mut rng, &writer_json);
        let bytes = encode_with(&writer, &d)
            .map_err(|e| TestCaseError::fail(format!("encode {d}: {e}")))?;
        match unlimited(|m| decode_with(m, &writer, &reader, &bytes)) {
            Err(e) => {
                failed.get_or_insert(e);
            }
            Ok(v) => {
                // Kept fields with an unchanged type read back as written; added ones as defaults.
                for rf in reader_json["fields"].as_array().into_iter().flatten() {
                    let name = rf["name"].as_str().unwrap_or_default();
                    let wf = writer_json["fields"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .find(|f| f["name"] == name);
                    match wf {
                        Some(wf) if wf["type"] == rf["type"] => {
                            prop_assert_eq!(&v[name], &d[name], "field {} of {} / {}", name, wt, rt)
                        }
                        None if rf["type"].is_string() => {
                            let dv = &rf["default"];
                            prop_assert_eq!(&v[name], dv, "added field {}", name)
                        }
                        _ => {}
                    }
                }
                if errors.is_empty() {
                    apache_decodes(&wt, &rt, &bytes).map_err(|e| {
                        TestCaseError::fail(format!(
                            "apache-avro fails where we say compatible: {e}\n{wt}\n{rt}"
                        ))
                    })?;
                }
            }
        }
    }
    if errors.is_empty() {
        prop_assert!(
            failed.is_none(),
            "compatible but a datum failed: {:?}\nwriter {}\nreader {}",
            failed,
            wt,
            rt
        );
    } else if failed.is_none() {
        prop_assert!(
            errors.iter().all(data_dependent),
            "incompatible ({:?}) but every datum decoded\nwriter {}\nreader {}",
            errors
                .iter()
                .map(|f| (&f.rule, &f.path))
                .collect::<Vec<_>>(),
            wt,
            rt
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]
    #[test]
    fn checker_agrees_with_resolution(seed in any::<u64>()) {
        run_case(seed)?;
    }
}

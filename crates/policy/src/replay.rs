//! Sample replay: backfill is the ultimate compatibility test.
//!
//! Stored payloads of earlier versions are decoded with the candidate schema as reader, the
//! way a consumer running the new schema would meet them during a replay or backfill. A
//! payload that no longer decodes is an error finding naming the sample, its version and the
//! decode error, whatever the structural verdict was. Decoding is not enough: an Avro payload
//! is also decoded with logical types applied by its own schema and by the candidate, and a
//! field whose value differs (text read as a decimal, milliseconds read as microseconds) is
//! the same error.
//!
//! The other direction, for FORWARD and FULL levels: payloads written with the candidate
//! (submitted alongside it) are decoded with each earlier version in scope as reader, the way
//! a consumer still running an old schema meets the new producer's records. A payload an old
//! reader cannot decode, or (Avro) reads into a different value than the candidate does for a
//! field both share, is an error finding of its own rule.
//!
//! Encodings (the payload bytes as a producer wrote them):
//!
//! | encoding | formats | bytes |
//! |---|---|---|
//! | `avro` | Avro | Avro binary, no framing |
//! | `protobuf` | Protobuf | Protobuf binary of the message named by `messageName` |
//! | `json` | JSON Schema | a UTF-8 JSON document |
//! | `confluent` | all | Confluent wire format: magic byte 0, 4-byte big-endian schema id, then (Protobuf) the message indexes, then the payload |

use covenant_engine::budget::{Budget, BudgetExceeded, Metered};
use covenant_engine::{Finding, RuleSpec, Severity};
use covenant_schema::ParsedSchema;
use std::time::{Duration, Instant};

/// Units of work one sample's replay may spend (about 512 MiB; a unit is about 64 bytes):
/// far more than a payload within the registry's size limit needs, and what it decodes into
/// is dropped before the next sample. Each sample is also charged, to the check's budget,
/// the bytes it holds.
pub const SAMPLE_MAX_WORK: u64 = 8_000_000;

pub static SAMPLE_REPLAY_FAILED: RuleSpec = RuleSpec {
    id: "SAMPLE_REPLAY_FAILED",
    format: "any",
    category: "replay",
    default_severity: Severity::Error,
    summary: "A stored sample payload of an earlier version no longer decodes with the new schema as reader, or (Avro) decodes into a different value than its own schema gives, logical types applied (text read as a decimal, milliseconds read as microseconds). Source: schema-evolution-rules §13, Rule 7.",
    bad_example: "v1 wrote {\"id\": 7, \"kind\": \"refund\"} (kind: string); v3 dropped 'kind'; v4 adds \"kind\": int with default 0 and is compatible with v3, but cannot read v1's records",
    good_example: "v4 adds the field under a new name (\"kindCode\": int, default 0), so v1 records still resolve; or the compatibility scope excludes v1 once no v1 data is replayable",
    hint: "Historical data of this version is still replayable and the new schema cannot read it: keep the change readable for it (new field name, compatible type), or narrow the subject's compatibilityScope once that data is gone, or remove the sample if it no longer represents real data.",
    peers: &[],
};

pub static SAMPLE_REPLAY_INCOMPLETE: RuleSpec = RuleSpec {
    id: "SAMPLE_REPLAY_INCOMPLETE",
    format: "any",
    category: "replay",
    default_severity: Severity::Warning,
    summary: "Sample replay stopped before every stored sample was decoded because the check's time budget was spent.",
    bad_example: "thousands of large samples per version, replayed on every registration",
    good_example: "a few representative samples per version and shape (one per event type, edge values included)",
    hint: "Keep a few representative samples per version rather than bulk data, or run the replay offline against a copy of the data.",
    peers: &[],
};

pub static SAMPLE_FORWARD_REPLAY_FAILED: RuleSpec = RuleSpec {
    id: "SAMPLE_FORWARD_REPLAY_FAILED",
    format: "any",
    category: "replay",
    default_severity: Severity::Error,
    summary: "Under a FORWARD or FULL level, a sample payload written with the new schema (submitted alongside it) does not decode with an earlier version in scope as reader, or (Avro) decodes into a different value for a field both share. Old consumers meet the new producer's records. Source: schema-evolution-rules §2.2, §18.",
    bad_example: "v2 writes \"amount\" as {\"type\":\"bytes\",\"logicalType\":\"decimal\"} where v1 read a string: a v2 record decodes with v1 but its amount reads as garbage text; or a JSON Schema v2 allows \"status\": \"ON_HOLD\" that v1's enum rejects",
    good_example: "v2 adds an optional field that v1 readers skip; every v2 sample decodes with v1 to the same values",
    hint: "Consumers still on the earlier version will read these records: keep the change readable for them (a new field beside the old one, a value they accept), upgrade those consumers first and use a BACKWARD level, or drop the sample if it does not represent what the producer will write.",
    peers: &[],
};

/// The replay rules, in catalog order.
pub fn replay_rules() -> &'static [&'static RuleSpec] {
    static RULES: [&RuleSpec; 3] = [
        &SAMPLE_REPLAY_FAILED,
        &SAMPLE_FORWARD_REPLAY_FAILED,
        &SAMPLE_REPLAY_INCOMPLETE,
    ];
    &RULES
}

/// How a sample's bytes are framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleEncoding {
    Avro,
    Protobuf,
    Json,
    Confluent,
}

impl SampleEncoding {
    pub fn parse(text: &str) -> Option<SampleEncoding> {
        match text.trim().to_ascii_lowercase().as_str() {
            "avro" => Some(SampleEncoding::Avro),
            "protobuf" => Some(SampleEncoding::Protobuf),
            "json" => Some(SampleEncoding::Json),
            "confluent" => Some(SampleEncoding::Confluent),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SampleEncoding::Avro => "avro",
            SampleEncoding::Protobuf => "protobuf",
            SampleEncoding::Json => "json",
            SampleEncoding::Confluent => "confluent",
        }
    }
}

/// One stored payload and the version that wrote it.
#[derive(Debug, Clone, Copy)]
pub struct Sample<'a> {
    pub id: i64,
    pub version: i64,
    pub encoding: SampleEncoding,
    /// Protobuf: the full name of the message, required without Confluent framing.
    pub message_name: Option<&'a str>,
    pub payload: &'a [u8],
}

/// The Confluent wire-format header: magic byte and schema id, and the rest.
pub fn split_confluent(bytes: &[u8]) -> Result<(i64, &[u8]), String> {
    match bytes {
        [0, a, b, c, d, rest @ ..] => Ok((i64::from(i32::from_be_bytes([*a, *b, *c, *d])), rest)),
        [m, ..] if *m != 0 => Err(format!(
            "Unknown magic byte {m}: the Confluent wire format starts with 0."
        )),
        _ => Err("The payload is shorter than the 5-byte Confluent header.".into()),
    }
}

/// The value a Confluent-framed payload's body (after [`split_confluent`]) holds, decoded with
/// the schema that wrote it, as JSON: Avro and Protobuf decoded, JSON Schema payloads parsed;
/// charged to the budget `m` proves installed.
pub fn decode_framed_body(
    m: Metered<'_>,
    writer: &ParsedSchema,
    body: &[u8],
) -> Result<serde_json::Value, String> {
    match writer {
        ParsedSchema::Avro(w) => covenant_avro::decode_with(m, w, w, body),
        ParsedSchema::Protobuf(w) => {
            let (indexes, used) = covenant_protobuf::decode_message_indexes(body)?;
            let name = w.message_name(&indexes).ok_or_else(|| {
                format!("Message indexes {indexes:?} name no message of the writer schema.")
            })?;
            covenant_protobuf::decode_with(m, w, &name, body.get(used..).unwrap_or_default())
        }
        ParsedSchema::Json(_) => json_document(body),
        ParsedSchema::Iceberg(_) => Err(NO_ICEBERG_SAMPLES.into()),
    }
}

/// The error of a decoding stopped because the installed work budget is spent.
const BUDGET_SPENT: &str = "Decoding the payload ran out of the check's budget.";

/// A JSON payload as a document. Every value takes at least one byte of the payload and the
/// parser stops at its nesting limit, so the payload's size bounds what it makes; that is
/// charged to the installed budget first (about a unit for every two bytes).
fn json_document(body: &[u8]) -> Result<serde_json::Value, String> {
    if covenant_engine::budget::charge(body.len() as u64 / 2 + 1) {
        return Err(BUDGET_SPENT.into());
    }
    serde_json::from_slice(body).map_err(|e| format!("The payload is not JSON: {e}."))
}

/// Why an Iceberg schema takes no samples.
const NO_ICEBERG_SAMPLES: &str = "An ICEBERG table schema takes no message samples: its rows live in the table's data files, not in framed messages.";

/// Checks that an encoding fits the schema type before anything is stored.
pub fn check_encoding(
    schema: &ParsedSchema,
    encoding: SampleEncoding,
    message_name: Option<&str>,
) -> Result<(), String> {
    if let ParsedSchema::Iceberg(_) = schema {
        return Err(NO_ICEBERG_SAMPLES.into());
    }
    let fits = matches!(
        (schema, encoding),
        (_, SampleEncoding::Confluent)
            | (ParsedSchema::Avro(_), SampleEncoding::Avro)
            | (ParsedSchema::Protobuf(_), SampleEncoding::Protobuf)
            | (ParsedSchema::Json(_), SampleEncoding::Json)
    );
    if !fits {
        return Err(format!(
            "Encoding '{}' does not fit a {} schema; use 'confluent' or '{}'.",
            encoding.as_str(),
            schema_type(schema),
            match schema {
                ParsedSchema::Avro(_) => "avro",
                ParsedSchema::Protobuf(_) => "protobuf",
                ParsedSchema::Json(_) | ParsedSchema::Iceberg(_) => "json",
            }
        ));
    }
    if encoding == SampleEncoding::Protobuf && message_name.is_none_or(|m| m.trim().is_empty()) {
        return Err("A 'protobuf' sample needs 'messageName' (the message's full name).".into());
    }
    Ok(())
}

fn schema_type(schema: &ParsedSchema) -> &'static str {
    match schema {
        ParsedSchema::Avro(_) => "AVRO",
        ParsedSchema::Protobuf(_) => "PROTOBUF",
        ParsedSchema::Json(_) => "JSON",
        ParsedSchema::Iceberg(_) => "ICEBERG",
    }
}

/// Decodes `sample`, written with `writer`, using `reader`, under the budget `m` proves
/// installed. The error is the decoder's, in one sentence.
pub fn decode_sample(
    m: Metered<'_>,
    writer: &ParsedSchema,
    reader: &ParsedSchema,
    sample: &Sample<'_>,
) -> Result<(), String> {
    let framed = sample.encoding == SampleEncoding::Confluent;
    let body = if framed {
        split_confluent(sample.payload)?.1
    } else {
        sample.payload
    };
    match (writer, reader) {
        (ParsedSchema::Avro(w), ParsedSchema::Avro(r)) => {
            covenant_avro::decode_with(m, w, r, body).map(|_| ())
        }
        (ParsedSchema::Protobuf(w), ParsedSchema::Protobuf(r)) => {
            let (name, body) = if framed {
                let (indexes, used) = covenant_protobuf::decode_message_indexes(body)?;
                let name = match sample.message_name {
                    Some(n) if !n.trim().is_empty() => n.trim().to_string(),
                    _ => w.message_name(&indexes).ok_or_else(|| {
                        format!("Message indexes {indexes:?} name no message of the writer schema.")
                    })?,
                };
                (name, body.get(used..).unwrap_or_default())
            } else {
                let name = sample
                    .message_name
                    .map(|n| n.trim().to_string())
                    .filter(|n| !n.is_empty())
                    .ok_or_else(|| "The sample names no message.".to_string())?;
                (name, body)
            };
            covenant_protobuf::decode_with(m, r, &name, body).map(|_| ())
        }
        (ParsedSchema::Json(_), ParsedSchema::Json(r)) => {
            let document = json_document(body)?;
            match covenant_jsonschema::first_error(m, r, &document) {
                None => Ok(()),
                Some((first, others)) => {
                    let at = if first.instance_path.is_empty() {
                        "/"
                    } else {
                        &first.instance_path
                    };
                    let more = match others {
                        0 => String::new(),
                        n => format!(" ({n} more)"),
                    };
                    Err(format!("At '{at}': {}{more}", first.message))
                }
            }
        }
        (w, r) => Err(format!(
            "A {} sample cannot be read with a {} schema.",
            schema_type(w),
            schema_type(r)
        )),
    }
}

/// Replays every sample (with the schema that wrote it) against `candidate`, oldest first,
/// until `budget` is spent, charging the check's budget (the one `m` proves installed) what
/// each sample holds and running each under a budget of its own.
pub fn replay(
    m: Metered<'_>,
    candidate: &ParsedSchema,
    samples: &[(&ParsedSchema, Sample<'_>)],
    budget: Duration,
) -> Vec<Finding> {
    let start = Instant::now();
    let mut findings = Vec::new();
    for (done, (writer, sample)) in samples.iter().enumerate() {
        if start.elapsed() > budget {
            let mut f = Finding::new(
                &SAMPLE_REPLAY_INCOMPLETE,
                "/samples",
                format!(
                    "Replay stopped after {done} of {} samples: the {} ms budget was spent.",
                    samples.len(),
                    budget.as_millis()
                ),
            );
            f.version = Some(sample.version);
            findings.push(f);
            break;
        }
        let time = budget.saturating_sub(start.elapsed());
        let outcome = within_sample_budget(m, sample, time, |m| {
            read_back(
                m,
                writer,
                candidate,
                sample,
                ("its own schema", "the new schema"),
            )
        });
        let error = match outcome {
            SampleOutcome::Read => continue,
            SampleOutcome::Failed(error) => error,
            SampleOutcome::Stopped => {
                let mut f = Finding::new(
                    &SAMPLE_REPLAY_INCOMPLETE,
                    "/samples",
                    format!(
                        "Replay stopped after {done} of {} samples: the check's budget was spent.",
                        samples.len()
                    ),
                );
                f.version = Some(sample.version);
                findings.push(f);
                break;
            }
        };
        let mut f = Finding::new(
            &SAMPLE_REPLAY_FAILED,
            format!("/samples/{}", sample.id),
            format!(
                "Sample {} of version {} ({}) cannot be read with the new schema: {}",
                sample.id,
                sample.version,
                sample.encoding.as_str(),
                sentence(&error)
            ),
        );
        f.version = Some(sample.version);
        findings.push(f);
    }
    findings
}

/// How one sample's replay ended.
enum SampleOutcome {
    Read,
    Failed(String),
    /// The check's budget or the replay's time is spent (or the caller went away): replay
    /// stops here, and a spent check budget discards the verdict.
    Stopped,
}

/// Runs one sample's replay under a budget of its own: `time` left and [`SAMPLE_MAX_WORK`]
/// units, stopped with the caller's budget when that is cancelled. The check's budget is
/// charged the bytes the sample holds; what its decoding makes is dropped before the next.
fn within_sample_budget(
    _check: Metered<'_>,
    sample: &Sample<'_>,
    time: Duration,
    read: impl FnOnce(Metered<'_>) -> Result<(), String>,
) -> SampleOutcome {
    if covenant_engine::budget::charge(1 + sample.payload.len() as u64 / 64) {
        return SampleOutcome::Stopped;
    }
    match Budget::new(Some(time), Some(SAMPLE_MAX_WORK)).run(read) {
        Ok(Ok(())) => SampleOutcome::Read,
        Ok(Err(error)) => SampleOutcome::Failed(error),
        Err(BudgetExceeded::Work(n)) => SampleOutcome::Failed(format!(
            "decoding it takes more than the {n} units of work one sample may spend"
        )),
        Err(BudgetExceeded::Size) => {
            SampleOutcome::Failed("its data nests or grows past what a sample may reach".into())
        }
        Err(BudgetExceeded::Time(_) | BudgetExceeded::Cancelled) => SampleOutcome::Stopped,
    }
}

/// Decodes `sample` (written with `writer`) with `reader` and, for Avro, compares the values
/// each side reads.
fn read_back(
    m: Metered<'_>,
    writer: &ParsedSchema,
    reader: &ParsedSchema,
    sample: &Sample<'_>,
    names: (&str, &str),
) -> Result<(), String> {
    decode_sample(m, writer, reader, sample)?;
    match value_change(m, writer, reader, sample) {
        Some((at, a, b)) => Err(format!(
            "at '{at}' {} reads {a} and {} reads {b}",
            names.0, names.1
        )),
        None => Ok(()),
    }
}

/// Replays the candidate's own samples (numbered by `id`, from 1 in the order submitted)
/// through each earlier version in `readers` as reader, until `budget` is spent. The
/// findings name the reader version. Budgeted as [`replay`].
pub fn replay_forward(
    m: Metered<'_>,
    candidate: &ParsedSchema,
    samples: &[Sample<'_>],
    readers: &[(i64, &ParsedSchema)],
    budget: Duration,
) -> Vec<Finding> {
    let start = Instant::now();
    let total = samples.len() * readers.len();
    let mut findings = Vec::new();
    let pairs = readers
        .iter()
        .flat_map(|(version, reader)| samples.iter().map(move |s| (*version, *reader, s)));
    for (done, (version, reader, sample)) in pairs.enumerate() {
        if start.elapsed() > budget {
            let mut f = Finding::new(
                &SAMPLE_REPLAY_INCOMPLETE,
                "/samples/new",
                format!(
                    "Forward replay stopped after {done} of {total} sample readings: the {} ms budget was spent.",
                    budget.as_millis()
                ),
            );
            f.version = Some(version);
            findings.push(f);
            break;
        }
        let names = ("the new schema", &*format!("version {version}"));
        let time = budget.saturating_sub(start.elapsed());
        let outcome = within_sample_budget(m, sample, time, |m| {
            read_back(m, candidate, reader, sample, names)
        });
        let error = match outcome {
            SampleOutcome::Read => continue,
            SampleOutcome::Failed(error) => error,
            SampleOutcome::Stopped => {
                let mut f = Finding::new(
                    &SAMPLE_REPLAY_INCOMPLETE,
                    "/samples/new",
                    format!(
                        "Forward replay stopped after {done} of {total} sample readings: the check's budget was spent."
                    ),
                );
                f.version = Some(version);
                findings.push(f);
                break;
            }
        };
        let mut f = Finding::new(
            &SAMPLE_FORWARD_REPLAY_FAILED,
            format!("/samples/new/{}", sample.id),
            format!(
                "Sample {} of the new schema ({}) cannot be read by consumers of version {version}: {}",
                sample.id,
                sample.encoding.as_str(),
                sentence(&error)
            ),
        );
        f.version = Some(version);
        findings.push(f);
    }
    findings
}

/// For an Avro sample: the first field whose value, logical types applied, differs between
/// the writer's own reading and the reader's (its path and both values). Fields only one side
/// has are not compared (a reader default is not a changed value); numbers compare by value
/// (`5` and `5.0`).
fn value_change(
    m: Metered<'_>,
    writer: &ParsedSchema,
    reader: &ParsedSchema,
    sample: &Sample<'_>,
) -> Option<(String, serde_json::Value, serde_json::Value)> {
    let (ParsedSchema::Avro(w), ParsedSchema::Avro(r)) = (writer, reader) else {
        return None;
    };
    let body = if sample.encoding == SampleEncoding::Confluent {
        split_confluent(sample.payload).ok()?.1
    } else {
        sample.payload
    };
    let before = covenant_avro::decode_values_with(m, w, w, body).ok()?;
    let after = covenant_avro::decode_values_with(m, w, r, body).ok()?;
    // Iterative: sample data may be deeply nested (recursive schemas).
    let mut stack = vec![(String::new(), &before, &after)];
    while let Some((path, a, b)) = stack.pop() {
        match (a, b) {
            (serde_json::Value::Object(x), serde_json::Value::Object(y)) => {
                for (key, value) in x.iter().rev() {
                    if let Some(other) = y.get(key) {
                        stack.push((format!("{path}/{key}"), value, other));
                    }
                }
            }
            (serde_json::Value::Array(x), serde_json::Value::Array(y)) if x.len() == y.len() => {
                for (i, (value, other)) in x.iter().zip(y).enumerate().rev() {
                    stack.push((format!("{path}/{i}"), value, other));
                }
            }
            _ if same_value(a, b) => {}
            _ => {
                let at = if path.is_empty() {
                    "/".to_string()
                } else {
                    path
                };
                return Some((at, a.clone(), b.clone()));
            }
        }
    }
    None
}

fn same_value(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if a.is_number() && b.is_number() => x == y,
        _ => a == b,
    }
}

fn sentence(text: &str) -> String {
    let t = text.trim();
    if t.ends_with('.') {
        t.to_string()
    } else {
        format!("{t}.")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use covenant_schema::SchemaType;

    fn avro(text: &str) -> ParsedSchema {
        ParsedSchema::parse(SchemaType::Avro, text, &[]).expect("valid Avro")
    }

    fn encode(schema: &ParsedSchema, datum: serde_json::Value) -> Vec<u8> {
        match schema {
            ParsedSchema::Avro(a) => covenant_avro::encode_with(a, &datum).expect("encodes"),
            _ => panic!("not avro"),
        }
    }

    #[test]
    fn a_type_change_breaks_old_samples_and_names_them() {
        let v1 = avro(
            r#"{"type":"record","name":"E","fields":[{"name":"id","type":"int"},{"name":"kind","type":"string"}]}"#,
        );
        let v4 = avro(
            r#"{"type":"record","name":"E","fields":[{"name":"id","type":"int"},{"name":"kind","type":"int","default":0}]}"#,
        );
        let bytes = encode(&v1, serde_json::json!({"id": 7, "kind": "refund"}));
        let mut framed = vec![0, 0, 0, 0, 1];
        framed.extend_from_slice(&bytes);
        let samples = [
            (
                &v1,
                Sample {
                    id: 3,
                    version: 1,
                    encoding: SampleEncoding::Avro,
                    message_name: None,
                    payload: &bytes,
                },
            ),
            (
                &v1,
                Sample {
                    id: 4,
                    version: 1,
                    encoding: SampleEncoding::Confluent,
                    message_name: None,
                    payload: &framed,
                },
            ),
        ];
        assert!(
            covenant_engine::budget::unlimited(|m| replay(
                m,
                &v1,
                &samples,
                Duration::from_secs(5)
            ))
            .is_empty()
        );
        let findings = covenant_engine::budget::unlimited(|m| {
            replay(m, &v4, &samples, Duration::from_secs(5))
        });
        assert_eq!(findings.len(), 2, "{findings:?}");
        assert_eq!(findings[0].rule, "SAMPLE_REPLAY_FAILED");
        assert_eq!(findings[0].path, "/samples/3");
        assert_eq!(findings[0].version, Some(1));
        assert!(
            findings[0]
                .message
                .starts_with("Sample 3 of version 1 (avro) cannot be read"),
            "{}",
            findings[0].message
        );
    }

    #[test]
    fn text_read_as_a_decimal_decodes_but_changes_value() {
        let text = avro(
            r#"{"type":"record","name":"Payment","fields":[{"name":"amount","type":"string"}]}"#,
        );
        let decimal = avro(
            r#"{"type":"record","name":"Payment","fields":[{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":18,"scale":2}}]}"#,
        );
        let bytes = encode(&text, serde_json::json!({"amount": "12.34"}));
        let sample = Sample {
            id: 5,
            version: 1,
            encoding: SampleEncoding::Avro,
            message_name: None,
            payload: &bytes,
        };
        assert!(
            covenant_engine::budget::unlimited(|m| decode_sample(m, &text, &decimal, &sample))
                .is_ok(),
            "the bytes parse"
        );
        let findings = covenant_engine::budget::unlimited(|m| {
            replay(m, &decimal, &[(&text, sample)], Duration::from_secs(5))
        });
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].rule, "SAMPLE_REPLAY_FAILED");
        assert!(
            findings[0]
                .message
                .contains("at '/amount' its own schema reads \"12.34\" and the new schema reads \"2112952860.68\""),
            "{}",
            findings[0].message
        );
    }

    #[test]
    fn promotions_and_new_defaults_keep_their_values() {
        let v1 = avro(
            r#"{"type":"record","name":"E","fields":[{"name":"n","type":"int"},{"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}}]}"#,
        );
        let v2 = avro(
            r#"{"type":"record","name":"E","fields":[{"name":"n","type":"double"},{"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}},{"name":"x","type":"string","default":""}]}"#,
        );
        let micros = avro(
            r#"{"type":"record","name":"E","fields":[{"name":"n","type":"int"},{"name":"at","type":{"type":"long","logicalType":"timestamp-micros"}}]}"#,
        );
        let bytes = encode(
            &v1,
            serde_json::json!({"n": 5, "at": 1_767_225_600_000_i64}),
        );
        let sample = Sample {
            id: 1,
            version: 1,
            encoding: SampleEncoding::Avro,
            message_name: None,
            payload: &bytes,
        };
        assert!(
            covenant_engine::budget::unlimited(|m| replay(
                m,
                &v2,
                &[(&v1, sample)],
                Duration::from_secs(5)
            ))
            .is_empty()
        );
        let findings = covenant_engine::budget::unlimited(|m| {
            replay(m, &micros, &[(&v1, sample)], Duration::from_secs(5))
        });
        assert!(findings[0].message.contains("at '/at'"), "{findings:?}");
    }

    #[test]
    fn a_spent_budget_stops_with_a_warning() {
        let v1 = avro(r#""string""#);
        let bytes = encode(&v1, serde_json::json!("x"));
        let sample = Sample {
            id: 1,
            version: 1,
            encoding: SampleEncoding::Avro,
            message_name: None,
            payload: &bytes,
        };
        let findings = covenant_engine::budget::unlimited(|m| {
            replay(m, &v1, &[(&v1, sample), (&v1, sample)], Duration::ZERO)
        });
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].rule, "SAMPLE_REPLAY_INCOMPLETE");
        assert_eq!(findings[0].severity, Severity::Warning);
    }

    const BOMB: &str = r#"{"type":"record","name":"Bomb","fields":[{"name":"xs","type":{"type":"array","items":"null"}}]}"#;

    #[test]
    fn a_ten_byte_bomb_is_a_decode_error_in_every_framing() {
        let bomb = avro(BOMB);
        // 20,000,000 items of null, then the terminating block.
        let raw = [0x80u8, 0xb4, 0x89, 0x13, 0x00];
        let mut framed = vec![0, 0, 0, 0, 1];
        framed.extend(raw);
        for (encoding, payload) in [
            (SampleEncoding::Avro, &raw[..]),
            (SampleEncoding::Confluent, &framed[..]),
        ] {
            let sample = Sample {
                id: 1,
                version: 1,
                encoding,
                message_name: None,
                payload,
            };
            let error =
                covenant_engine::budget::unlimited(|m| decode_sample(m, &bomb, &bomb, &sample))
                    .expect_err("refused");
            assert!(error.contains("take no bytes"), "{error}");
            let findings = covenant_engine::budget::unlimited(|m| {
                replay(m, &bomb, &[(&bomb, sample)], Duration::from_secs(5))
            });
            assert_eq!(findings.len(), 1);
            assert_eq!(findings[0].rule, "SAMPLE_REPLAY_FAILED");
        }
        let error = covenant_engine::budget::unlimited(|m| decode_framed_body(m, &bomb, &raw))
            .expect_err("refused");
        assert!(error.contains("take no bytes"), "{error}");
    }

    #[test]
    fn replay_charges_the_check_and_stops_when_it_is_spent() {
        let v1 = avro(r#"{"type":"array","items":"int"}"#);
        let bytes = encode(&v1, serde_json::Value::Array(vec![1.into(); 10_000]));
        let sample = Sample {
            id: 1,
            version: 1,
            encoding: SampleEncoding::Avro,
            message_name: None,
            payload: &bytes,
        };
        let samples = vec![(&v1, sample); 100];
        // Each sample holds about 160 units of payload: a budget of 1,000 stops the replay.
        let outcome = Budget::new(None, Some(1_000))
            .run(|m| replay(m, &v1, &samples, Duration::from_secs(5)));
        assert_eq!(outcome, Err(BudgetExceeded::Work(1_000)));
        let findings = Budget::new(None, Some(1_000_000))
            .run(|m| replay(m, &v1, &samples, Duration::from_secs(5)))
            .expect("within budget");
        assert!(findings.is_empty(), "{findings:?}");
    }

    #[test]
    fn json_errors_are_counted_within_the_budget() {
        let schema = ParsedSchema::parse(
            SchemaType::Json,
            r#"{"type":"array","items":{"type":"string"}}"#,
            &[],
        )
        .expect("valid JSON Schema");
        let doc = serde_json::to_vec(&vec![0; 20_000]).expect("json");
        let sample = Sample {
            id: 1,
            version: 1,
            encoding: SampleEncoding::Json,
            message_name: None,
            payload: &doc,
        };
        let error =
            covenant_engine::budget::unlimited(|m| decode_sample(m, &schema, &schema, &sample))
                .expect_err("invalid");
        assert!(error.contains("(19999 more)"), "{error}");
        let spent =
            Budget::new(None, Some(5_000)).run(|m| decode_sample(m, &schema, &schema, &sample));
        assert_eq!(spent, Err(BudgetExceeded::Work(5_000)));
    }

    #[test]
    fn json_samples_are_validated_and_framing_is_checked() {
        let wide = ParsedSchema::parse(
            SchemaType::Json,
            r#"{"type":"object","properties":{"name":{"type":"string","maxLength":100}}}"#,
            &[],
        )
        .expect("valid JSON Schema");
        let narrow = ParsedSchema::parse(
            SchemaType::Json,
            r#"{"type":"object","properties":{"name":{"type":"string","maxLength":20}}}"#,
            &[],
        )
        .expect("valid JSON Schema");
        let doc = br#"{"name":"a name that is longer than twenty"}"#;
        let sample = Sample {
            id: 9,
            version: 2,
            encoding: SampleEncoding::Json,
            message_name: None,
            payload: doc,
        };
        assert!(
            covenant_engine::budget::unlimited(|m| decode_sample(m, &wide, &wide, &sample)).is_ok()
        );
        let error =
            covenant_engine::budget::unlimited(|m| decode_sample(m, &wide, &narrow, &sample))
                .expect_err("too long");
        assert!(error.contains("/name"), "{error}");
        assert!(split_confluent(&[1, 0, 0, 0, 1]).is_err());
        assert!(split_confluent(&[0, 0]).is_err());
        assert_eq!(split_confluent(&[0, 0, 0, 1, 2, 9]), Ok((258, &[9u8][..])));
        assert!(check_encoding(&wide, SampleEncoding::Avro, None).is_err());
        assert!(check_encoding(&wide, SampleEncoding::Confluent, None).is_ok());
    }

    #[test]
    fn protobuf_samples_decode_by_message_name_or_indexes() {
        let v1 = ParsedSchema::parse(
            SchemaType::Protobuf,
            "syntax = \"proto3\"; package acme; message A { string x = 1; } message B { string legacy_owner = 7; }",
            &[],
        )
        .expect("valid proto");
        let v2 = ParsedSchema::parse(
            SchemaType::Protobuf,
            "syntax = \"proto3\"; package acme; message A { string x = 1; } message B { int64 owner_id = 7; }",
            &[],
        )
        .expect("valid proto");
        // field 7, length-delimited, "bob"
        let body = [0x3a, 3, b'b', b'o', b'b'];
        let mut framed = vec![0, 0, 0, 0, 2];
        framed.extend(covenant_protobuf::encode_message_indexes(&[1]));
        framed.extend_from_slice(&body);
        let named = Sample {
            id: 1,
            version: 1,
            encoding: SampleEncoding::Protobuf,
            message_name: Some("acme.B"),
            payload: &body,
        };
        let wire = Sample {
            id: 2,
            version: 1,
            encoding: SampleEncoding::Confluent,
            message_name: None,
            payload: &framed,
        };
        assert!(covenant_engine::budget::unlimited(|m| decode_sample(m, &v1, &v1, &named)).is_ok());
        assert!(covenant_engine::budget::unlimited(|m| decode_sample(m, &v1, &v1, &wire)).is_ok());
        assert!(
            covenant_engine::budget::unlimited(|m| decode_sample(m, &v1, &v2, &named)).is_err()
        );
        assert!(covenant_engine::budget::unlimited(|m| decode_sample(m, &v1, &v2, &wire)).is_err());
    }

    #[test]
    fn forward_replay_reads_new_samples_with_old_readers() {
        let v1 = avro(
            r#"{"type":"record","name":"E","fields":[{"name":"id","type":"int"},{"name":"status","type":{"type":"enum","name":"S","symbols":["OPEN","CLOSED"]}}]}"#,
        );
        let v2 = avro(
            r#"{"type":"record","name":"E","fields":[{"name":"id","type":"int"},{"name":"status","type":{"type":"enum","name":"S","symbols":["OPEN","CLOSED","ON_HOLD"]}},{"name":"note","type":"string","default":""}]}"#,
        );
        let open = encode(
            &v2,
            serde_json::json!({"id": 1, "status": "OPEN", "note": "x"}),
        );
        let held = encode(
            &v2,
            serde_json::json!({"id": 2, "status": "ON_HOLD", "note": ""}),
        );
        let sample = |id, payload| Sample {
            id,
            version: 0,
            encoding: SampleEncoding::Avro,
            message_name: None,
            payload,
        };
        let samples = [sample(1, &open[..]), sample(2, &held[..])];
        let findings = covenant_engine::budget::unlimited(|m| {
            replay_forward(m, &v2, &samples, &[(1, &v1)], Duration::from_secs(5))
        });
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].rule, "SAMPLE_FORWARD_REPLAY_FAILED");
        assert_eq!(findings[0].path, "/samples/new/2");
        assert_eq!(findings[0].version, Some(1));
        assert!(
            findings[0].message.starts_with(
                "Sample 2 of the new schema (avro) cannot be read by consumers of version 1:"
            ),
            "{}",
            findings[0].message
        );
        assert!(
            covenant_engine::budget::unlimited(|m| replay_forward(
                m,
                &v2,
                &samples,
                &[(2, &v2)],
                Duration::from_secs(5)
            ))
            .is_empty()
        );
    }

    #[test]
    fn forward_replay_catches_a_changed_logical_type() {
        let text =
            avro(r#"{"type":"record","name":"P","fields":[{"name":"amount","type":"string"}]}"#);
        let decimal = avro(
            r#"{"type":"record","name":"P","fields":[{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":18,"scale":2}}]}"#,
        );
        let bytes = encode(&decimal, serde_json::json!({"amount": "12.34"}));
        let sample = Sample {
            id: 1,
            version: 0,
            encoding: SampleEncoding::Avro,
            message_name: None,
            payload: &bytes,
        };
        let findings = covenant_engine::budget::unlimited(|m| {
            replay_forward(
                m,
                &decimal,
                &[sample],
                &[(1, &text)],
                Duration::from_secs(5),
            )
        });
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(findings[0].message.contains("at '/amount'"), "{findings:?}");
    }

    #[test]
    fn forward_replay_validates_json_documents_with_old_schemas() {
        let v1 = ParsedSchema::parse(
            SchemaType::Json,
            r#"{"type":"object","properties":{"status":{"enum":["OPEN","CLOSED"]}}}"#,
            &[],
        )
        .expect("valid JSON Schema");
        let v2 = ParsedSchema::parse(
            SchemaType::Json,
            r#"{"type":"object","properties":{"status":{"enum":["OPEN","CLOSED","ON_HOLD"]}}}"#,
            &[],
        )
        .expect("valid JSON Schema");
        let doc = br#"{"status":"ON_HOLD"}"#;
        let sample = Sample {
            id: 1,
            version: 0,
            encoding: SampleEncoding::Json,
            message_name: None,
            payload: doc,
        };
        let findings = covenant_engine::budget::unlimited(|m| {
            replay_forward(m, &v2, &[sample], &[(1, &v1)], Duration::from_secs(5))
        });
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(findings[0].message.contains("/status"), "{findings:?}");
        let spent = covenant_engine::budget::unlimited(|m| {
            replay_forward(m, &v2, &[sample], &[(1, &v1)], Duration::ZERO)
        });
        assert_eq!(spent[0].rule, "SAMPLE_REPLAY_INCOMPLETE");
    }
}

//! Part 1a: compatibility checking in process, Covenant's engine against the `apache-avro`
//! crate's `SchemaCompatibility` on the same pairs, plus Covenant alone on the JSON Schema and
//! Protobuf corpora and generated histories (no Rust peer checks those formats).

use crate::generate::{Generated, History};
use crate::table::{Row, Sample, human, speedup};
use anyhow::{Context, Result, bail};
use apache_avro::schema_compatibility::SchemaCompatibility;
use covenant_avro::{AvroFormat, AvroSchema};
use covenant_engine::{
    CheckOptions, Format, InfoFindings, Level, PriorVersion, Reference, check_history,
};
use covenant_schema::{ParsedSchema, SchemaType};
use serde_json::Value;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

const PART: &str = "1a check, in process";

/// Each sample repeats `work` until at least this long has passed and keeps the mean of one
/// call: a single call of a few hundred microseconds is at the mercy of the timer, the caches
/// and the neighbours, and its ratio to a peer's moved by a third between identical runs.
const SAMPLE_AT_LEAST: Duration = Duration::from_millis(50);

fn time<T>(runs: usize, mut work: impl FnMut() -> T) -> Sample {
    black_box(work());
    let mut out = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        let mut calls = 0u32;
        while calls == 0 || start.elapsed() < SAMPLE_AT_LEAST {
            black_box(work());
            calls += 1;
        }
        out.push(start.elapsed() / calls);
    }
    Sample::of(out).unwrap_or(Sample {
        median: Duration::ZERO,
        min: Duration::ZERO,
        max: Duration::ZERO,
        runs: 0,
    })
}

/// One corpus case as text: writer, reader, their references (dependencies first) and the
/// expected answer to "can the reader read the writer's data?".
#[derive(Debug, Clone)]
pub struct Case {
    pub id: String,
    pub writer: String,
    pub reader: String,
    pub writer_refs: Vec<Reference>,
    pub reader_refs: Vec<Reference>,
    pub expected: bool,
}

fn refs(case: &Value, key: &str) -> Vec<Reference> {
    case.get(key)
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|r| {
                    Some(Reference {
                        name: r.get("name")?.as_str()?.to_string(),
                        subject: r.get("name")?.as_str()?.to_string(),
                        version: 1,
                        schema: r.get("schema")?.as_str()?.to_string(),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Reads one `*.jsonl` file of the peer corpus. A line that is not a usable case is an error:
/// the corpus format is documented and a silent skip would hide a broken benchmark.
pub fn load_corpus(path: &Path) -> Result<Vec<Case>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut cases = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let case: Value = serde_json::from_str(line)
            .with_context(|| format!("{}:{}: not JSON", path.display(), n + 1))?;
        let field = |k: &str| -> Result<String> {
            case.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .with_context(|| format!("{}:{}: no '{k}'", path.display(), n + 1))
        };
        let shared = refs(&case, "references");
        let (writer_refs, reader_refs) = if shared.is_empty() {
            (
                refs(&case, "writer_references"),
                refs(&case, "reader_references"),
            )
        } else {
            (shared.clone(), shared)
        };
        cases.push(Case {
            id: field("id")?,
            writer: field("writer")?,
            reader: field("reader")?,
            writer_refs,
            reader_refs,
            expected: case
                .get("reader_can_read_writer")
                .and_then(Value::as_bool)
                .with_context(|| format!("{}:{}: no expectation", path.display(), n + 1))?,
        });
    }
    Ok(cases)
}

fn covenant_avro_verdict(reader: &AvroSchema, writer: &AvroSchema) -> bool {
    !covenant_engine::budget::unlimited(|m| {
        AvroFormat::check(m, reader, writer, &CheckOptions::default())
    })
    .iter()
    .any(|f| f.is_error())
}

fn apache_parse(text: &str, refs: &[Reference]) -> Option<apache_avro::Schema> {
    if refs.is_empty() {
        apache_avro::Schema::parse_str(text).ok()
    } else {
        apache_avro::Schema::parse_str_with_list(text, refs.iter().map(|r| r.schema.as_str()))
            .ok()
            .map(|(s, _)| s)
    }
}

/// Covenant against apache-avro over the Avro corpus: parse and check every pair both accept.
pub fn avro_corpus(corpus: &Path, runs: usize, rows: &mut Vec<Row>) -> Result<()> {
    let cases = load_corpus(&corpus.join("avro.jsonl"))?;
    let total = cases.len();
    // Only pairs both libraries can parse are timed, so both sides do the same work.
    let usable: Vec<&Case> = cases
        .iter()
        .filter(|c| {
            AvroFormat::parse(&c.writer, &c.writer_refs).is_ok()
                && AvroFormat::parse(&c.reader, &c.reader_refs).is_ok()
                && apache_parse(&c.writer, &c.writer_refs).is_some()
                && apache_parse(&c.reader, &c.reader_refs).is_some()
        })
        .collect();
    if usable.is_empty() {
        bail!("no Avro corpus case parses with both libraries");
    }
    let ours_parsed: Vec<(AvroSchema, AvroSchema)> = usable
        .iter()
        .map(|c| {
            Ok((
                AvroFormat::parse(&c.reader, &c.reader_refs)?,
                AvroFormat::parse(&c.writer, &c.writer_refs)?,
            ))
        })
        .collect::<Result<_, covenant_engine::SchemaError>>()?;
    let theirs_parsed: Vec<(apache_avro::Schema, apache_avro::Schema)> = usable
        .iter()
        .filter_map(|c| {
            Some((
                apache_parse(&c.reader, &c.reader_refs)?,
                apache_parse(&c.writer, &c.writer_refs)?,
            ))
        })
        .collect();

    let ours_agree = usable
        .iter()
        .zip(&ours_parsed)
        .filter(|(c, (r, w))| covenant_avro_verdict(r, w) == c.expected)
        .count();
    let theirs_agree = usable
        .iter()
        .zip(&theirs_parsed)
        .filter(|(c, (r, w))| SchemaCompatibility::can_read(w, r).is_ok() == c.expected)
        .count();

    let check_ours = time(runs, || {
        ours_parsed
            .iter()
            .filter(|(r, w)| covenant_avro_verdict(r, w))
            .count()
    });
    let check_theirs = time(runs, || {
        theirs_parsed
            .iter()
            .filter(|(r, w)| SchemaCompatibility::can_read(w, r).is_ok())
            .count()
    });
    let both_ours = time(runs, || {
        usable
            .iter()
            .filter(|c| {
                match (
                    AvroFormat::parse(&c.reader, &c.reader_refs),
                    AvroFormat::parse(&c.writer, &c.writer_refs),
                ) {
                    (Ok(r), Ok(w)) => covenant_avro_verdict(&r, &w),
                    _ => false,
                }
            })
            .count()
    });
    let both_theirs = time(runs, || {
        usable
            .iter()
            .filter(|c| {
                match (
                    apache_parse(&c.reader, &c.reader_refs),
                    apache_parse(&c.writer, &c.writer_refs),
                ) {
                    (Some(r), Some(w)) => SchemaCompatibility::can_read(&w, &r).is_ok(),
                    _ => false,
                }
            })
            .count()
    });
    let n = usable.len();
    let agreement = format!(
        "{n} of {total} corpus pairs (both parse); agree with Java: Covenant {ours_agree}/{n}, apache-avro {theirs_agree}/{n}"
    );
    rows.push(
        Row::new(PART, "Avro corpus: check only (pre-parsed)")
            .covenant(check_ours.describe())
            .peer(format!("apache-avro can_read {}", check_theirs.describe()))
            .ratio(speedup(check_ours.median, check_theirs.median))
            .notes(agreement.clone()),
    );
    rows.push(
        Row::new(PART, "Avro corpus: parse + check")
            .covenant(both_ours.describe())
            .peer(format!("apache-avro {}", both_theirs.describe()))
            .ratio(speedup(both_ours.median, both_theirs.median))
            .notes(format!(
                "{n} pairs, Covenant builds findings with paths and hints"
            )),
    );
    Ok(())
}

fn read_versions(history: &History) -> Result<Vec<String>> {
    history
        .versions
        .iter()
        .map(|p| std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display())))
        .collect()
}

/// FULL_TRANSITIVE of the newest generated Avro version against every earlier one.
pub fn avro_generated(g: &Generated, runs: usize, rows: &mut Vec<Row>) -> Result<()> {
    let texts = read_versions(&g.avro)?;
    let ours: Vec<AvroSchema> = texts
        .iter()
        .map(|t| AvroFormat::parse(t, &[]))
        .collect::<Result<_, _>>()?;
    let theirs: Vec<apache_avro::Schema> = texts
        .iter()
        .map(|t| apache_avro::Schema::parse_str(t))
        .collect::<Result<_, _>>()?;
    let (newest, earlier) = ours.split_last().context("versions")?;
    let history: Vec<PriorVersion<'_, AvroSchema>> = earlier
        .iter()
        .enumerate()
        .map(|(i, schema)| PriorVersion {
            version: i as i64 + 1,
            schema,
        })
        .collect();
    let (t_newest, t_earlier) = theirs.split_last().context("versions")?;
    let options = CheckOptions::default();

    let report = covenant_engine::budget::unlimited(|m| {
        check_history::<AvroFormat>(m, Level::FullTransitive, newest, &history, &options)
    });
    if !report.compatible {
        bail!(
            "generated Avro history judged incompatible by Covenant: {:?}",
            report.findings.first()
        );
    }
    if let Some(e) = t_earlier
        .iter()
        .find_map(|s| SchemaCompatibility::mutual_read(t_newest, s).err())
    {
        bail!("generated Avro history judged incompatible by apache-avro: {e}");
    }
    let ours_t = time(runs, || {
        covenant_engine::budget::unlimited(|m| {
            check_history::<AvroFormat>(m, Level::FullTransitive, newest, &history, &options)
        })
        .compatible
    });
    let theirs_t = time(runs, || {
        t_earlier
            .iter()
            .all(|s| SchemaCompatibility::mutual_read(t_newest, s).is_ok())
    });
    let parse_ours = time(runs, || {
        texts
            .iter()
            .filter(|t| AvroFormat::parse(t, &[]).is_ok())
            .count()
    });
    let parse_theirs = time(runs, || {
        texts
            .iter()
            .filter(|t| apache_avro::Schema::parse_str(t).is_ok())
            .count()
    });
    let s = g.sizes;
    rows.push(
        Row::new(
            PART,
            format!(
                "Avro {}-field record, FULL_TRANSITIVE vs {} versions",
                s.avro_fields,
                s.avro_versions - 1
            ),
        )
        .covenant(ours_t.describe())
        .peer(format!("apache-avro mutual_read {}", theirs_t.describe()))
        .ratio(speedup(ours_t.median, theirs_t.median))
        .notes(format!(
            "both compatible; {} pairs × 2 directions, pre-parsed",
            s.avro_versions - 1
        )),
    );
    rows.push(
        Row::new(PART, format!("Avro parse {} versions", s.avro_versions))
            .covenant(parse_ours.describe())
            .peer(format!("apache-avro {}", parse_theirs.describe()))
            .ratio(speedup(parse_ours.median, parse_theirs.median))
            .notes("Covenant also validates defaults and builds its canonical model"),
    );
    Ok(())
}

/// Whether this build can parse `schema_type` at all; the format crates land one by one.
pub fn format_available(schema_type: SchemaType) -> Option<String> {
    let probe = match schema_type {
        SchemaType::Avro => "\"string\"",
        SchemaType::Json => "{\"type\": \"string\"}",
        SchemaType::Protobuf => "syntax = \"proto3\";\nmessage Probe { string a = 1; }\n",
        SchemaType::Iceberg => "{\"type\": \"struct\", \"fields\": []}",
    };
    match ParsedSchema::parse(schema_type, probe, &[]) {
        Ok(_) => None,
        Err(e) => Some(format!("{schema_type} is not in this build ({e})")),
    }
}

/// Covenant alone over one of the non-Avro corpora: no in-process Rust peer exists for JSON
/// Schema or Protobuf compatibility.
pub fn other_corpus(
    corpus: &Path,
    file: &str,
    schema_type: SchemaType,
    runs: usize,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let workload = format!("{schema_type} corpus ({file}): parse + check");
    if let Some(why) = format_available(schema_type) {
        rows.push(Row::new(PART, workload).covenant("n/a").notes(why));
        return Ok(());
    }
    let cases = load_corpus(&corpus.join(file))?;
    let parse = |c: &Case| -> Option<(ParsedSchema, ParsedSchema)> {
        Some((
            ParsedSchema::parse(schema_type, &c.reader, &c.reader_refs).ok()?,
            ParsedSchema::parse(schema_type, &c.writer, &c.writer_refs).ok()?,
        ))
    };
    let usable: Vec<&Case> = cases.iter().filter(|c| parse(c).is_some()).collect();
    let options = CheckOptions::default();
    let verdict = |c: &Case| -> bool {
        parse(c).is_some_and(|(r, w)| {
            covenant_engine::budget::unlimited(|m| {
                covenant_schema::check(m, Level::Backward, &r, &[(1, &w)], &options)
            })
            .compatible
        })
    };
    let agree = usable.iter().filter(|c| verdict(c) == c.expected).count();
    let t = time(runs, || usable.iter().filter(|c| verdict(c)).count());
    let per_pair = if usable.is_empty() {
        Duration::ZERO
    } else {
        t.median / usable.len() as u32
    };
    rows.push(
        Row::new(PART, workload)
            .covenant(t.describe())
            .peer("no Rust peer")
            .ratio("—")
            .notes(format!(
                "{} of {} pairs parse; {}/{} give the corpus answer (it mixes Confluent and Karapace expectations; the conformance tests list the accepted differences); {} per pair",
                usable.len(),
                cases.len(),
                agree,
                usable.len(),
                human(per_pair)
            )),
    );
    Ok(())
}

/// Covenant alone over a generated JSON Schema or Protobuf history at `level`.
pub fn other_generated(
    history: &History,
    schema_type: SchemaType,
    level: Level,
    label: String,
    runs: usize,
    rows: &mut Vec<Row>,
) -> Result<()> {
    if let Some(why) = format_available(schema_type) {
        rows.push(Row::new(PART, label).covenant("n/a").notes(why));
        return Ok(());
    }
    let texts = read_versions(history)?;
    let parsed: Vec<ParsedSchema> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            ParsedSchema::parse(schema_type, t, &[])
                .with_context(|| format!("generated {schema_type} version {}", i + 1))
        })
        .collect::<Result<_>>()?;
    let (newest, earlier) = parsed.split_last().context("versions")?;
    let history: Vec<(i64, &ParsedSchema)> = earlier
        .iter()
        .enumerate()
        .map(|(i, s)| (i as i64 + 1, s))
        .collect();
    // Every finding, as a compatibility test with `verbose` reports them; then as a
    // registration judges, keeping only errors and so building no info findings.
    let every = CheckOptions::default();
    let registration = CheckOptions {
        info_findings: InfoFindings::Skipped,
        ..CheckOptions::default()
    };
    // What a registration runs in all: the structural check and the semantic rules, which
    // read every earlier version; the earlier versions stay parsed between samples, as the
    // server's cache keeps them.
    let context = covenant_policy::PolicyContext::default();
    let settings = covenant_policy::PolicySettings::default();
    let judgement = covenant_policy::Judgement {
        level,
        candidate: newest,
        history: &history,
        lineage: &history,
        options: &registration,
        context: &context,
        settings: &settings,
    };
    let judged = covenant_engine::budget::unlimited(|m| judgement.judge(m));
    let t = time(runs, || {
        covenant_engine::budget::unlimited(|m| judgement.judge(m)).compatible
    });
    rows.push(
        Row::new(
            PART,
            format!("{label}, a registration's whole judgement (semantic rules included)"),
        )
        .covenant(t.describe())
        .peer("no Rust peer")
        .ratio("—")
        .notes(format!(
            "{} error findings, pre-parsed and kept parsed",
            judged.errors().count()
        )),
    );
    for (options, label) in [
        (every, label.clone()),
        (
            registration,
            format!("{label}, as a registration (no info findings)"),
        ),
    ] {
        let report = covenant_engine::budget::unlimited(|m| {
            covenant_schema::check(m, level, newest, &history, &options)
        });
        let t = time(runs, || {
            covenant_engine::budget::unlimited(|m| {
                covenant_schema::check(m, level, newest, &history, &options)
            })
            .compatible
        });
        rows.push(
            Row::new(PART, label)
                .covenant(t.describe())
                .peer("no Rust peer")
                .ratio("—")
                .notes(format!(
                    "{} ({} error findings of {}), pre-parsed",
                    if report.compatible {
                        "compatible"
                    } else {
                        "INCOMPATIBLE"
                    },
                    report.errors().count(),
                    report.findings.len()
                )),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corpus_lines_keep_shared_references_for_both_sides() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("c.jsonl");
        std::fs::write(
            &file,
            r#"{"id":"x:1","format":"AVRO","writer":"\"int\"","reader":"\"long\"","reader_can_read_writer":true,"references":[{"name":"a.B","schema":"{}"}]}"#,
        )
        .expect("write");
        let cases = load_corpus(&file).expect("load");
        assert_eq!(cases.len(), 1);
        assert!(cases[0].expected);
        assert_eq!(cases[0].writer_refs.len(), 1);
        assert_eq!(cases[0].reader_refs[0].name, "a.B");
    }

    #[test]
    fn a_case_without_expectation_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("c.jsonl");
        std::fs::write(&file, r#"{"id":"x","writer":"1","reader":"1"}"#).expect("write");
        assert!(load_corpus(&file).is_err());
    }
}

//! FULL_TRANSITIVE check of a large file (100 messages x 50 fields) against 100 earlier
//! versions. Parsing is timed separately and excluded from the check time.

use covenant_engine::{CheckOptions, Format, Level, PriorVersion, check_history};
use covenant_protobuf::ProtobufFormat;
use std::time::{Duration, Instant};

/// Version `v` of the file: every message gains one field per version, so each pair differs.
fn schema(v: usize) -> String {
    let mut s = String::from("syntax = \"proto3\";\npackage bench;\n");
    for m in 0..100 {
        s.push_str(&format!("message M{m} {{\n"));
        for f in 1..=50 {
            let ty = match f % 5 {
                0 => "string",
                1 => "int64",
                2 => "bool",
                3 => "double",
                _ => "bytes",
            };
            s.push_str(&format!("  {ty} f{f} = {f};\n"));
        }
        for extra in 0..v.min(20) {
            s.push_str(&format!("  int32 v{extra} = {};\n", 100 + extra));
        }
        s.push_str("}\n");
    }
    s
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn main() {
    let texts: Vec<String> = (0..=100).map(schema).collect();
    let mut parse_times = Vec::new();
    let mut parsed = Vec::new();
    for t in &texts {
        let start = Instant::now();
        let s = ProtobufFormat::parse(t, &[]).expect("benchmark schema parses");
        parse_times.push(start.elapsed());
        parsed.push(s);
    }
    let (candidate, history) = parsed.split_last().expect("101 versions");
    let prior: Vec<PriorVersion<'_, _>> = history
        .iter()
        .enumerate()
        .map(|(i, s)| PriorVersion {
            version: i as i64 + 1,
            schema: s,
        })
        .collect();
    let options = CheckOptions::default();
    let mut runs = Vec::new();
    let mut findings = 0;
    for _ in 0..5 {
        let start = Instant::now();
        let report = covenant_engine::budget::unlimited(|m| {
            check_history::<ProtobufFormat>(m, Level::FullTransitive, candidate, &prior, &options)
        });
        runs.push(start.elapsed());
        findings = report.findings.len();
    }
    let full = median(runs);
    let pairs = prior.len() * 2;
    println!(
        "protobuf FULL_TRANSITIVE over {} versions (100 messages x 50+ fields): median {:?} per history check, {:?} per pairwise check, {} findings",
        prior.len(),
        full,
        full / pairs as u32,
        findings
    );
    // The same comparison without findings to build: what walking the descriptors costs.
    let mut same = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        for _ in 0..100 {
            std::hint::black_box(covenant_engine::budget::unlimited(|m| {
                ProtobufFormat::check(m, candidate, candidate, &options)
            }));
        }
        same.push(start.elapsed() / 100);
    }
    println!(
        "protobuf identical pair (no findings): median {:?} per check",
        median(same)
    );
    println!(
        "protobuf parse: median {:?} per schema",
        median(parse_times)
    );
}

//! FULL_TRANSITIVE check of a 200-property schema against 200 earlier versions.

use covenant_engine::{CheckOptions, Format, Level, PriorVersion, check_history};
use covenant_jsonschema::JsonSchemaFormat;
use std::time::Instant;

/// Version `n` has `n` of the 200 optional properties, each a small nested object, in a
/// closed content model: backward checks pass, forward checks report the removed properties,
/// so the run exercises both clean and finding-heavy pairs.
fn schema(properties: usize) -> String {
    let props: Vec<String> = (0..properties)
        .map(|i| {
            format!(
                r#""p{i}":{{"type":"object","additionalProperties":false,"properties":{{"id":{{"type":"string","maxLength":64}},"n":{{"type":"integer","minimum":0}},"tags":{{"type":"array","items":{{"type":"string"}}}}}}}}"#
            )
        })
        .collect();
    format!(
        r#"{{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,"properties":{{{}}}}}"#,
        props.join(",")
    )
}

fn main() {
    let history: Vec<_> = (1..=200)
        .map(|n| JsonSchemaFormat::parse(&schema(n), &[]).expect("history parses"))
        .collect();
    let candidate = JsonSchemaFormat::parse(&schema(200), &[]).expect("candidate parses");
    let prior: Vec<PriorVersion<'_, _>> = history
        .iter()
        .enumerate()
        .map(|(i, s)| PriorVersion {
            version: i as i64 + 1,
            schema: s,
        })
        .collect();
    let options = CheckOptions::default();
    let mut times = Vec::new();
    let mut findings = 0;
    for _ in 0..11 {
        let start = Instant::now();
        let report = covenant_engine::budget::unlimited(|m| {
            check_history::<JsonSchemaFormat>(
                m,
                Level::FullTransitive,
                &candidate,
                &prior,
                &options,
            )
        });
        times.push(start.elapsed());
        findings = report.findings.len();
    }
    times.sort();
    let median = times[times.len() / 2];
    println!("{findings} findings per check");
    println!(
        "jsonschema full_transitive: 200 properties x 200 versions, median {:.2} ms per check ({:.1} us per pair)",
        median.as_secs_f64() * 1e3,
        median.as_secs_f64() * 1e6 / 400.0
    );
}

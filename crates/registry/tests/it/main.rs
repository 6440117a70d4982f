//! No input takes the registry down: random, recursive, deep and wide schemas of each format
//! driven through everything the registry does with a schema (parse, identity, the check at
//! every level, the semantic rules, the rollout plan, the field-tree diff of the removal
//! gate), on a thread with a 2 MiB stack like a server worker's, asserting no panic, bounded
//! time, and `LimitExceeded` for schemas built past a limit.
//!
//! The generators are seeded (`COVENANT_FUZZ_SEED`, default fixed) and run for a time
//! budget per format: `COVENANT_FUZZ_SECONDS` (default 3) — set it to 600 before a release.
//! `COVENANT_FUZZ_VERBOSE=1` prints each case before driving it.

mod cases;
mod generate;
mod postgres_guesses;

use covenant_engine::{CheckOptions, Level, Limit, Limits, SchemaErrorKind};
use covenant_policy::{PolicyContext, PolicySettings};
use covenant_registry::{CheckBudget, removed_fields};
use covenant_schema::{ParsedSchema, SchemaType};
use generate::Shape;
use proptest::prelude::RngExt;
use proptest::test_runner::{RngAlgorithm, TestRng};
use std::io::Write;
use std::time::{Duration, Instant};

/// A worker thread's stack: what `covenant serve` gives each request.
const WORKER_STACK: usize = 2 * 1024 * 1024;

/// The longest one generated case may take (debug build, shared machine): parsing is linear
/// and bounded by the limits, judging by the check budget.
const CASE_BOUND: Duration = Duration::from_secs(60);

/// Runs `f` on a thread with a server worker's stack; a stack overflow aborts the test
/// process, which is exactly the failure this suite exists to catch.
pub fn on_worker_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(WORKER_STACK)
            .spawn_scoped(scope, f)
            .expect("spawn a worker thread")
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// What became of one generated pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Both versions parsed and every check ran to a verdict.
    Judged { compatible: bool },
    /// A version was refused as invalid (a 42201).
    Invalid(SchemaErrorKind),
    /// The check budget was spent (a 42250).
    OverBudget,
}

/// Everything the registry does with a new version of a subject, in process.
pub fn drive(schema_type: SchemaType, old: &str, new: &str, limits: &Limits) -> Outcome {
    let parse = |text: &str| ParsedSchema::parse_with(schema_type, text, &[], limits);
    let (old, new) = match (parse(old), parse(new)) {
        (Ok(old), Ok(new)) => (old, new),
        (Err(e), _) | (_, Err(e)) => return Outcome::Invalid(e.kind),
    };
    let (options, context, settings) = (
        CheckOptions::default(),
        PolicyContext::default(),
        PolicySettings::default(),
    );
    // One budget per judgement, as the registry gives one per request.
    let budget = CheckBudget::default();
    let judged = (|| -> Result<bool, covenant_registry::RegistryError> {
        budget.run(|_| (old.normalized(), new.normalized()))?;
        let mut compatible = true;
        for level in Level::ALL {
            let report = budget.run(|m| {
                covenant_policy::judge(
                    m,
                    level,
                    &new,
                    &[(1, &old)],
                    &[(1, &old)],
                    &options,
                    &context,
                    &settings,
                )
            })?;
            compatible &= report.compatible;
            let _ = covenant_engine::render_text(&report);
        }
        let first = budget.run(|m| {
            covenant_policy::judge(
                m,
                Level::Backward,
                &old,
                &[],
                &[],
                &options,
                &context,
                &settings,
            )
        })?;
        let _ = covenant_engine::render_json(&first);
        let plan = budget.run(|m| {
            covenant_policy::rollout(m, &new, &[(1, &old)], &options, &context, &settings)
        })?;
        let _ = plan.render_text();
        budget.run(|m| removed_fields(m, &old, &new))?;
        Ok(compatible)
    })();
    match judged {
        Ok(compatible) => Outcome::Judged { compatible },
        Err(_) => Outcome::OverBudget,
    }
}

fn seed() -> u64 {
    std::env::var("COVENANT_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_c0de)
}

fn seconds() -> f64 {
    std::env::var("COVENANT_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0)
}

/// Counts of one generator's run.
#[derive(Default, Debug)]
struct Tally {
    cases: usize,
    judged: usize,
    invalid: usize,
    over_budget: usize,
    over_limit: usize,
}

/// Generates pairs with `make` until the time is up, driving each on a worker stack.
fn run_generator(
    format: SchemaType,
    make: impl Fn(&mut TestRng) -> (String, String, Limits, Option<Limit>) + Sync,
) -> Tally {
    let mut rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed().to_le_bytes().repeat(4));
    let deadline = Instant::now() + Duration::from_secs_f64(seconds());
    let mut tally = Tally::default();
    while Instant::now() < deadline {
        let case_seed: u64 = rng.random();
        let mut case_rng =
            TestRng::from_seed(RngAlgorithm::ChaCha, &case_seed.to_le_bytes().repeat(4));
        let (old, new, limits, expected) = make(&mut case_rng);
        if std::env::var_os("COVENANT_FUZZ_VERBOSE").is_some() {
            // Before driving it: a case that aborts the process is then still on record.
            let _ = writeln!(
                std::io::stderr(),
                "{format} case {case_seed}\nold: {old}\nnew: {new}"
            );
        }
        let started = Instant::now();
        let outcome = on_worker_stack(|| drive(format, &old, &new, &limits));
        let took = started.elapsed();
        assert!(
            took < CASE_BOUND,
            "{format} case {case_seed} took {took:?}\nold: {old}\nnew: {new}"
        );
        tally.cases += 1;
        match (outcome, expected) {
            (Outcome::Invalid(SchemaErrorKind::LimitExceeded), Some(_)) => tally.over_limit += 1,
            (other, Some(limit)) => panic!(
                "{format} case {case_seed} is built past {limit} but gave {other:?}\nold: {old}"
            ),
            (Outcome::Judged { .. }, None) => tally.judged += 1,
            (Outcome::Invalid(_), None) => tally.invalid += 1,
            (Outcome::OverBudget, None) => tally.over_budget += 1,
        }
    }
    tally
}

/// One generated pair: random within the default limits, or built past one limit (set low
/// so that the case stays cheap) and expected to be refused naming it.
fn avro_case(rng: &mut TestRng) -> (String, String, Limits, Option<Limit>) {
    if rng.random_bool(0.1) {
        let (text, limits, limit) = cases::avro_past_a_limit(rng);
        return (text.clone(), text, limits, Some(limit));
    }
    let shape = Shape::random(rng);
    let old = generate::Avro::schema(rng, shape);
    let new = generate::mutate_avro(rng, &old);
    (old.to_string(), new.to_string(), Limits::default(), None)
}

fn json_case(rng: &mut TestRng) -> (String, String, Limits, Option<Limit>) {
    if rng.random_bool(0.1) {
        let (text, limits, limit) = cases::json_past_a_limit(rng);
        return (text.clone(), text, limits, Some(limit));
    }
    let shape = Shape::random(rng);
    let old = generate::json_schema(rng, shape);
    let new = generate::mutate_json(rng, &old);
    (old.to_string(), new.to_string(), Limits::default(), None)
}

fn proto_case(rng: &mut TestRng) -> (String, String, Limits, Option<Limit>) {
    if rng.random_bool(0.1) {
        let (text, limits, limit) = cases::proto_past_a_limit(rng);
        return (text.clone(), text, limits, Some(limit));
    }
    let shape = Shape::random(rng);
    let old = generate::proto(rng, shape);
    let new = old.mutate(rng);
    (old.text(), new.text(), Limits::default(), None)
}

fn iceberg_case(rng: &mut TestRng) -> (String, String, Limits, Option<Limit>) {
    if rng.random_bool(0.1) {
        let (text, limits, limit) = cases::iceberg_past_a_limit(rng);
        return (text.clone(), text, limits, Some(limit));
    }
    let shape = Shape::random(rng);
    let old = generate::Iceberg::schema(rng, shape);
    let new = generate::mutate_iceberg(rng, &old);
    (old.to_string(), new.to_string(), Limits::default(), None)
}

#[test]
fn generated_schemas_never_take_the_process_down() {
    let runs = [
        (SchemaType::Avro, run_generator(SchemaType::Avro, avro_case)),
        (SchemaType::Json, run_generator(SchemaType::Json, json_case)),
        (
            SchemaType::Protobuf,
            run_generator(SchemaType::Protobuf, proto_case),
        ),
        (
            SchemaType::Iceberg,
            run_generator(SchemaType::Iceberg, iceberg_case),
        ),
    ];
    for (format, tally) in &runs {
        assert!(tally.cases > 0, "{format}: no case generated");
        assert!(
            tally.judged > 0,
            "{format}: no generated pair reached a verdict: {tally:?}"
        );
    }
    let summary: Vec<String> = runs
        .iter()
        .map(|(format, t)| {
            format!(
                "{format} {} cases ({} judged, {} invalid, {} over limit, {} over budget)",
                t.cases, t.judged, t.invalid, t.over_limit, t.over_budget
            )
        })
        .collect();
    // Straight to stderr, past the test harness's capture: the figures belong in the log.
    let _ = writeln!(
        std::io::stderr(),
        "adversarial suite (seed {}, {}s per format): {}",
        seed(),
        seconds(),
        summary.join("; ")
    );
}

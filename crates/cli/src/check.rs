//! `covenant check`, `canonical`, `fingerprint`, `validate` and `rules`: the offline commands.

use crate::output::{out, outln};
use anyhow::{Result, bail};
use covenant_engine::Direction;
use covenant_engine::budget::Metered;
use covenant_engine::{
    CheckOptions, JsonPolicy, Level, ProtobufStrictness, Reference, render_json,
    render_sarif_located, render_text_located,
};
use covenant_policy::replay::{Sample, SampleEncoding};
use covenant_policy::{PolicyContext, PolicySettings};
use covenant_schema::{ParsedSchema, SchemaType};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Exit code for invalid input or usage, as distinct from "incompatible" (1).
pub const EXIT_INVALID: u8 = 2;

/// An error that has already been described to the user in one line and maps to exit 2.
#[derive(Debug)]
pub struct InvalidInput(pub String);

impl std::fmt::Display for InvalidInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidInput {}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Output {
    Text,
    Json,
    Sarif,
}

#[derive(clap::Args)]
pub struct SchemaInputArgs {
    /// Schema format: avro, json (JSON Schema), protobuf or iceberg (a table schema, or a
    /// table's metadata.json whose current schema is read). Default: from the file extension
    /// (.proto is protobuf, .avsc avro) and, for other files such as .json, from the content
    /// (`$schema`, `properties` or a JSON Schema type is JSON Schema), else avro.
    #[arg(long, short = 'f')]
    pub format: Option<String>,
    /// A referenced schema, as NAME=FILE (Avro full name, JSON Schema $ref name, or Protobuf
    /// import path). Repeatable; list dependencies first.
    #[arg(long = "reference", value_name = "NAME=FILE")]
    pub references: Vec<String>,
    /// A folder whose .proto files can be imported, by their path relative to it. Repeatable.
    #[arg(long = "proto-path", value_name = "DIR")]
    pub proto_paths: Vec<PathBuf>,
    #[command(flatten)]
    pub limits: crate::limits::LimitArgs,
}

#[derive(clap::Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub input: SchemaInputArgs,
    /// NONE, BACKWARD, FORWARD, FULL, or their _TRANSITIVE variants.
    #[arg(long, short = 'l', default_value = "BACKWARD")]
    pub level: String,
    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value = "text")]
    pub output: Output,
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Compatibility scope for transitive levels: only these earlier versions (numbered from 1
    /// in the order given), e.g. 3,4. The last version is always in scope.
    #[arg(long, value_delimiter = ',', value_name = "N,N...")]
    pub scope_versions: Vec<i64>,
    #[command(flatten)]
    pub samples: SampleArgs,
    /// Judges every schema file changed since the git revision REV (the working tree against
    /// REV, untracked files included) against its versions in the history: its version at REV,
    /// and for transitive levels every earlier one the git log holds. PATHS (given where the
    /// new schema goes) limit the files considered.
    #[arg(long, value_name = "REV", conflicts_with = "against")]
    pub against_git: Option<String>,
    /// Judges NEW as the registry at URL judges registering it under --subject (the subject's
    /// level and scope, policy preset and rules, stored samples, consumers and usage, freezes,
    /// deprecations and approvals), without registering it.
    #[arg(long, value_name = "URL", requires = "subject")]
    pub against: Option<String>,
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// The new schema (with --against-git: the paths to consider).
    #[arg(required_unless_present = "against_git")]
    pub new: Option<PathBuf>,
    /// Earlier versions, oldest first. A folder is read in file-name order. Without any, the
    /// new schema is checked alone: the single-schema lints and the semantic rules that apply
    /// to a first version.
    pub old: Vec<PathBuf>,
}

/// Credentials for `--against URL`.
#[derive(clap::Args)]
pub struct RemoteArgs {
    /// HTTP Basic credentials for a registry with an auth file.
    #[arg(
        long,
        value_name = "USER:PASSWORD",
        env = "COVENANT_BASIC_AUTH",
        hide_env_values = true
    )]
    pub basic_auth: Option<String>,
    /// A bearer token (JWT) for a registry that validates tokens.
    #[arg(long, env = "COVENANT_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Trust this certificate authority (PEM) for an https registry, besides the system's.
    #[arg(long, value_name = "FILE", env = "COVENANT_CA_CERT")]
    pub ca_cert: Option<PathBuf>,
}

/// Payloads written with the new schema. Under FORWARD and FULL levels each is decoded with
/// the earlier versions as readers (the last one, or every one in scope when transitive).
#[derive(clap::Args)]
pub struct SampleArgs {
    /// A payload file written with the new schema, as its producer writes it. Repeatable.
    #[arg(long = "sample", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The samples' encoding: avro, protobuf, json or confluent. Default: avro for Avro, json
    /// for JSON Schema, protobuf for Protobuf.
    #[arg(long = "sample-encoding", value_name = "ENCODING")]
    pub encoding: Option<String>,
    /// Protobuf: the full name of the samples' message (needed without Confluent framing).
    #[arg(long = "sample-message", value_name = "NAME")]
    pub message: Option<String>,
}

impl SampleArgs {
    /// The payloads, each checked to decode with the candidate (exit 2 otherwise), within
    /// the check budget the flags set, as the registry decodes them.
    fn load(&self, candidate: &ParsedSchema, limits: &SchemaInputArgs) -> Result<Vec<Vec<u8>>> {
        if self.files.is_empty() {
            return Ok(Vec::new());
        }
        let encoding = self.encoding(candidate)?;
        let mut payloads = Vec::new();
        for path in &self.files {
            let payload = std::fs::read(path)
                .map_err(|e| InvalidInput(format!("{}: cannot read: {e}", path.display())))?;
            let sample = self.sample(encoding, 0, &payload);
            within_budget(limits, |m| {
                covenant_policy::replay::decode_sample(m, candidate, candidate, &sample)
            })?
            .map_err(|e| {
                InvalidInput(format!(
                    "{}: does not decode with the new schema: {e}",
                    path.display()
                ))
            })?;
            payloads.push(payload);
        }
        Ok(payloads)
    }

    fn encoding(&self, candidate: &ParsedSchema) -> Result<SampleEncoding> {
        let encoding = match &self.encoding {
            Some(text) => SampleEncoding::parse(text).ok_or_else(|| {
                InvalidInput(format!(
                    "invalid --sample-encoding '{text}': expected avro, protobuf, json or confluent"
                ))
            })?,
            None => match candidate {
                ParsedSchema::Avro(_) => SampleEncoding::Avro,
                ParsedSchema::Json(_) => SampleEncoding::Json,
                ParsedSchema::Protobuf(_) => SampleEncoding::Protobuf,
                ParsedSchema::Iceberg(_) => SampleEncoding::Json,
            },
        };
        covenant_policy::replay::check_encoding(candidate, encoding, self.message.as_deref())
            .map_err(|e| InvalidInput(format!("--sample: {e}")))?;
        Ok(encoding)
    }

    fn sample<'a>(&'a self, encoding: SampleEncoding, id: i64, payload: &'a [u8]) -> Sample<'a> {
        Sample {
            id,
            version: 0,
            encoding,
            message_name: self.message.as_deref(),
            payload,
        }
    }

    /// The forward replay findings of these samples against `history` at `level`.
    fn replay(
        &self,
        m: Metered<'_>,
        level: Level,
        candidate: &ParsedSchema,
        payloads: &[Vec<u8>],
        history: &[(i64, &ParsedSchema)],
        budget: std::time::Duration,
    ) -> Result<Vec<covenant_engine::Finding>> {
        if !level.directions().contains(&Direction::Forward) || payloads.is_empty() {
            return Ok(Vec::new());
        }
        let encoding = self.encoding(candidate)?;
        let samples: Vec<Sample<'_>> = payloads
            .iter()
            .zip(1..)
            .map(|(p, id)| self.sample(encoding, id, p))
            .collect();
        let readers: Vec<(i64, &ParsedSchema)> = if level.is_transitive() {
            history.to_vec()
        } else {
            history.last().copied().into_iter().collect()
        };
        Ok(covenant_policy::replay::replay_forward(
            m, candidate, &samples, &readers, budget,
        ))
    }
}

/// How a change is judged: format options, the semantic policy and the subject metadata it
/// consults. Shared by `check` and `plan` so both judge alike.
#[derive(clap::Args)]
pub struct PolicyArgs {
    /// Protobuf strictness: confluent, wire or wire_json.
    #[arg(long, default_value = "confluent")]
    pub strictness: String,
    /// JSON Schema policy: strict or lenient (Confluent's CompatibilityPolicy).
    #[arg(long, default_value = "strict")]
    pub json_policy: String,
    /// Policy preset, as the registry's `policyPreset` config: covenant (the seeds' dangerous
    /// changes are errors) or confluent (Confluent's verdicts; semantic findings never refuse).
    /// Default: the --policy file's `policyPreset`, else covenant.
    #[arg(long, value_name = "PRESET")]
    pub preset: Option<String>,
    /// Per-rule levels for the semantic rules, as JSON: {"semanticRules": {"LIKELY_RENAME": "error"}}
    /// (a `policyPreset` may be given too).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The subject's data-contract metadata, as Confluent's JSON: {"properties": {...}, "tags": {...}}.
    #[arg(long, value_name = "FILE")]
    pub metadata: Option<PathBuf>,
    /// The subject the schema is for; a `-key` subject is judged as a record key.
    #[arg(long)]
    pub subject: Option<String>,
}

impl PolicyArgs {
    fn load(&self) -> Result<(CheckOptions, PolicyContext, PolicySettings)> {
        let options = check_options(&self.strictness, &self.json_policy)?;
        let mut settings = match &self.policy {
            Some(path) => {
                let value = read_json(path)?;
                PolicySettings::from_json(&value)
                    .map_err(|e| InvalidInput(format!("{}: {e}", path.display())))?
            }
            None => PolicySettings::default(),
        };
        if let Some(text) = &self.preset {
            let preset = covenant_policy::Preset::parse(text).ok_or_else(|| {
                InvalidInput(format!(
                    "invalid --preset '{text}': expected covenant or confluent"
                ))
            })?;
            settings = settings.with_preset(preset);
        }
        let mut context = PolicyContext {
            subject: self.subject.clone(),
            ..PolicyContext::default()
        };
        if let Some(path) = &self.metadata {
            context.metadata = serde_json::from_value(read_json(path)?).map_err(|e| {
                InvalidInput(format!("{}: not subject metadata: {e}", path.display()))
            })?;
        }
        Ok((options, context, settings))
    }
}

fn check_options(strictness: &str, json_policy: &str) -> Result<CheckOptions> {
    let protobuf_strictness = ProtobufStrictness::parse(strictness).ok_or_else(|| {
        InvalidInput(format!(
            "invalid --strictness '{strictness}': expected confluent, wire or wire_json"
        ))
    })?;
    let json_policy = match json_policy.to_ascii_lowercase().as_str() {
        "strict" => JsonPolicy::Strict,
        "lenient" => JsonPolicy::Lenient,
        other => {
            return Err(InvalidInput(format!(
                "invalid --json-policy '{other}': expected strict or lenient"
            ))
            .into());
        }
    };
    Ok(CheckOptions {
        protobuf_strictness,
        json_policy,
        ..CheckOptions::default()
    })
}

/// The new schema and its history, parsed; versions are numbered from 1 in the given order.
fn load_history(
    input: &SchemaInputArgs,
    new: &Path,
    old: &[PathBuf],
    threads: bool,
) -> Result<(ParsedSchema, Vec<(i64, ParsedSchema)>)> {
    let chosen = schema_type_for(input, new)?;
    let schema_type = chosen.schema_type;
    let references = load_references(input, schema_type)?;
    let limits = input.limits.limits();
    // The new file is parsed on its own thread while the earlier ones are read and parsed:
    // for a pair of large Protobuf files, compiling them is most of a command's time. Its
    // error is still the one reported first.
    if !threads {
        let candidate = parse_file(&chosen, new, &references, &limits);
        let history = parse_history(&chosen, old, &references, &limits);
        return Ok((candidate?, history?));
    }
    let (candidate, history) = std::thread::scope(|scope| {
        let candidate = covenant_engine::parallel::spawn_beside(scope, || {
            parse_file(&chosen, new, &references, &limits)
        });
        let history = parse_history(&chosen, old, &references, &limits);
        let candidate = candidate
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (candidate, history)
    });
    Ok((candidate?, history?))
}

/// Inputs smaller than this, all files together, are parsed and judged on the calling thread
/// alone. Starting the helper threads costs more than they save below it: a pair of 4-field
/// Avro records took 3.4–3.5 ms alone against 4.1–4.2 ms with them, a pair of 29 KB Protobuf
/// files 10.3–10.6 against 10.7–11.2 ms, while a pair of 34 KB files gained 0.2–1.7 ms from
/// them and the 134 KB pair 10–13 ms.
const HELPER_THREADS_FROM_BYTES: u64 = 64 * 1024;

/// Whether the files to read are large enough for helper threads to pay for themselves.
fn worth_helper_threads(new: &Path, old: &[PathBuf]) -> bool {
    let mut files = vec![new.to_path_buf()];
    for path in old {
        if expand(path, &mut files).is_err() {
            // The error is reported when the file is read; the threads do not matter then.
            return false;
        }
    }
    let size = |p: &PathBuf| std::fs::metadata(p).map_or(0, |m| m.len());
    files.iter().map(size).sum::<u64>() >= HELPER_THREADS_FROM_BYTES
}

/// The earlier versions, numbered from 1 in the given order (directories expanded).
fn parse_history(
    chosen: &Chosen,
    old: &[PathBuf],
    references: &[Reference],
    limits: &covenant_engine::Limits,
) -> Result<Vec<(i64, ParsedSchema)>> {
    let mut old_files = Vec::new();
    for path in old {
        expand(path, &mut old_files)?;
    }
    let mut history = Vec::new();
    for (i, path) in old_files.iter().enumerate() {
        history.push((i as i64 + 1, parse_file(chosen, path, references, limits)?));
    }
    Ok(history)
}

pub fn run_check(args: CheckArgs) -> Result<ExitCode> {
    if let Some(revision) = &args.against_git {
        return crate::against_git::run(&args, revision);
    }
    if let Some(url) = &args.against {
        return crate::against_registry::run(&args, url);
    }
    let Some(new) = args.new.clone() else {
        bail!(InvalidInput(
            "the new schema file is missing (or pass --against-git REV)".into()
        ));
    };
    let threads = worth_helper_threads(&new, &args.old);
    let (candidate, history) = load_history(&args.input, &new, &args.old, threads)?;
    let report = verdict(&args, &candidate, &history, threads)?;
    let text = read(&new)?;
    let rendered = render(
        args.output,
        &report,
        &candidate,
        &text,
        &new.display().to_string(),
    )?;
    out!("{rendered}");
    let code = if report.compatible {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    // The process exits after this command, and freeing the parsed schemas piece by piece
    // (a large Protobuf file is tens of thousands of descriptor allocations) took longer
    // than the check; the operating system reclaims them at once.
    std::mem::forget((candidate, history, report));
    Ok(code)
}

/// The verdict on `candidate` after `history` (numbered from 1, oldest first) under the
/// flags' level, scope and policy, with the samples replayed: what `check` reports.
pub(crate) fn verdict(
    args: &CheckArgs,
    candidate: &ParsedSchema,
    history: &[(i64, ParsedSchema)],
    threads: bool,
) -> Result<covenant_engine::Report> {
    let level: Level = args.level.parse().map_err(InvalidInput)?;
    let (options, context, settings) = args.policy.load()?;
    let payloads = args.samples.load(candidate, &args.input)?;
    let in_scope = scoped_versions(&args.scope_versions, history)?;
    let history_refs: Vec<(i64, &ParsedSchema)> = history
        .iter()
        .filter(|(v, _)| in_scope.contains(v))
        .map(|(v, s)| (*v, s))
        .collect();
    let lineage: Vec<(i64, &ParsedSchema)> = history.iter().map(|(v, s)| (*v, s)).collect();
    let mut report = within_budget(&args.input, |m| {
        let judgement = covenant_policy::Judgement {
            level,
            candidate,
            history: &history_refs,
            lineage: &lineage,
            options: &options,
            context: &context,
            settings: &settings,
        };
        if threads {
            judgement.in_parallel(m)
        } else {
            judgement.judge(m)
        }
    })?;
    let replayed = within_budget(&args.input, |m| {
        args.samples.replay(
            m,
            level,
            candidate,
            &payloads,
            &history_refs,
            args.input.limits.budget().time,
        )
    })??;
    if !replayed.is_empty() {
        let mut findings = report.findings;
        findings.extend(replayed);
        report = covenant_engine::Report::from_findings(findings);
    }
    Ok(report)
}

/// A report as `output` shows it, positions located in `text` (the candidate's file, named
/// `uri` in SARIF).
pub(crate) fn render(
    output: Output,
    report: &covenant_engine::Report,
    candidate: &ParsedSchema,
    text: &str,
    uri: &str,
) -> Result<String> {
    // Parsed only for the outputs that show positions.
    let locator =
        std::cell::LazyCell::new(|| covenant_schema::Locator::for_schema(candidate, text));
    let locate = |path: &str| locator.locate(path);
    let rendered = match output {
        Output::Text => render_text_located(report, &locate),
        Output::Json => format!("{}\n", serde_json::to_string_pretty(&render_json(report))?),
        Output::Sarif => {
            let sarif = render_sarif_located(report, uri, &sarif_rules(), &locate);
            format!("{}\n", serde_json::to_string_pretty(&sarif)?)
        }
    };
    // See `run_check`: the locator's parse is left to the operating system.
    std::mem::forget(locator);
    Ok(rendered)
}

/// Every rule, as SARIF's rule list names them.
pub(crate) fn sarif_rules() -> Vec<&'static covenant_engine::RuleSpec> {
    covenant_policy::all_rule_groups()
        .into_iter()
        .flat_map(|(_, r)| r.iter().copied())
        .collect()
}

/// Runs a verdict or plan within the check budget the flags set, like the registry does; a
/// spent budget is invalid input (exit 2).
pub(crate) fn within_budget<T>(
    input: &SchemaInputArgs,
    f: impl FnOnce(Metered<'_>) -> T,
) -> Result<T> {
    input
        .limits
        .budget()
        .run(f)
        .map_err(|e| InvalidInput(e.to_string()).into())
}

/// Runs work that takes no check flags (field names for a proposal, data decoded for a
/// profile) under a budget without time or work limits; a walk past its size bounds still
/// spends it, which is invalid input (exit 2).
pub(crate) fn without_limits<T>(f: impl FnOnce(Metered<'_>) -> T) -> Result<T> {
    covenant_engine::budget::Budget::default()
        .run(f)
        .map_err(|e| InvalidInput(e.to_string()).into())
}

/// The version numbers `--scope-versions` keeps (every one when it is empty).
fn scoped_versions(listed: &[i64], history: &[(i64, ParsedSchema)]) -> Result<Vec<i64>> {
    if listed.is_empty() {
        return Ok(history.iter().map(|(v, _)| *v).collect());
    }
    let scope = covenant_policy::CompatibilityScope::Versions {
        versions: listed.to_vec(),
    };
    scope
        .validate()
        .map_err(|e| InvalidInput(format!("--scope-versions: {e}")))?;
    if let Some(missing) = listed
        .iter()
        .find(|v| !history.iter().any(|(n, _)| n == *v))
    {
        return Err(InvalidInput(format!(
            "--scope-versions: there is no version {missing}; {} earlier version(s) were given",
            history.len()
        ))
        .into());
    }
    let facts: Vec<covenant_policy::VersionFacts> = history
        .iter()
        .map(|(v, _)| covenant_policy::VersionFacts {
            version: *v,
            registered_at: 0,
            last_seen_at: None,
        })
        .collect();
    Ok(scope.select(&facts, 0))
}

#[derive(clap::Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub input: SchemaInputArgs,
    /// Output format (text or json).
    #[arg(long, short = 'o', value_enum, default_value = "text")]
    pub output: Output,
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// The new schema.
    pub new: PathBuf,
    /// Earlier versions, oldest first; the plan is for replacing the last one, and covers
    /// every one given (their producers, consumers and data may meet the new version).
    #[arg(required = true)]
    pub old: Vec<PathBuf>,
    /// Iceberg: the table the `ALTER TABLE` statements name.
    #[arg(long, default_value = covenant_iceberg::ddl::DEFAULT_TABLE)]
    pub table: String,
}

/// The rollout plan: which producer/consumer combinations are safe and in which order to
/// deploy. Exit 0 when some order is safe, 1 when a new subject or major version is needed.
pub fn run_plan(args: PlanArgs) -> Result<ExitCode> {
    let (options, context, settings) = args.policy.load()?;
    let threads = worth_helper_threads(&args.new, &args.old);
    let (candidate, history) = load_history(&args.input, &args.new, &args.old, threads)?;
    if history.is_empty() {
        return Err(InvalidInput("no earlier version given".into()).into());
    }
    let every: Vec<(i64, &ParsedSchema)> = history.iter().map(|(v, s)| (*v, s)).collect();
    let plan = within_budget(&args.input, |m| {
        covenant_policy::rollout(m, &candidate, &every, &options, &context, &settings)
    })?;
    let ddl = match (&candidate, history.last()) {
        (ParsedSchema::Iceberg(new), Some((_, ParsedSchema::Iceberg(old)))) => {
            Some(covenant_iceberg::plan_ddl(old, new, &args.table))
        }
        _ => None,
    };
    match args.output {
        Output::Json | Output::Sarif => {
            let mut value = serde_json::to_value(&plan)?;
            if let (Some(ddl), serde_json::Value::Object(map)) = (&ddl, &mut value) {
                map.insert("ddl".into(), ddl_json(ddl));
            }
            outln!("{}", serde_json::to_string_pretty(&value)?)
        }
        Output::Text => {
            out!("{}", plan.render_text());
            if let Some(ddl) = &ddl {
                out!("{}", ddl_text(ddl));
            }
        }
    }
    let refused = matches!(ddl, Some(Err(_)));
    Ok(
        if plan.order == covenant_policy::DeploymentOrder::Neither || refused {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        },
    )
}

type DdlResult = Result<covenant_iceberg::DdlPlan, Vec<covenant_engine::Finding>>;

/// The `ddl` member of `plan --output json`: the statements with their operations, or
/// `refused` with the findings that make the change one Iceberg cannot apply.
fn ddl_json(ddl: &DdlResult) -> serde_json::Value {
    match ddl {
        Ok(plan) => serde_json::to_value(plan).unwrap_or_default(),
        Err(findings) => serde_json::json!({ "refused": findings }),
    }
}

fn ddl_text(ddl: &DdlResult) -> String {
    match ddl {
        Ok(plan) => format!("\nIceberg DDL (Spark SQL):\n{}", plan.render()),
        Err(findings) => {
            let mut out =
                String::from("\nIceberg DDL: refused, Iceberg cannot apply this change:\n");
            for f in findings {
                out.push_str(&format!("  {} {}: {}\n", f.rule, f.path, f.message));
            }
            out
        }
    }
}

#[derive(clap::Args)]
pub struct CanonicalArgs {
    #[command(flatten)]
    pub input: SchemaInputArgs,
    pub file: PathBuf,
}

/// Reads and parses one schema file as the offline commands do (format, references, limits).
pub(crate) fn load_schema(input: &SchemaInputArgs, file: &Path) -> Result<ParsedSchema> {
    let chosen = schema_type_for(input, file)?;
    let references = load_references(input, chosen.schema_type)?;
    parse_file(&chosen, file, &references, &input.limits.limits())
}

/// Avro: the Parsing Canonical Form. JSON Schema and Protobuf: the normalized form.
pub fn run_canonical(args: CanonicalArgs) -> Result<ExitCode> {
    let chosen = schema_type_for(&args.input, &args.file)?;
    let references = load_references(&args.input, chosen.schema_type)?;
    let schema = parse_file(
        &chosen,
        &args.file,
        &references,
        &args.input.limits.limits(),
    )?;
    match &schema {
        ParsedSchema::Avro(avro) => outln!("{}", avro.canonical_form()),
        other => outln!("{}", other.normalized()),
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run_fingerprint(args: CanonicalArgs) -> Result<ExitCode> {
    let chosen = schema_type_for(&args.input, &args.file)?;
    let references = load_references(&args.input, chosen.schema_type)?;
    let schema = parse_file(
        &chosen,
        &args.file,
        &references,
        &args.input.limits.limits(),
    )?;
    match &schema {
        ParsedSchema::Avro(avro) => {
            let rabin = avro.rabin_fingerprint();
            outln!("rabin   {rabin:016x} ({})", rabin as i64);
            outln!("sha256  {}", hex(&avro.sha256_fingerprint()));
        }
        other => outln!("sha256  {}", sha256_hex(other.normalized().as_bytes())),
    }
    Ok(ExitCode::SUCCESS)
}

/// SHA-256 for the formats whose identity is their normalized text.
fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex(&Sha256::digest(bytes))
}

#[derive(clap::Args)]
pub struct ValidateArgs {
    /// The JSON Schema to validate against.
    #[arg(long)]
    pub schema: PathBuf,
    /// A referenced schema, as NAME=FILE. Repeatable.
    #[arg(long = "reference", value_name = "NAME=FILE")]
    pub references: Vec<String>,
    /// JSON documents to validate.
    #[arg(required = true)]
    pub documents: Vec<PathBuf>,
    #[command(flatten)]
    pub limits: crate::limits::LimitArgs,
}

pub fn run_validate(args: ValidateArgs) -> Result<ExitCode> {
    let input = SchemaInputArgs {
        format: Some("json".into()),
        references: args.references,
        proto_paths: Vec::new(),
        limits: args.limits,
    };
    let references = load_references(&input, SchemaType::Json)?;
    let chosen = Chosen {
        schema_type: SchemaType::Json,
        why: Why::Command,
    };
    let ParsedSchema::Json(schema) =
        parse_file(&chosen, &args.schema, &references, &input.limits.limits())?
    else {
        bail!("internal: JSON Schema parse returned another format");
    };
    let mut invalid = 0usize;
    for path in &args.documents {
        let text = read(path)?;
        let document: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| InvalidInput(format!("{}: not valid JSON: {e}", path.display())))?;
        let errors = covenant_jsonschema::validate(&schema, &document);
        if errors.is_empty() {
            outln!("{}: valid", path.display());
        } else {
            invalid += 1;
            outln!("{}: invalid ({} errors)", path.display(), errors.len());
            for e in errors {
                let at = if e.instance_path.is_empty() {
                    "/"
                } else {
                    &e.instance_path
                };
                outln!("  {at}: {} (schema {})", e.message, e.schema_path);
            }
        }
    }
    Ok(if invalid == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Why a file is read in the format it is: the message for a file that does not parse in
/// that format says so, and names `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Why {
    /// `--format` said so.
    Flag,
    /// The file's extension (`.proto`, `.avsc`).
    Extension,
    /// The file's content (JSON Schema keywords or Avro's `record`, `fields`, ...).
    Content,
    /// Nothing told; Avro is the default.
    Default,
    /// The command reads only one format.
    Command,
}

/// The format files are read in, and why.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Chosen {
    pub(crate) schema_type: SchemaType,
    why: Why,
}

pub(crate) fn schema_type_for(input: &SchemaInputArgs, file: &Path) -> Result<Chosen> {
    schema_type_of(input.format.as_deref(), file)
}

/// The format of `file`: `format` when given (a `--format` or a manifest's `format`), else
/// from its extension and content.
pub(crate) fn schema_type_of(format: Option<&str>, file: &Path) -> Result<Chosen> {
    if let Some(format) = format {
        let schema_type = format.parse().map_err(|_| {
            InvalidInput(format!(
                "invalid --format '{format}': expected avro, json, protobuf or iceberg"
            ))
        })?;
        return Ok(Chosen {
            schema_type,
            why: Why::Flag,
        });
    }
    let by_extension = match file.extension().and_then(|e| e.to_str()) {
        Some("proto") => Some(SchemaType::Protobuf),
        Some("avsc") => Some(SchemaType::Avro),
        _ => None,
    };
    if let Some(schema_type) = by_extension {
        return Ok(Chosen {
            schema_type,
            why: Why::Extension,
        });
    }
    let text = read(file)?;
    Ok(match infer_from_content(&text) {
        Some(schema_type) => Chosen {
            schema_type,
            why: Why::Content,
        },
        None => Chosen {
            schema_type: SchemaType::Avro,
            why: Why::Default,
        },
    })
}

/// Tells JSON Schema from Avro (and Iceberg) by content, for files whose extension (`.json`) fits them all.
/// JSON Schema: a boolean schema, or an object with `$schema`, `properties`, `$ref`, `$defs`
/// or a `type` only JSON Schema has. Avro: a `fields` or `symbols` list, or a `type` only
/// Avro has. Anything else (a bare `"string"`, a union) is left undecided.
fn infer_from_content(text: &str) -> Option<SchemaType> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    let object = match &value {
        serde_json::Value::Bool(_) => return Some(SchemaType::Json),
        serde_json::Value::Object(object) => object,
        _ => return None,
    };
    // Iceberg: a schema is `"type": "struct"` (a type neither other format has), and table
    // metadata carries `format-version`.
    if object.get("type").and_then(|t| t.as_str()) == Some("struct")
        || object.contains_key("format-version")
    {
        return Some(SchemaType::Iceberg);
    }
    const JSON_KEYS: [&str; 5] = ["$schema", "properties", "$ref", "$defs", "definitions"];
    const AVRO_KEYS: [&str; 2] = ["fields", "symbols"];
    if AVRO_KEYS.iter().any(|k| object.contains_key(*k)) {
        return Some(SchemaType::Avro);
    }
    if JSON_KEYS.iter().any(|k| object.contains_key(*k)) {
        return Some(SchemaType::Json);
    }
    let types: Vec<&str> = match object.get("type") {
        Some(serde_json::Value::String(t)) => vec![t.as_str()],
        Some(serde_json::Value::Array(ts)) => ts.iter().filter_map(|t| t.as_str()).collect(),
        _ => Vec::new(),
    };
    const JSON_ONLY: [&str; 4] = ["object", "integer", "number", "boolean"];
    const AVRO_ONLY: [&str; 10] = [
        "record", "enum", "fixed", "map", "int", "long", "float", "double", "bytes", "error",
    ];
    if types.iter().any(|t| AVRO_ONLY.contains(t)) {
        Some(SchemaType::Avro)
    } else if types.iter().any(|t| JSON_ONLY.contains(t)) {
        Some(SchemaType::Json)
    } else {
        None
    }
}

pub(crate) fn load_references(
    input: &SchemaInputArgs,
    schema_type: SchemaType,
) -> Result<Vec<Reference>> {
    let mut references = Vec::new();
    for spec in &input.references {
        let Some((name, file)) = spec.split_once('=') else {
            return Err(
                InvalidInput(format!("invalid --reference '{spec}': expected NAME=FILE")).into(),
            );
        };
        references.push(Reference {
            name: name.to_string(),
            subject: name.to_string(),
            version: 1,
            schema: read(Path::new(file))?,
        });
    }
    if schema_type == SchemaType::Protobuf {
        for dir in &input.proto_paths {
            let mut files = Vec::new();
            collect_protos(dir, &mut files)?;
            files.sort();
            for file in files {
                let name = file
                    .strip_prefix(dir)
                    .unwrap_or(&file)
                    .to_string_lossy()
                    .replace('\\', "/");
                references.push(Reference {
                    subject: name.clone(),
                    name,
                    version: 1,
                    schema: read(&file)?,
                });
            }
        }
    }
    Ok(references)
}

fn collect_protos(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| InvalidInput(format!("{}: cannot read folder: {e}", dir.display())))?;
    for entry in entries {
        let path = entry?.path();
        if path.is_dir() {
            collect_protos(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "proto") {
            out.push(path);
        }
    }
    Ok(())
}

fn expand(path: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| InvalidInput(format!("{}: cannot read folder: {e}", path.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(
                InvalidInput(format!("{}: folder holds no schema files", path.display())).into(),
            );
        }
        out.extend(files);
    } else {
        out.push(path.to_path_buf());
    }
    Ok(())
}

fn read_json(path: &Path) -> Result<serde_json::Value> {
    serde_json::from_str(&read(path)?)
        .map_err(|e| InvalidInput(format!("{}: not valid JSON: {e}", path.display())).into())
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path)
        .map_err(|e| InvalidInput(format!("{}: cannot read: {e}", path.display())).into())
}

pub(crate) fn parse_file(
    chosen: &Chosen,
    path: &Path,
    references: &[Reference],
    limits: &covenant_engine::Limits,
) -> Result<ParsedSchema> {
    let text = read(path)?;
    let schema_type = chosen.schema_type;
    ParsedSchema::parse_with(schema_type, &text, references, limits).map_err(|mut e| {
        if schema_type == SchemaType::Protobuf {
            e.path = with_user_file_name(&e.path, path, references);
        }
        let why = match chosen.why {
            Why::Flag => format!(" (read as {schema_type} because --format says so)"),
            Why::Extension => format!(
                " (read as {schema_type} by its file extension; pass --format to choose another format)"
            ),
            Why::Content => format!(
                " (read as {schema_type}, the format its content suggests; pass --format avro, json, protobuf or iceberg to choose)"
            ),
            Why::Default => format!(
                " (read as {schema_type}, the default; pass --format json or protobuf for other formats)"
            ),
            Why::Command => String::new(),
        };
        InvalidInput(format!(
            "{}: invalid {schema_type} schema: {e}{why}",
            path.display()
        ))
        .into()
    })
}

/// A Protobuf error names the file the parser compiled (`schema.proto:5:3`); the user knows
/// it by the path they gave.
fn with_user_file_name(location: &str, path: &Path, references: &[Reference]) -> String {
    let compiled = covenant_protobuf::main_file_name(references);
    match location.strip_prefix(&compiled) {
        Some(rest) if rest.is_empty() || rest.starts_with(':') => {
            format!("{}{rest}", path.display())
        }
        _ => location.to_string(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helper_threads_start_only_for_inputs_past_the_threshold() {
        let dir = tempfile::tempdir().expect("temp dir");
        let write = |name: &str, bytes: u64| {
            let path = dir.path().join(name);
            std::fs::write(&path, vec![b' '; bytes as usize]).expect("write");
            path
        };
        let half = HELPER_THREADS_FROM_BYTES / 2;
        let (small_new, small_old) = (write("a.avsc", 100), write("b.avsc", 100));
        assert!(!worth_helper_threads(&small_new, &[small_old]));
        let large = write("large.proto", HELPER_THREADS_FROM_BYTES);
        assert!(worth_helper_threads(&large, &[]));

        let folder = dir.path().join("history");
        std::fs::create_dir(&folder).expect("folder");
        for name in ["v1.proto", "v2.proto"] {
            std::fs::write(folder.join(name), vec![b' '; half as usize]).expect("write");
        }
        assert!(
            worth_helper_threads(&small_new, &[folder]),
            "a folder counts the files it holds"
        );
        assert!(!worth_helper_threads(&dir.path().join("missing"), &[]));
    }
}

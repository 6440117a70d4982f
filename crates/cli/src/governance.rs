//! `covenant consumers|deprecations|usage ...`: consumer governance against a running server
//! over its `/covenant/v1/` API. Exit 0 on success, 1 when the server refuses or reports an
//! error (its message is printed), 2 when the server cannot be reached or the input is bad.

use crate::output::{out, outln};
use anyhow::Context;
use covenant_governance::{Clock, FileClock, SystemClock};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

const DEFAULT_URL: &str = "http://127.0.0.1:8081";

/// Governance decisions read this clock: the wall clock, or a clock file for drills (see
/// `docs/governance.md`).
pub fn clock(clock_file: Option<&Path>) -> Arc<dyn Clock> {
    match clock_file {
        Some(path) => {
            tracing::warn!(path = %path.display(), "governance time comes from a clock file");
            Arc::new(FileClock::new(path))
        }
        None => Arc::new(SystemClock),
    }
}

#[derive(clap::Args, Clone)]
pub struct Server {
    /// The registry's base URL.
    #[arg(long, global = true, default_value = DEFAULT_URL, env = "COVENANT_URL")]
    pub(crate) url: String,
    /// HTTP Basic credentials for a registry with an auth file.
    #[arg(
        long,
        global = true,
        value_name = "USER:PASSWORD",
        env = "COVENANT_BASIC_AUTH",
        hide_env_values = true
    )]
    pub(crate) basic_auth: Option<String>,
    /// A bearer token (JWT) for a registry that validates tokens.
    #[arg(long, global = true, env = "COVENANT_TOKEN", hide_env_values = true)]
    pub(crate) token: Option<String>,
    /// Trust this certificate authority (PEM) for an https registry, besides the system's.
    #[arg(long, global = true, value_name = "FILE", env = "COVENANT_CA_CERT")]
    pub(crate) ca_cert: Option<std::path::PathBuf>,
}

impl Server {
    /// An HTTP client trusting `--ca-cert` when given.
    pub(crate) fn client(&self) -> anyhow::Result<reqwest::Client> {
        let mut builder = covenant_exporter::client::builder();
        if let Some(path) = &self.ca_cert {
            let pem = std::fs::read(path)
                .with_context(|| format!("reading --ca-cert {}", path.display()))?;
            let certificate = reqwest::Certificate::from_pem(&pem)
                .with_context(|| format!("{}: not a PEM certificate", path.display()))?;
            builder = builder.add_root_certificate(certificate);
        }
        builder.build().context("building the HTTP client")
    }

    /// `request` with this caller's credentials, if any were given.
    pub(crate) fn authorize(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let request = match self.basic_auth.as_deref().map(|c| c.split_once(':')) {
            Some(Some((user, password))) => request.basic_auth(user, Some(password)),
            Some(None) => {
                request.basic_auth(self.basic_auth.as_deref().unwrap_or(""), None::<&str>)
            }
            None => request,
        };
        match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }
}

// ----- consumers ---------------------------------------------------------------------------

#[derive(clap::Args)]
pub struct ConsumersArgs {
    #[command(flatten)]
    server: Server,
    #[command(subcommand)]
    command: ConsumersCommand,
}

#[derive(clap::Args)]
struct Declaration {
    /// Team or person accountable for the consumer.
    #[arg(long)]
    owner: Option<String>,
    /// The business purpose it serves.
    #[arg(long)]
    purpose: Option<String>,
    /// How often it runs: hourly, daily, weekly, monthly, quarterly, yearly.
    #[arg(long)]
    cadence: Option<String>,
    /// low, medium, high or critical.
    #[arg(long)]
    criticality: Option<String>,
    /// How to reach the owner.
    #[arg(long)]
    contact: Option<String>,
    /// A client id or credential whose usage reports belong to this consumer (repeatable).
    #[arg(long = "client")]
    clients: Vec<String>,
    /// What it reads: SUBJECT[@READER_VERSION][:field,field...] (repeatable; replaces all reads).
    #[arg(long = "reads")]
    reads: Vec<String>,
    /// production (default) or non-production: while a deprecation is enforcing, a
    /// non-production consumer's report of reading the field is answered with a failure.
    #[arg(long)]
    environment: Option<String>,
}

#[derive(clap::Subcommand)]
enum ConsumersCommand {
    /// Declare a consumer.
    Add {
        name: String,
        #[command(flatten)]
        declaration: Declaration,
    },
    /// Change a consumer's declaration (options given replace their current values).
    Update {
        name: String,
        #[command(flatten)]
        declaration: Declaration,
    },
    /// List consumers.
    List {
        /// Include retired consumers.
        #[arg(long)]
        all: bool,
    },
    /// Show one consumer.
    Show { name: String },
    /// Retire a consumer (its record stays).
    Retire { name: String },
}

/// `SUBJECT[@VERSION][:a,b]` as a declared read.
fn parse_read(text: &str) -> anyhow::Result<Value> {
    let (head, fields) = match text.split_once(':') {
        Some((h, f)) => (h, f),
        None => (text, ""),
    };
    let (subject, version) = match head.rsplit_once('@') {
        Some((s, v)) => {
            let v: i64 = v.trim().parse().map_err(|_| {
                invalid(format!(
                    "reader version '{v}' in --reads '{text}' is not a number"
                ))
            })?;
            (s, Some(v))
        }
        None => (head, None),
    };
    if subject.trim().is_empty() {
        return Err(invalid(format!("--reads '{text}' names no subject")));
    }
    let fields: Vec<&str> = fields
        .split(',')
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .collect();
    let mut read = json!({"subject": subject.trim(), "fields": fields});
    if let (Some(v), Value::Object(m)) = (version, &mut read) {
        m.insert("reader_version".into(), json!(v));
    }
    Ok(read)
}

fn invalid(message: String) -> anyhow::Error {
    anyhow::Error::new(crate::check::InvalidInput(message))
}

impl Declaration {
    fn apply(self, into: &mut Map<String, Value>) -> anyhow::Result<()> {
        for (key, value) in [
            ("owner", self.owner),
            ("purpose", self.purpose),
            ("cadence", self.cadence.map(|c| c.to_ascii_lowercase())),
            (
                "criticality",
                self.criticality.map(|c| c.to_ascii_lowercase()),
            ),
            ("contact", self.contact),
            (
                "environment",
                self.environment.map(|e| e.trim().to_ascii_lowercase()),
            ),
        ] {
            if let Some(v) = value {
                into.insert(key.into(), json!(v));
            }
        }
        if !self.clients.is_empty() {
            into.insert("clients".into(), json!(self.clients));
        }
        if !self.reads.is_empty() {
            let reads = self
                .reads
                .iter()
                .map(|r| parse_read(r))
                .collect::<anyhow::Result<Vec<_>>>()?;
            into.insert("reads".into(), Value::Array(reads));
        }
        Ok(())
    }
}

pub fn run_consumers(args: ConsumersArgs) -> anyhow::Result<ExitCode> {
    let api = Api::new(&args.server)?;
    match args.command {
        ConsumersCommand::Add { name, declaration } => {
            let mut body = Map::new();
            body.insert("name".into(), json!(name));
            declaration.apply(&mut body)?;
            api.print_json("POST", "/covenant/v1/consumers", Some(Value::Object(body)))
        }
        ConsumersCommand::Update { name, declaration } => {
            let path = format!("/covenant/v1/consumers/{}", segment(&name));
            let current = match api.call("GET", &path, None)? {
                Ok(v) => v,
                Err(code) => return Ok(code),
            };
            let mut body = Map::new();
            for key in [
                "owner",
                "purpose",
                "cadence",
                "criticality",
                "contact",
                "clients",
                "reads",
                "environment",
            ] {
                if let Some(v) = current.get(key) {
                    body.insert(key.into(), v.clone());
                }
            }
            body.insert("name".into(), json!(name));
            declaration.apply(&mut body)?;
            api.print_json("PUT", &path, Some(Value::Object(body)))
        }
        ConsumersCommand::List { all } => {
            let path = if all {
                "/covenant/v1/consumers?includeRetired=true"
            } else {
                "/covenant/v1/consumers"
            };
            match api.call("GET", path, None)? {
                Ok(Value::Array(list)) => {
                    for c in &list {
                        outln!("{}", consumer_line(c));
                    }
                    if list.is_empty() {
                        outln!("no consumers declared");
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Ok(other) => {
                    outln!("{other:#}");
                    Ok(ExitCode::SUCCESS)
                }
                Err(code) => Ok(code),
            }
        }
        ConsumersCommand::Show { name } => api.print_json(
            "GET",
            &format!("/covenant/v1/consumers/{}", segment(&name)),
            None,
        ),
        ConsumersCommand::Retire { name } => api.print_json(
            "POST",
            &format!("/covenant/v1/consumers/{}/retire", segment(&name)),
            None,
        ),
    }
}

fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

/// `name  cadence  owner  reads subject@v:fields; ...` for listings.
fn consumer_line(c: &Value) -> String {
    let reads: Vec<String> = c
        .get("reads")
        .and_then(Value::as_array)
        .map(|reads| {
            reads
                .iter()
                .map(|r| {
                    let version = r
                        .get("reader_version")
                        .and_then(Value::as_i64)
                        .map(|v| format!("@{v}"))
                        .unwrap_or_default();
                    let fields: Vec<&str> = r
                        .get("fields")
                        .and_then(Value::as_array)
                        .map(|f| f.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    format!("{}{version}:{}", text(r, "subject"), fields.join(","))
                })
                .collect()
        })
        .unwrap_or_default();
    let retired = if c.get("retired_at").is_some_and(|v| !v.is_null()) {
        " (retired)"
    } else {
        ""
    };
    let environment = match c.get("environment").and_then(Value::as_str) {
        Some(e) => format!(" ({e})"),
        None => String::new(),
    };
    format!(
        "{}{retired}{environment}  {}  owner {}  reads {}",
        text(c, "name"),
        text(c, "cadence"),
        text(c, "owner"),
        if reads.is_empty() {
            "nothing declared".to_string()
        } else {
            reads.join("; ")
        }
    )
}

// ----- deprecations ------------------------------------------------------------------------

#[derive(clap::Args)]
pub struct DeprecationsArgs {
    #[command(flatten)]
    server: Server,
    #[command(subcommand)]
    command: DeprecationsCommand,
}

#[derive(clap::Subcommand)]
enum DeprecationsCommand {
    /// Announce the deprecation of a field (or send a whole record with --file).
    Create(CreateArgs),
    /// Move a deprecation to a stage: announced, frozen, enforcing, removable, removed.
    Stage {
        id: i64,
        stage: String,
        /// Who decided.
        #[arg(long)]
        by: String,
        #[arg(long, default_value = "")]
        note: String,
    },
    /// Attach evidence to a claim in the record.
    Evidence(EvidenceArgs),
    /// Edit a record's notes (and its contract, replacement, window or sunset); what changed
    /// is kept in the record's updates, and the record is printed.
    Update(UpdateArgs),
    /// Record an approved exception that overrides one blocker.
    Exception {
        id: i64,
        /// The blocker kind it overrides (e.g. recent_usage, insufficient_evidence).
        #[arg(long)]
        overrides: String,
        #[arg(long)]
        approver: String,
        #[arg(long)]
        reason: String,
        /// Narrow it to one consumer (or, for unattributed usage, one client id).
        #[arg(long)]
        party: Option<String>,
    },
    /// Print the deprecation record (text, or --json with the gate's verdict).
    Show {
        id: i64,
        #[arg(long)]
        json: bool,
    },
    /// List deprecations.
    List {
        #[arg(long)]
        subject: Option<String>,
    },
    /// Preview the removal gate for a candidate schema file (nothing is registered).
    Gate {
        subject: String,
        /// The candidate schema file.
        schema: PathBuf,
        /// AVRO, JSON or PROTOBUF.
        #[arg(long = "type", default_value = "AVRO")]
        schema_type: String,
    },
}

#[derive(clap::Args)]
struct UpdateArgs {
    id: i64,
    /// Who edits it.
    #[arg(long)]
    by: String,
    /// Why, kept with the change.
    #[arg(long, default_value = "")]
    note: String,
    /// The mixed-versions note: how old and new producers and consumers coexist.
    #[arg(long)]
    mixed_versions: Option<String>,
    /// The discovery note: how the consumers were found.
    #[arg(long)]
    discovery: Option<String>,
    /// The migration-evidence note: what shows each consumer moved.
    #[arg(long)]
    migration_evidence: Option<String>,
    /// The freeze note: what keeps new consumers off the old field.
    #[arg(long)]
    freeze: Option<String>,
    /// The enforcement note: the reversible steps before removal.
    #[arg(long)]
    enforcement: Option<String>,
    /// The fallback note: how the old field comes back if a reader appears.
    #[arg(long)]
    fallback: Option<String>,
    /// The removal note: every artifact that goes with the field.
    #[arg(long)]
    removal: Option<String>,
    /// The contract the record is about.
    #[arg(long)]
    contract: Option<String>,
    /// The field consumers move to (an empty text clears it).
    #[arg(long)]
    replacement: Option<String>,
    /// Window start (RFC 3339 or epoch ms).
    #[arg(long)]
    window_start: Option<String>,
    /// Window end (RFC 3339 or epoch ms).
    #[arg(long)]
    window_end: Option<String>,
    /// When the field stops being served (RFC 3339 or epoch ms), sent in `Sunset` headers.
    #[arg(long)]
    sunset: Option<String>,
}

/// The `PATCH /covenant/v1/deprecations/{id}` body of an update: only what was given.
fn update_body(args: &UpdateArgs) -> anyhow::Result<Value> {
    let mut body = Map::new();
    body.insert("by".into(), json!(args.by));
    if !args.note.is_empty() {
        body.insert("note".into(), json!(args.note));
    }
    let mut notes = Map::new();
    for (key, value) in [
        ("mixed_versions", &args.mixed_versions),
        ("discovery", &args.discovery),
        ("migration_evidence", &args.migration_evidence),
        ("freeze", &args.freeze),
        ("enforcement", &args.enforcement),
        ("fallback", &args.fallback),
        ("removal", &args.removal),
    ] {
        if let Some(text) = value {
            notes.insert(key.into(), json!(text));
        }
    }
    if !notes.is_empty() {
        body.insert("notes".into(), Value::Object(notes));
    }
    for (key, value) in [
        ("contract", &args.contract),
        ("replacement", &args.replacement),
    ] {
        if let Some(text) = value {
            body.insert(key.into(), json!(text));
        }
    }
    for (key, value) in [
        ("window_start", &args.window_start),
        ("window_end", &args.window_end),
        ("sunset", &args.sunset),
    ] {
        if let Some(time) = value {
            body.insert(key.into(), time_value(time));
        }
    }
    if body.len() == 1 {
        return Err(invalid(
            "say what to change: a note (--mixed-versions, --discovery, --migration-evidence, --freeze, --enforcement, --fallback, --removal), --contract, --replacement, --window-start, --window-end or --sunset".into(),
        ));
    }
    Ok(Value::Object(body))
}

#[derive(clap::Args)]
struct CreateArgs {
    /// A JSON file holding the whole record (target, promises, owners, notes...).
    #[arg(long, conflicts_with_all = ["subject", "field"])]
    file: Option<PathBuf>,
    #[arg(long, required_unless_present = "file")]
    subject: Option<String>,
    /// The field path being retired (e.g. plan_name or customer.id).
    #[arg(long, required_unless_present = "file")]
    field: Option<String>,
    /// The field consumers move to.
    #[arg(long)]
    replacement: Option<String>,
    #[arg(long, default_value = "")]
    contract: String,
    #[arg(long = "old-promise", default_value = "")]
    old_promise: String,
    #[arg(long = "new-promise", default_value = "")]
    new_promise: String,
    /// ROLE=NAME (repeatable): producer, consumer, platform, steward, risk approver.
    #[arg(long = "owner")]
    owners: Vec<String>,
    /// Window end (RFC 3339 or epoch ms); default 90 days after the start.
    #[arg(long = "window-end")]
    window_end: Option<String>,
    /// When the field stops being served (RFC 3339 or epoch ms), sent in `Sunset` headers.
    #[arg(long)]
    sunset: Option<String>,
    /// Who announces it.
    #[arg(long, default_value = "")]
    by: String,
    /// Attach how often the field is filled in this profile (`covenant profile -o FILE`) as
    /// the record's first evidence.
    #[arg(
        long = "evidence-profile",
        value_name = "FILE",
        conflicts_with = "file"
    )]
    evidence_profile: Option<PathBuf>,
}

#[derive(clap::Args)]
struct EvidenceArgs {
    id: i64,
    /// The claim in the record this evidence supports.
    #[arg(long)]
    claim: String,
    /// Who records it.
    #[arg(long)]
    by: String,
    /// A consumer owner's sign-off for CONSUMER.
    #[arg(long = "sign-off", group = "kind")]
    sign_off: Option<String>,
    /// Who signed (with --sign-off).
    #[arg(long)]
    who: Option<String>,
    /// What they stated (with --sign-off).
    #[arg(long, default_value = "")]
    statement: String,
    /// Run a usage query of --field of --subject now and keep its result.
    #[arg(long = "usage-query", group = "kind")]
    usage_query: bool,
    #[arg(long)]
    subject: Option<String>,
    #[arg(long)]
    field: Option<String>,
    /// Only this consumer's reads (with --usage-query).
    #[arg(long)]
    consumer: Option<String>,
    /// Only reads no consumer owns (with --usage-query).
    #[arg(long)]
    unattributed: bool,
    /// Range start (RFC 3339 or epoch ms).
    #[arg(long)]
    from: Option<String>,
    /// Range end (RFC 3339 or epoch ms).
    #[arg(long)]
    to: Option<String>,
    /// A sample replay result for SAMPLE.
    #[arg(long, group = "kind")]
    replay: Option<String>,
    /// A canary run on PATH (the bounded tenant, service, group or region that ran without
    /// the old field).
    #[arg(long, group = "kind")]
    canary: Option<String>,
    /// A run in the non-production ENVIRONMENT with the old field omitted.
    #[arg(
        long = "non-production-omission",
        group = "kind",
        value_name = "ENVIRONMENT"
    )]
    non_production_omission: Option<String>,
    /// The run failed (with --replay, --canary or --non-production-omission).
    #[arg(long)]
    failed: bool,
    #[arg(long, default_value = "")]
    detail: String,
    /// Where the run's result can be seen (with --canary or --non-production-omission).
    #[arg(long)]
    link: Option<String>,
    /// A profile document (`covenant profile -o FILE`): how often --field is filled in the data.
    #[arg(long, group = "kind", value_name = "FILE")]
    profile: Option<PathBuf>,
}

fn time_value(text: &str) -> Value {
    match text.trim().parse::<i64>() {
        Ok(ms) => json!(ms),
        Err(_) => json!(text.trim()),
    }
}

fn create_body(args: CreateArgs) -> anyhow::Result<Value> {
    if let Some(file) = args.file {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        return serde_json::from_str(&text)
            .map_err(|e| invalid(format!("{} is not JSON: {e}", file.display())));
    }
    let owners = args
        .owners
        .iter()
        .map(|o| match o.split_once('=') {
            Some((role, name)) => Ok(json!({"role": role.trim(), "name": name.trim()})),
            None => Err(invalid(format!("--owner '{o}' must be ROLE=NAME"))),
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut body = json!({
        "target": {"kind": "field", "subject": args.subject, "path": args.field},
        "contract": args.contract,
        "old_promise": args.old_promise,
        "new_promise": args.new_promise,
        "owners": owners,
        "announced_by": args.by,
    });
    if let Value::Object(m) = &mut body {
        if let Some(r) = args.replacement {
            m.insert("replacement".into(), json!(r));
        }
        if let Some(end) = args.window_end {
            m.insert("window_end".into(), time_value(&end));
        }
        if let Some(sunset) = args.sunset {
            m.insert("sunset".into(), time_value(&sunset));
        }
    }
    Ok(body)
}

fn evidence_body(args: &EvidenceArgs) -> anyhow::Result<Value> {
    if let Some(consumer) = &args.sign_off {
        let who = args
            .who
            .clone()
            .ok_or_else(|| invalid("--sign-off needs --who".into()))?;
        return Ok(
            json!({"kind": "sign_off", "consumer": consumer, "who": who, "statement": args.statement}),
        );
    }
    if let Some(sample) = &args.replay {
        return Ok(
            json!({"kind": "replay_result", "sample": sample, "passed": !args.failed, "detail": args.detail}),
        );
    }
    let outcome = if args.failed { "failed" } else { "passed" };
    let run = |mut body: Value| {
        if let (Some(link), Value::Object(m)) = (&args.link, &mut body) {
            m.insert("link".into(), json!(link));
        }
        body
    };
    if let Some(path) = &args.canary {
        return Ok(run(
            json!({"kind": "canary", "path": path, "outcome": outcome, "detail": args.detail}),
        ));
    }
    if let Some(environment) = &args.non_production_omission {
        return Ok(run(json!({
            "kind": "non_production_omission", "environment": environment,
            "outcome": outcome, "detail": args.detail
        })));
    }
    if let Some(file) = &args.profile {
        let field = args
            .field
            .as_deref()
            .ok_or_else(|| invalid("--profile needs --field".into()))?;
        return profile_evidence(file, field);
    }
    if args.usage_query {
        let attribution = match (&args.consumer, args.unattributed) {
            (Some(c), false) => json!({"kind": "consumer", "consumer": c}),
            (None, true) => json!({"kind": "unattributed"}),
            (None, false) => json!({"kind": "any"}),
            (Some(_), true) => {
                return Err(invalid(
                    "choose --consumer or --unattributed, not both".into(),
                ));
            }
        };
        let (Some(from), Some(to)) = (&args.from, &args.to) else {
            return Err(invalid("--usage-query needs --from and --to".into()));
        };
        let mut query =
            json!({"attribution": attribution, "from": time_value(from), "to": time_value(to)});
        if let Value::Object(m) = &mut query {
            if let Some(s) = &args.subject {
                m.insert("subject".into(), json!(s));
            }
            if let Some(f) = &args.field {
                m.insert("field".into(), json!(f));
            }
        }
        return Ok(json!({"kind": "usage_query", "query": query}));
    }
    Err(invalid(
        "say what the evidence is: --sign-off CONSUMER, --usage-query, --replay SAMPLE, --canary PATH, --non-production-omission ENVIRONMENT or --profile FILE".into(),
    ))
}

/// The `data_profile` evidence of `field` (a dotted field path, as deprecations name fields)
/// read from a profile document.
fn profile_evidence(file: &std::path::Path, field: &str) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(file).map_err(|e| invalid(format!("{}: {e}", file.display())))?;
    let profile = covenant_profile::Profile::from_json(&text)
        .map_err(|e| invalid(format!("{}: {e}", file.display())))?;
    let path: String = field
        .split('.')
        .map(|part| format!("/{}", covenant_profile::segment(part)))
        .collect();
    let (present, non_null) = profile
        .paths
        .get(&path)
        .map_or((0, 0), |stats| (stats.present, stats.non_null));
    Ok(json!({
        "kind": "data_profile", "path": path, "records": profile.records,
        "present": present, "non_null": non_null,
        "source": file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
    }))
}

pub fn run_deprecations(args: DeprecationsArgs) -> anyhow::Result<ExitCode> {
    let api = Api::new(&args.server)?;
    match args.command {
        DeprecationsCommand::Create(create) => {
            let evidence = match (&create.evidence_profile, &create.field) {
                (Some(file), Some(field)) => Some(profile_evidence(file, field)?),
                _ => None,
            };
            let by = create.by.clone();
            let body = create_body(create)?;
            match api.call("POST", "/covenant/v1/deprecations", Some(body))? {
                Ok(record) => {
                    let id = record.get("id").and_then(Value::as_i64).unwrap_or(0);
                    outln!("created deprecation #{id}");
                    if let Some(evidence) = evidence {
                        let body = json!({
                            "claim": "how often the data fills the field",
                            "by": by,
                            "body": evidence,
                        });
                        let path = format!("/covenant/v1/deprecations/{id}/evidence");
                        if let Err(code) = api.call("POST", &path, Some(body))? {
                            return Ok(code);
                        }
                    }
                    api.print_text(&format!("/covenant/v1/deprecations/{id}/record"))
                }
                Err(code) => Ok(code),
            }
        }
        DeprecationsCommand::Stage {
            id,
            stage,
            by,
            note,
        } => stage_and_show(
            &api,
            &format!("/covenant/v1/deprecations/{id}/stage"),
            json!({"to": stage.to_ascii_lowercase(), "by": by, "note": note}),
            id,
        ),
        DeprecationsCommand::Evidence(evidence) => {
            let body = json!({
                "claim": evidence.claim,
                "by": evidence.by,
                "body": evidence_body(&evidence)?,
            });
            stage_and_show(
                &api,
                &format!("/covenant/v1/deprecations/{}/evidence", evidence.id),
                body,
                evidence.id,
            )
        }
        DeprecationsCommand::Update(update) => {
            let body = update_body(&update)?;
            let path = format!("/covenant/v1/deprecations/{}", update.id);
            match api.call("PATCH", &path, Some(body))? {
                Ok(_) => api.print_text(&format!("/covenant/v1/deprecations/{}/record", update.id)),
                Err(code) => Ok(code),
            }
        }
        DeprecationsCommand::Exception {
            id,
            overrides,
            approver,
            reason,
            party,
        } => {
            let mut body = json!({"overrides": overrides, "approver": approver, "reason": reason});
            if let (Some(p), Value::Object(m)) = (party, &mut body) {
                m.insert("party".into(), json!(p));
            }
            stage_and_show(
                &api,
                &format!("/covenant/v1/deprecations/{id}/exceptions"),
                body,
                id,
            )
        }
        DeprecationsCommand::Show { id, json } => {
            if json {
                api.print_json("GET", &format!("/covenant/v1/deprecations/{id}"), None)
            } else {
                api.print_text(&format!("/covenant/v1/deprecations/{id}/record"))
            }
        }
        DeprecationsCommand::List { subject } => {
            let path = match subject {
                Some(s) => format!("/covenant/v1/deprecations?subject={}", segment(&s)),
                None => "/covenant/v1/deprecations".to_string(),
            };
            match api.call("GET", &path, None)? {
                Ok(Value::Array(list)) => {
                    for d in &list {
                        let target = d.get("target").cloned().unwrap_or(Value::Null);
                        outln!(
                            "#{}  {}  {} of {}  replacement {}",
                            d.get("id").and_then(Value::as_i64).unwrap_or(0),
                            text(d, "stage"),
                            target.get("path").and_then(Value::as_str).unwrap_or("-"),
                            text(&target, "subject"),
                            d.get("replacement")
                                .and_then(Value::as_str)
                                .unwrap_or("none")
                        );
                    }
                    if list.is_empty() {
                        outln!("no deprecations");
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Ok(other) => {
                    outln!("{other:#}");
                    Ok(ExitCode::SUCCESS)
                }
                Err(code) => Ok(code),
            }
        }
        DeprecationsCommand::Gate {
            subject,
            schema,
            schema_type,
        } => {
            let candidate = std::fs::read_to_string(&schema)
                .with_context(|| format!("reading {}", schema.display()))?;
            let body = json!({"schema": candidate, "schemaType": schema_type.to_ascii_uppercase()});
            match api.call(
                "POST",
                &format!("/covenant/v1/subjects/{}/removal-gate", segment(&subject)),
                Some(body),
            )? {
                Ok(report) => {
                    let fields: Vec<&str> = report
                        .get("fields")
                        .and_then(Value::as_array)
                        .map(|f| f.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    let blockers = report
                        .get("blockers")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    if fields.is_empty() {
                        outln!("the candidate removes no field of '{subject}'");
                    } else {
                        outln!("the candidate removes: {}", fields.join(", "));
                    }
                    for b in &blockers {
                        outln!("  [{}] {}", text(b, "kind"), text(b, "message"));
                    }
                    if blockers.is_empty() {
                        outln!("removal gate: no blockers");
                        Ok(ExitCode::SUCCESS)
                    } else {
                        outln!("removal gate: {} blocker(s)", blockers.len());
                        Ok(ExitCode::from(1))
                    }
                }
                Err(code) => Ok(code),
            }
        }
    }
}

/// Posts a change to a record and prints the record as it now reads.
fn stage_and_show(api: &Api, path: &str, body: Value, id: i64) -> anyhow::Result<ExitCode> {
    match api.call("POST", path, Some(body))? {
        Ok(_) => api.print_text(&format!("/covenant/v1/deprecations/{id}/record")),
        Err(code) => Ok(code),
    }
}

// ----- usage -------------------------------------------------------------------------------

#[derive(clap::Args)]
pub struct UsageArgs {
    #[command(flatten)]
    server: Server,
    #[command(subcommand)]
    command: UsageCommand,
}

#[derive(clap::Subcommand)]
enum UsageCommand {
    /// Report what a reader read (one interval).
    Report {
        #[arg(long)]
        subject: String,
        /// The reporting client id or credential.
        #[arg(long)]
        client: String,
        /// The consumer the reporter believes it is.
        #[arg(long)]
        consumer: Option<String>,
        /// The global id of the reader schema it decodes with.
        #[arg(long = "reader-schema-id")]
        reader_schema_id: Option<i64>,
        /// Field paths its logic read, comma-separated.
        #[arg(long, value_delimiter = ',')]
        fields: Vec<String>,
        /// VERSION=COUNT records decoded by writer version (repeatable).
        #[arg(long = "records")]
        records: Vec<String>,
        /// Global ids of the writer schemas the records were written with (repeatable).
        #[arg(long = "writer-schema-id")]
        writer_schema_ids: Vec<i64>,
        /// FIELD=SYMBOL[:COUNT]: an enum symbol the reader did not know in FIELD, seen COUNT
        /// times (default 1); repeatable. Counted in /metrics as `contract_enum_unknown`.
        #[arg(long = "unknown-enum", value_name = "FIELD=SYMBOL[:COUNT]")]
        unknown_enum: Vec<String>,
        /// Records the reader failed to decode in the interval; counted in /metrics as
        /// `consumer_deserialization_failure`.
        #[arg(long = "decode-failures", default_value_t = 0)]
        decode_failures: u64,
        /// Interval start (RFC 3339 or epoch ms); default: the server's now.
        #[arg(long)]
        from: Option<String>,
        /// Interval end (RFC 3339 or epoch ms); default: the server's now.
        #[arg(long)]
        to: Option<String>,
    },
    /// Field reads per reporter.
    Query {
        #[arg(long)]
        subject: Option<String>,
        #[arg(long)]
        field: Option<String>,
        #[arg(long)]
        consumer: Option<String>,
        #[arg(long)]
        unattributed: bool,
        #[arg(long)]
        from: Option<String>,
        #[arg(long)]
        to: Option<String>,
    },
}

/// `--unknown-enum` values as the report's `unknown_enum_values`: field, then symbol, then
/// count; the same symbol given twice adds up.
fn unknown_enum_values(given: &[String]) -> anyhow::Result<Value> {
    let mut by_field: std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>> =
        std::collections::BTreeMap::new();
    for item in given {
        let parsed = item.split_once('=').and_then(|(field, rest)| {
            let (symbol, count) = match rest.rsplit_once(':') {
                Some((symbol, count)) => (symbol, count.trim().parse::<u64>().ok()?),
                None => (rest, 1),
            };
            let (field, symbol) = (field.trim(), symbol.trim());
            (!field.is_empty() && !symbol.is_empty())
                .then(|| (field.to_string(), symbol.to_string(), count))
        });
        let Some((field, symbol, count)) = parsed else {
            return Err(invalid(format!(
                "--unknown-enum '{item}' must be FIELD=SYMBOL or FIELD=SYMBOL:COUNT"
            )));
        };
        let slot = by_field
            .entry(field)
            .or_default()
            .entry(symbol)
            .or_default();
        *slot = slot.saturating_add(count);
    }
    Ok(serde_json::to_value(by_field)?)
}

pub fn run_usage(args: UsageArgs) -> anyhow::Result<ExitCode> {
    let api = Api::new(&args.server)?;
    match args.command {
        UsageCommand::Report {
            subject,
            client,
            consumer,
            reader_schema_id,
            fields,
            records,
            writer_schema_ids,
            unknown_enum,
            decode_failures,
            from,
            to,
        } => {
            let unknown_enum_values = unknown_enum_values(&unknown_enum)?;
            let mut by_version = Map::new();
            for r in &records {
                let parsed = r.split_once('=').and_then(|(v, n)| {
                    Some((v.trim().parse::<i64>().ok()?, n.trim().parse::<u64>().ok()?))
                });
                let Some((version, n)) = parsed else {
                    return Err(invalid(format!("--records '{r}' must be VERSION=COUNT")));
                };
                by_version.insert(version.to_string(), json!(n));
            }
            let mut body = json!({
                "subject": subject,
                "client_id": client,
                "fields_read": fields,
                "records_by_version": by_version,
                "writer_schema_ids": writer_schema_ids,
                "unknown_enum_values": unknown_enum_values,
                "decode_failures": decode_failures,
            });
            if let Value::Object(m) = &mut body {
                if let Some(c) = consumer {
                    m.insert("consumer".into(), json!(c));
                }
                if let Some(id) = reader_schema_id {
                    m.insert("reader_schema_id".into(), json!(id));
                }
                if let Some(f) = from {
                    m.insert("interval_start".into(), time_value(&f));
                }
                if let Some(t) = to {
                    m.insert("interval_end".into(), time_value(&t));
                }
            }
            api.print_json("POST", "/covenant/v1/usage", Some(body))
        }
        UsageCommand::Query {
            subject,
            field,
            consumer,
            unattributed,
            from,
            to,
        } => {
            let mut query: Vec<String> = Vec::new();
            for (k, v) in [
                ("subject", subject),
                ("field", field),
                ("consumer", consumer),
                ("from", from),
                ("to", to),
            ] {
                if let Some(v) = v {
                    query.push(format!("{k}={}", segment(&v)));
                }
            }
            if unattributed {
                query.push("unattributed=true".into());
            }
            api.print_json(
                "GET",
                &format!("/covenant/v1/usage?{}", query.join("&")),
                None,
            )
        }
    }
}

// ----- HTTP --------------------------------------------------------------------------------

/// Percent-encodes a path segment or query value.
pub(crate) fn segment(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub(crate) struct Api {
    base: String,
    server: Server,
    runtime: Option<tokio::runtime::Runtime>,
    client: reqwest::Client,
}

impl Api {
    pub(crate) fn new(server: &Server) -> anyhow::Result<Api> {
        Ok(Api {
            base: server.url.trim_end_matches('/').to_string(),
            server: server.clone(),
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok(),
            client: server.client()?,
        })
    }

    /// `Ok(Ok(json))` on success; `Ok(Err(exit))` after printing the server's refusal;
    /// `Err` when the server cannot be reached.
    pub(crate) fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<Result<Value, ExitCode>> {
        let (status, text) = self.send(method, path, body)?;
        if (200..300).contains(&status) {
            return Ok(Ok(
                serde_json::from_str(&text).unwrap_or(Value::String(text))
            ));
        }
        let parsed: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let code = parsed.get("error_code").and_then(Value::as_i64);
        let message = parsed
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or(text);
        match code {
            Some(code) => eprintln!(
                "covenant: {method} {path} refused (HTTP {status}, error {code}):\n{message}"
            ),
            None => eprintln!("covenant: {method} {path} failed (HTTP {status}):\n{message}"),
        }
        Ok(Err(ExitCode::from(1)))
    }

    /// The answer of a call that may be refused, without printing the refusal: `None` for
    /// any status but a success (a subject that does not exist, a schema it does not hold).
    pub(crate) fn call_quietly(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<Option<Value>> {
        let (status, text) = self.send(method, path, body)?;
        Ok((200..300)
            .contains(&status)
            .then(|| serde_json::from_str(&text).unwrap_or(Value::String(text))))
    }

    fn send(&self, method: &str, path: &str, body: Option<Value>) -> anyhow::Result<(u16, String)> {
        let runtime = self
            .runtime
            .as_ref()
            .context("starting the async runtime")?;
        let url = format!("{}{path}", self.base);
        let method = reqwest::Method::from_bytes(method.as_bytes()).context("HTTP method")?;
        runtime.block_on(async {
            let mut request = self.server.authorize(self.client.request(method, &url));
            if let Some(body) = body {
                request = request
                    .header("content-type", "application/json")
                    .body(body.to_string());
            }
            let response = request
                .send()
                .await
                .with_context(|| format!("cannot reach the registry at {}", self.base))?;
            let status = response.status().as_u16();
            let text = response.text().await.context("reading the answer")?;
            Ok((status, text))
        })
    }

    fn print_json(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<ExitCode> {
        match self.call(method, path, body)? {
            Ok(value) => {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&value).unwrap_or_default()
                );
                Ok(ExitCode::SUCCESS)
            }
            Err(code) => Ok(code),
        }
    }

    fn print_text(&self, path: &str) -> anyhow::Result<ExitCode> {
        let (status, text) = self.send("GET", path, None)?;
        if (200..300).contains(&status) {
            out!("{text}");
            return Ok(ExitCode::SUCCESS);
        }
        match self.call("GET", path, None)? {
            Ok(_) => Ok(ExitCode::SUCCESS),
            Err(code) => Ok(code),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_parse_subject_version_and_fields() {
        let read = parse_read("billing@2:plan_name, billing_plan_id").expect("parse");
        assert_eq!(
            read,
            json!({"subject": "billing", "fields": ["plan_name", "billing_plan_id"], "reader_version": 2})
        );
        assert_eq!(
            parse_read("billing").expect("parse"),
            json!({"subject": "billing", "fields": []})
        );
        assert!(parse_read("billing@x:a").is_err());
        assert!(parse_read(":a").is_err());
    }

    #[test]
    fn segments_are_percent_encoded() {
        assert_eq!(segment("a/b c"), "a%2Fb%20c");
        assert_eq!(segment("plan_name-1.x"), "plan_name-1.x");
    }
}

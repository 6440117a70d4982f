//! The `covenant` binary. Exit codes: 0 success or compatible, 1 incompatible or invalid
//! documents, 2 invalid input or usage.

mod against_git;
mod against_registry;
mod apply;
mod approve;
mod audit;
mod auth;
mod check;
mod governance;
mod limits;
mod manifest;
mod migrate;
mod output;
mod profile;
mod profile_remote;
mod propose;
mod reconcile;
mod references;
mod samples;
mod serve;
mod transfer;

use clap::{Parser, Subcommand};

/// glibc's allocator spent a third of a long compatibility check in `malloc` and
/// `malloc_consolidate` (the engine builds many small nodes and findings); mimalloc halves
/// parse times and steadies the server's latency (`benches/RESULTS.md`). Built without
/// transparent huge pages (`no_thp`): with them a loaded server's RSS was 137 MiB instead
/// of 79 MiB, for no measurable speed.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use output::{out, outln};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "covenant",
    version,
    about = "Covenant: a schema registry that keeps the promises a data shape makes to its consumers"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start the registry (Confluent-compatible REST API).
    Serve(serve::ServeArgs),
    /// Judge a new schema against earlier versions. Exit 0 compatible, 1 incompatible, 2 invalid input.
    Check(check::CheckArgs),
    /// The rollout plan for a new version: the four producer/consumer combinations and the safe deployment order.
    Plan(check::PlanArgs),
    /// Print a schema's canonical form (Avro: Parsing Canonical Form; others: normalized form).
    Canonical(check::CanonicalArgs),
    /// Print a schema's fingerprints (Avro: CRC-64-AVRO and SHA-256 of the canonical form).
    Fingerprint(check::CanonicalArgs),
    /// Validate JSON documents against a JSON Schema. Exit 1 when any document is invalid.
    Validate(check::ValidateArgs),
    /// Profile records (JSON Lines, gzip, JSON arrays, Avro files): field prevalence, types,
    /// distinct counts; `merge` combines partial profiles; with --schema, what the data says
    /// about the schema (promotion and removal candidates, drift).
    Profile(profile::ProfileArgs),
    /// Print the rule catalog.
    Rules(RulesArgs),
    /// Declare, update, list, show and retire the consumers of a running registry.
    Consumers(governance::ConsumersArgs),
    /// Deprecation records on a running registry: create, stage, evidence, exception, show.
    Deprecations(governance::DeprecationsArgs),
    /// Report and query usage on a running registry.
    Usage(governance::UsageArgs),
    /// Accept the findings of one rule for one exact candidate schema on a running registry
    /// (accepted risk, on record; needs the Approve operation on the subject).
    Approve(approve::ApproveArgs),
    /// List or revoke a subject's approvals on a running registry.
    Approvals(approve::ApprovalsArgs),
    /// Keep a registry in step with a folder of schemas described by covenant.toml:
    /// configs and new versions in dependency order (`--dry-run` only says what would change).
    Apply(apply::ApplyArgs),
    /// Write covenant.toml and the schema files of an existing registry's subjects.
    Pull(apply::PullArgs),
    /// Write the registry's whole state as JSON (docs/export-format.md).
    Export(transfer::ExportArgs),
    /// Load a dump written by `covenant export`, keeping ids, versions and governance.
    Import(transfer::ImportArgs),
    /// Move in from a running Confluent-compatible registry or a `_schemas` topic dump, ids kept.
    Migrate(migrate::MigrateArgs),
    /// Manage an auth file: add-user, grant, revoke, check.
    Auth(auth::AuthArgs),
    /// Manage the sample payloads a running registry replays on every check (add, list, rm).
    Samples(samples::SamplesArgs),
    /// Read the audit trail of a running registry: who changed what, and denied attempts.
    Audit(audit::AuditArgs),
}

#[derive(clap::Args)]
struct RulesArgs {
    /// Print the whole catalog as Markdown (docs/rules.md).
    #[arg(long)]
    markdown: bool,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(check::EXIT_INVALID)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let result = match cli.command {
        Command::Serve(args) => serve::run(args),
        Command::Check(args) => check::run_check(args),
        Command::Plan(args) => check::run_plan(args),
        Command::Canonical(args) => check::run_canonical(args),
        Command::Fingerprint(args) => check::run_fingerprint(args),
        Command::Validate(args) => check::run_validate(args),
        Command::Consumers(args) => governance::run_consumers(args),
        Command::Deprecations(args) => governance::run_deprecations(args),
        Command::Usage(args) => governance::run_usage(args),
        Command::Approve(args) => approve::run_approve(args),
        Command::Apply(args) => apply::run_apply(args),
        Command::Pull(args) => apply::run_pull(args),
        Command::Approvals(args) => approve::run_approvals(args),
        Command::Export(args) => transfer::run_export(args),
        Command::Import(args) => transfer::run_import(args),
        Command::Migrate(args) => migrate::run(args),
        Command::Samples(args) => samples::run(args),
        Command::Profile(args) => profile::run(args),
        Command::Audit(args) => audit::run(args),
        Command::Auth(args) => auth::run(args),
        Command::Rules(args) => {
            print_rules(args.markdown);
            Ok(ExitCode::SUCCESS)
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            if let Some(invalid) = e.downcast_ref::<check::InvalidInput>() {
                eprintln!("covenant: {invalid}");
            } else {
                eprintln!("covenant: {e:#}");
            }
            ExitCode::from(check::EXIT_INVALID)
        }
    }
}

fn print_rules(markdown: bool) {
    let groups = covenant_policy::all_rule_groups();
    if markdown {
        out!("{}", covenant_policy::rules_markdown());
        return;
    }
    // The level under the default preset (covenant), then under confluent.
    for (title, rules) in groups {
        outln!("{title}");
        for rule in rules {
            let level = |p: covenant_policy::Preset| match p.level(rule).severity() {
                Some(s) => s.to_string(),
                None => "off".to_string(),
            };
            outln!(
                "  {:<48} {:<8} {:<8} {}",
                rule.id,
                level(covenant_policy::Preset::Covenant),
                level(covenant_policy::Preset::Confluent),
                rule.summary
            );
        }
    }
}

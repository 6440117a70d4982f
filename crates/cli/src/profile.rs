//! `covenant profile`: what the data carries, as a mergeable profile document, and what it
//! says about a schema (promotion and removal candidates, type drift, fields the data and the
//! schema disagree on).

use crate::check::{InvalidInput, SchemaInputArgs, load_schema};
use crate::output::outln;
use crate::profile_remote::{self, RemoteArgs};
use anyhow::{Context, Result};
use covenant_engine::Finding;
use covenant_profile::{
    DeclaredField, Evidence, Profile, ProfileOptions, Profiler, Record, Thresholds,
    declared_fields, findings, source,
};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

mod framed;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ProfileArgs {
    #[command(subcommand)]
    command: Option<ProfileCommand>,
    #[command(flatten)]
    build: BuildArgs,
}

#[derive(clap::Subcommand)]
enum ProfileCommand {
    /// Combine profiles of partitions into the profile of the whole (exact counts; distinct
    /// counts within the sketch's error). All must use the same --group-by and --escape-hatch.
    Merge {
        #[arg(required = true)]
        profiles: Vec<PathBuf>,
        /// Write the merged profile here instead of standard output.
        #[arg(long, short = 'o')]
        out: Option<PathBuf>,
    },
    /// The findings of a stored profile, optionally against a schema.
    Findings {
        profile: PathBuf,
        #[command(flatten)]
        compare: CompareArgs,
    },
    /// Store a profile in a running registry under a subject, for a window of time.
    Push {
        #[command(flatten)]
        remote: RemoteArgs,
        /// Start of the window the profiled records cover (RFC 3339 or ms; default: --to).
        #[arg(long)]
        from: Option<String>,
        /// End of the window (RFC 3339 or ms; default: now).
        #[arg(long)]
        to: Option<String>,
    },
    /// Write the subject's next version with the profile's promotion candidates as optional
    /// fields (named in the schema's style, typed from the data), then print the registry's
    /// verdict on it and its rollout plan. Exit 1 when the registry finds it incompatible.
    Propose {
        #[command(flatten)]
        remote: RemoteArgs,
        /// Write the proposed schema here; the verdict and plan then go to standard output.
        /// Without it the schema goes to standard output and the rest to standard error.
        #[arg(long, short = 'o')]
        out: Option<PathBuf>,
        #[command(flatten)]
        limits: profile_remote::ThresholdOverrideArgs,
    },
}

#[derive(clap::Args)]
struct BuildArgs {
    /// Record files: JSON Lines (plain, gzip or zstd), a JSON array, an Avro container file
    /// or a Parquet file, told apart by their content; `-` reads standard input.
    files: Vec<PathBuf>,
    /// A field naming each record's source (e.g. `exchange`): prevalence is also counted per
    /// group, and a key present in enough groups is a promotion candidate.
    #[arg(long)]
    group_by: Option<String>,
    /// A field holding vendor-specific extras (a JSON object, or a string holding one), profiled
    /// key by key. Repeatable.
    #[arg(long = "escape-hatch", value_name = "FIELD")]
    escape_hatches: Vec<String>,
    /// The files hold Kafka payloads in Confluent's wire format, decoded with the schema each
    /// names (fetched from the registry at --url): `length-prefixed` as `kcat -e -f '%R%s'`
    /// writes them, or `base64-lines`.
    #[arg(long, value_enum)]
    framed: Option<framed::Framing>,
    #[command(flatten)]
    registry: crate::governance::Server,
    /// Distinct paths kept; occurrences of further paths are only counted.
    #[arg(long, default_value_t = covenant_profile::DEFAULT_MAX_PATHS)]
    max_paths: usize,
    /// Write the profile document (with its findings) here; standard output then gets the
    /// findings (`--output json`) or the readable summary (text, the default).
    #[arg(long, short = 'o')]
    out: Option<PathBuf>,
    #[command(flatten)]
    compare: CompareArgs,
}

#[derive(clap::Args)]
struct CompareArgs {
    /// The schema the data should match: enables removal candidates and the fields the data
    /// and the schema disagree on.
    #[arg(long)]
    schema: Option<PathBuf>,
    #[command(flatten)]
    input: SchemaInputArgs,
    #[command(flatten)]
    limits: ThresholdArgs,
    /// `json` or `text`. Building a profile: json (the default without -o) prints the profile
    /// document, its findings inside it; text prints a readable summary (records, groups,
    /// fields, findings) instead. `findings`: text (the default) or a JSON array.
    #[arg(long = "output", value_enum)]
    output: Option<FindingsOutput>,
}

#[derive(clap::Args)]
struct ThresholdArgs {
    /// Share of records from which an escape-hatch key is a promotion candidate.
    #[arg(long, default_value_t = Thresholds::default().promote_share)]
    promote_share: f64,
    /// Number of groups from which an escape-hatch key is a promotion candidate.
    #[arg(long, default_value_t = Thresholds::default().promote_groups)]
    promote_groups: usize,
    /// Share of records below which a nullable field is a removal candidate.
    #[arg(long, default_value_t = Thresholds::default().remove_share)]
    remove_share: f64,
}

#[derive(Clone, Copy, PartialEq, clap::ValueEnum)]
enum FindingsOutput {
    Text,
    Json,
}

pub fn run(args: ProfileArgs) -> Result<ExitCode> {
    match args.command {
        Some(ProfileCommand::Merge { profiles, out }) => merge(&profiles, out.as_deref()),
        Some(ProfileCommand::Findings { profile, compare }) => {
            let profile = read_profile(&profile)?;
            report(&profile, &compare, &mut std::io::stdout())
        }
        Some(ProfileCommand::Push { remote, from, to }) => profile_remote::push(
            &remote.server,
            &read_profile(&remote.profile)?,
            &remote.subject,
            from.as_deref(),
            to.as_deref(),
        ),
        Some(ProfileCommand::Propose {
            remote,
            out,
            limits,
        }) => profile_remote::run_propose(profile_remote::ProposeRequest {
            server: &remote.server,
            subject: &remote.subject,
            profile: &read_profile(&remote.profile)?,
            overrides: limits.overrides(),
            out: out.as_deref(),
        }),
        None => build(args.build),
    }
}

fn build(args: BuildArgs) -> Result<ExitCode> {
    if args.files.is_empty() {
        return Err(InvalidInput(
            "name at least one file to profile (or - for standard input)".into(),
        )
        .into());
    }
    let thresholds = thresholds(&args.compare.limits)?;
    let declared = declared(&args.compare)?;
    let mut profiler = Profiler::new(ProfileOptions {
        group_by: args.group_by,
        escape_hatches: args.escape_hatches,
        max_paths: args.max_paths,
    });
    let mut schemas = match args.framed {
        Some(_) => Some(framed::Schemas::new(args.registry.clone())?),
        None => None,
    };
    let mut progress = Progress::new();
    for file in &args.files {
        let mut each = |record: Record<'_>| {
            profiler.observe_record(record);
            progress.tick(profiler.records());
        };
        if let (Some(framing), Some(schemas)) = (args.framed, schemas.as_mut()) {
            let name = file.display().to_string();
            let mut each = |value| each(Record::Value(value));
            if file.as_os_str() == "-" {
                framed::read(&name, std::io::stdin().lock(), framing, schemas, &mut each)?;
            } else {
                let reader =
                    std::fs::File::open(file).map_err(|e| InvalidInput(format!("{name}: {e}")))?;
                framed::read(&name, reader, framing, schemas, &mut each)?;
            }
            continue;
        }
        let read = if file.as_os_str() == "-" {
            source::read_records("-", std::io::stdin().lock(), &mut each)
        } else {
            source::read_file(file, &mut each)
        };
        read.map_err(|e| InvalidInput(e.to_string()))?;
    }
    progress.done(profiler.records());
    let profile = profiler.finish();
    let found = findings(&Evidence {
        profile: &profile,
        declared: declared.as_deref(),
        thresholds,
    });
    let document = document(&profile, &found)?;
    let mut stdout = std::io::stdout();
    match (&args.out, args.compare.output) {
        (Some(path), output) => {
            write_file(path, &document)?;
            match output {
                Some(FindingsOutput::Json) => {
                    print_findings(&found, FindingsOutput::Json, &mut stdout)?
                }
                _ => write!(stdout, "{}", summary(&profile, &found, Some(path)))?,
            }
        }
        (None, Some(FindingsOutput::Text)) => {
            write!(stdout, "{}", summary(&profile, &found, None))?
        }
        (None, _) => outln!("{document}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// The profile document with the findings it supports inside it (`findings`, as `covenant
/// check --output json` writes them). Reading a profile ignores them: they are recomputed
/// from the counts with whatever thresholds and schema the reader uses.
fn document(profile: &Profile, found: &[Finding]) -> Result<String> {
    let mut value = serde_json::to_value(profile)?;
    if let Some(object) = value.as_object_mut() {
        object.insert("findings".into(), serde_json::to_value(found)?);
    }
    Ok(serde_json::to_string_pretty(&value)?)
}

/// Paths the summary lists; the document has them all.
const SUMMARY_PATHS: usize = 40;

/// A profile as a person reads it: how many records, per group, each top-level field and
/// escape-hatch key with its prevalence and types, then the findings.
fn summary(profile: &Profile, found: &[Finding], written: Option<&Path>) -> String {
    use std::fmt::Write as _;
    let mut out = format!("Profiled {} records", profile.records);
    if let Some(by) = &profile.group_by {
        let groups: Vec<String> = profile
            .groups
            .iter()
            .map(|(name, g)| format!("{name} {}", g.records))
            .collect();
        let _ = write!(out, ", grouped by '{by}' ({})", groups.join(", "));
    }
    if !profile.escape_hatches.is_empty() {
        let _ = write!(
            out,
            "; escape hatches: {}",
            profile.escape_hatches.join(", ")
        );
    }
    out.push_str(".\n");
    let listed: Vec<(&String, &covenant_profile::PathStats)> = profile
        .paths
        .iter()
        .filter(|(path, stats)| stats.escape_hatch_key || path.matches('/').count() == 1)
        .collect();
    let share = |n: u64| {
        if profile.records == 0 {
            0.0
        } else {
            n as f64 * 100.0 / profile.records as f64
        }
    };
    let _ = writeln!(
        out,
        "\nFields ({} top-level fields and escape-hatch keys of {} paths):",
        listed.len(),
        profile.paths.len()
    );
    let width = listed
        .iter()
        .take(SUMMARY_PATHS)
        .map(|(p, _)| p.len())
        .max()
        .unwrap_or(0);
    for (path, stats) in listed.iter().take(SUMMARY_PATHS) {
        let types: Vec<&str> = stats
            .types
            .keys()
            .map(String::as_str)
            .filter(|t| *t != "null")
            .collect();
        let _ = writeln!(
            out,
            "  {path:<width$}  present {:>5.1}%  filled {:>5.1}%  {}",
            share(stats.present),
            share(stats.non_null),
            if types.is_empty() {
                "null".to_string()
            } else {
                types.join("/")
            }
        );
    }
    if listed.len() > SUMMARY_PATHS {
        let _ = writeln!(
            out,
            "  ... and {} more (the profile document lists every path)",
            listed.len() - SUMMARY_PATHS
        );
    }
    if profile.paths_dropped > 0 {
        let _ = writeln!(
            out,
            "  {} occurrences of further paths were counted but not kept (--max-paths)",
            profile.paths_dropped
        );
    }
    if found.is_empty() {
        out.push_str("\nFindings: none\n");
    } else {
        let _ = writeln!(out, "\nFindings ({}):", found.len());
        for f in found {
            let _ = writeln!(out, "  {} {} {}: {}", f.severity, f.rule, f.path, f.message);
            let _ = writeln!(out, "    hint: {}", f.hint);
        }
    }
    match written {
        Some(path) => {
            let _ = writeln!(out, "\nProfile document: {}", path.display());
        }
        None => out.push_str(
            "\nThe profile document (to merge, push or compare later) is written with -o FILE, or printed with --output json.\n",
        ),
    }
    out
}

fn merge(paths: &[PathBuf], out: Option<&Path>) -> Result<ExitCode> {
    let mut merged: Option<Profile> = None;
    for path in paths {
        let profile = read_profile(path)?;
        match &mut merged {
            None => merged = Some(profile),
            Some(total) => total
                .merge(&profile)
                .map_err(|e| InvalidInput(format!("{}: {e}", path.display())))?,
        }
    }
    let merged = merged.expect("at least one profile");
    // The merged document carries the findings of the whole at the default thresholds, as a
    // profile built from all the records at once does.
    let found = findings(&Evidence {
        profile: &merged,
        declared: None,
        thresholds: Thresholds::default(),
    });
    let document = document(&merged, &found)?;
    match out {
        Some(path) => write_file(path, &document)?,
        None => outln!("{document}"),
    }
    Ok(ExitCode::SUCCESS)
}

fn report(profile: &Profile, compare: &CompareArgs, to: &mut dyn Write) -> Result<ExitCode> {
    let declared = declared(compare)?;
    let found = findings(&Evidence {
        profile,
        declared: declared.as_deref(),
        thresholds: thresholds(&compare.limits)?,
    });
    print_findings(&found, compare.output.unwrap_or(FindingsOutput::Text), to)?;
    Ok(ExitCode::SUCCESS)
}

fn read_profile(path: &Path) -> Result<Profile> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| InvalidInput(format!("{}: {e}", path.display())))?;
    Profile::from_json(&text).map_err(|e| InvalidInput(format!("{}: {e}", path.display())).into())
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, format!("{text}\n")).with_context(|| format!("writing {}", path.display()))
}

fn thresholds(compare: &ThresholdArgs) -> Result<Thresholds> {
    for (flag, share) in [
        ("--promote-share", compare.promote_share),
        ("--remove-share", compare.remove_share),
    ] {
        if !(0.0..=1.0).contains(&share) {
            return Err(
                InvalidInput(format!("{flag} is a share between 0 and 1, not {share}")).into(),
            );
        }
    }
    Ok(Thresholds {
        promote_share: compare.promote_share,
        promote_groups: compare.promote_groups,
        remove_share: compare.remove_share,
    })
}

fn declared(compare: &CompareArgs) -> Result<Option<Vec<DeclaredField>>> {
    let Some(file) = &compare.schema else {
        return Ok(None);
    };
    let schema = load_schema(&compare.input, file)?;
    let tree =
        crate::check::within_budget(&compare.input, |m| covenant_policy::field_tree(m, &schema))?;
    Ok(Some(declared_fields(&tree)))
}

fn print_findings(found: &[Finding], output: FindingsOutput, to: &mut dyn Write) -> Result<()> {
    match output {
        FindingsOutput::Json => writeln!(to, "{}", serde_json::to_string_pretty(found)?)?,
        FindingsOutput::Text if found.is_empty() => writeln!(to, "no findings")?,
        FindingsOutput::Text => {
            for f in found {
                writeln!(to, "{} {} {}: {}", f.severity, f.rule, f.path, f.message)?;
                writeln!(to, "  hint: {}", f.hint)?;
            }
        }
    }
    Ok(())
}

/// A record count on standard error, rewritten in place, when it is a terminal.
struct Progress {
    enabled: bool,
    last: Instant,
}

impl Progress {
    fn new() -> Progress {
        Progress {
            enabled: std::io::stderr().is_terminal(),
            last: Instant::now(),
        }
    }

    fn tick(&mut self, records: u64) {
        if self.enabled && self.last.elapsed() > Duration::from_millis(250) {
            self.last = Instant::now();
            eprint!("\rprofiled {records} records");
        }
    }

    fn done(&self, records: u64) {
        if self.enabled {
            eprintln!("\rprofiled {records} records");
        }
    }
}

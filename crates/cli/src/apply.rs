//! `covenant apply` and `covenant pull`: a folder of schemas described by `covenant.toml`
//! ([`crate::manifest`]) kept in step with a registry, like a plan.
//!
//! `apply --dry-run` asks the registry what each step would do and changes nothing: a schema
//! the subject already holds is unchanged, a new one is judged by the registration's own steps
//! (`POST /covenant/v1/subjects/{s}/check`), a config that differs would be set; it exits 1 when
//! any registration would be refused. `apply` does the same steps for real, in dependency order
//! (references first), config before schema, and stops at the first refusal; run twice, the
//! second changes nothing. Subjects the registry holds that the folder does not are listed and
//! kept, unless `--prune --yes` soft-deletes them. `pull` writes the manifest and the files of
//! an existing registry's subjects (their latest versions), the way in for a team that has only
//! a registry.

use crate::check::{self, InvalidInput};
use crate::governance::{Api, Server, segment};
use crate::manifest::{Declared, Entry, FILE_NAME, Manifest, ManifestReference};
use crate::output::outln;
use anyhow::{Result, bail};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub server: Server,
    /// Print what would change, change nothing; exit 1 when a registration would be refused.
    #[arg(long)]
    pub dry_run: bool,
    /// The manifest (its folder is where the files are).
    #[arg(long, default_value = FILE_NAME)]
    pub manifest: PathBuf,
    /// Soft-delete the subjects the registry holds that the manifest does not declare (needs
    /// --yes).
    #[arg(long)]
    pub prune: bool,
    /// Confirms --prune.
    #[arg(long)]
    pub yes: bool,
}

#[derive(clap::Args)]
pub struct PullArgs {
    #[command(flatten)]
    pub server: Server,
    /// The folder to write `covenant.toml` and `schemas/` into (created if missing; an
    /// existing manifest there is refused).
    #[arg(default_value = ".")]
    pub dir: PathBuf,
}

/// One step of a plan, as printed.
enum Step {
    Unchanged(String),
    Config(String, Map<String, Value>, String),
    /// What is registered, and the registration's body.
    Register(String, Value),
    Refused(String),
}

pub fn run_apply(args: ApplyArgs) -> Result<ExitCode> {
    if args.prune && !args.yes && !args.dry_run {
        bail!(InvalidInput(
            "--prune deletes subjects: confirm with --yes".into()
        ));
    }
    let manifest = Manifest::read(&args.manifest)?;
    let root = args
        .manifest
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let declared = manifest.declared(&root)?;
    let api = Api::new(&args.server)?;
    let mut changes = 0;
    let mut refused = 0;
    for subject in &declared {
        for step in plan(&api, subject, args.dry_run)? {
            match step {
                Step::Unchanged(line) => outln!("unchanged: {line}"),
                Step::Config(name, body, line) => {
                    changes += 1;
                    if args.dry_run {
                        outln!("would set config {name}: {line}");
                    } else {
                        expect(
                            &api,
                            "PUT",
                            &format!("/config/{}", segment(&name)),
                            Value::Object(body),
                        )?;
                        outln!("set config {name}: {line}");
                    }
                }
                Step::Register(line, body) => {
                    changes += 1;
                    if args.dry_run {
                        outln!("would register {line}");
                    } else {
                        let path = format!("/subjects/{}/versions", segment(&subject.subject));
                        // A refusal is printed by the call, with the registry's reasons.
                        match api.call("POST", &path, Some(body))? {
                            Ok(answer) => outln!(
                                "registered {line}: id {}, version {}",
                                answer["id"],
                                answer["version"]
                            ),
                            Err(_) => {
                                outln!("refused: {line}");
                                return Ok(ExitCode::from(1));
                            }
                        }
                    }
                }
                Step::Refused(line) => {
                    refused += 1;
                    outln!("refused: {line}");
                    if !args.dry_run {
                        return Ok(ExitCode::from(1));
                    }
                }
            }
        }
    }
    let wanted: BTreeSet<&str> = declared.iter().map(|d| d.subject.as_str()).collect();
    let held = registry_subjects(&api)?;
    for extra in held.iter().filter(|s| !wanted.contains(s.as_str())) {
        if args.prune && !args.dry_run {
            expect_delete(&api, extra)?;
            outln!("deleted (soft): {extra}");
        } else {
            outln!("not in the folder: {extra} (kept; `apply --prune --yes` deletes it)");
        }
    }
    if changes == 0 && refused == 0 {
        outln!("nothing to do");
    }
    Ok(if refused > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// What applying `subject` takes: its config, then its schema.
fn plan(api: &Api, subject: &Declared, dry_run: bool) -> Result<Vec<Step>> {
    let mut steps = Vec::new();
    let name = &subject.subject;
    let config_path = format!("/config/{}?defaultToGlobal=false", segment(name));
    let current = api
        .call_quietly("GET", &config_path, None)?
        .unwrap_or(Value::Null);
    let mut change = Map::new();
    let mut shown = Vec::new();
    if let Some(level) = &subject.settings.compatibility
        && !current["compatibilityLevel"]
            .as_str()
            .is_some_and(|l| l.eq_ignore_ascii_case(level))
    {
        change.insert("compatibility".into(), json!(level.to_ascii_uppercase()));
        shown.push(format!("compatibility {}", level.to_ascii_uppercase()));
    }
    if let Some(preset) = &subject.settings.preset
        && current["policyPreset"].as_str() != Some(preset.as_str())
    {
        change.insert("policyPreset".into(), json!(preset));
        shown.push(format!("policy preset {preset}"));
    }
    if !change.is_empty() {
        steps.push(Step::Config(name.clone(), change, shown.join(", ")));
    }
    let body = body(subject, api)?;
    let lookup = format!("/subjects/{}", segment(name));
    if let Some(found) = api.call_quietly("POST", &lookup, Some(body.clone()))? {
        steps.push(Step::Unchanged(format!(
            "{name} (version {}) from {}",
            found["version"], subject.shown
        )));
        return Ok(steps);
    }
    let line = format!("{name} from {}", subject.shown);
    if !dry_run {
        steps.push(Step::Register(line, body));
        return Ok(steps);
    }
    // A reference to a subject this run registers first cannot be resolved yet.
    if body["references"]
        .as_array()
        .is_some_and(|refs| refs.iter().any(|r| r["version"] == json!(-1)))
    {
        steps.push(Step::Register(
            format!("{line} (after its references)"),
            body,
        ));
        return Ok(steps);
    }
    let path = format!("/covenant/v1/subjects/{}/check", segment(name));
    let verdict = match api.call("POST", &path, Some(body.clone()))? {
        Ok(verdict) => verdict,
        Err(code) => return Err(InvalidInput(format!("checking {name} failed ({code:?})")).into()),
    };
    if verdict["is_compatible"].as_bool() == Some(true) {
        steps.push(Step::Register(line, body));
    } else {
        let reasons: Vec<String> = verdict["messages"]
            .as_array()
            .map(|m| {
                m.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        steps.push(Step::Refused(format!("{line}\n  {}", reasons.join("\n  "))));
    }
    Ok(steps)
}

/// The registration body of `subject`: its file's text, format, references (a reference
/// without a version takes the referenced subject's latest, or -1 when it has none yet) and
/// metadata.
fn body(subject: &Declared, api: &Api) -> Result<Value> {
    let chosen = check::schema_type_of(subject.format.as_deref(), &subject.file)?;
    let text = std::fs::read_to_string(&subject.file)
        .map_err(|e| InvalidInput(format!("{}: cannot read: {e}", subject.shown)))?;
    let mut references = Vec::new();
    for r in &subject.references {
        let version = match r.version {
            Some(v) => v,
            None => latest_version(api, &r.subject)?.unwrap_or(-1),
        };
        references.push(json!({"name": r.name, "subject": r.subject, "version": version}));
    }
    let mut body = json!({
        "schema": text,
        "schemaType": chosen.schema_type.to_string(),
        "references": references,
    });
    if let Some(metadata) = &subject.metadata {
        body["metadata"] = metadata.clone();
    }
    if let Some(rule_set) = &subject.rule_set {
        body["ruleSet"] = rule_set.clone();
    }
    Ok(body)
}

fn latest_version(api: &Api, subject: &str) -> Result<Option<i64>> {
    let path = format!("/subjects/{}/versions", segment(subject));
    Ok(match api.call_quietly("GET", &path, None)? {
        Some(versions) => versions
            .as_array()
            .and_then(|v| v.last())
            .and_then(Value::as_i64),
        None => None,
    })
}

fn registry_subjects(api: &Api) -> Result<Vec<String>> {
    match api.call("GET", "/subjects", None)? {
        Ok(list) => Ok(list
            .as_array()
            .map(|l| {
                l.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()),
        Err(_) => bail!(InvalidInput(
            "the registry refused to list its subjects".into()
        )),
    }
}

/// A call that must succeed; the registry's refusal was printed, and ends the command.
fn expect(api: &Api, method: &str, path: &str, body: Value) -> Result<Value> {
    match api.call(method, path, Some(body))? {
        Ok(answer) => Ok(answer),
        Err(_) => bail!(InvalidInput(format!("{method} {path} was refused"))),
    }
}

fn expect_delete(api: &Api, subject: &str) -> Result<()> {
    match api.call("DELETE", &format!("/subjects/{}", segment(subject)), None)? {
        Ok(_) => Ok(()),
        Err(_) => bail!(InvalidInput(format!("deleting {subject} was refused"))),
    }
}

pub fn run_pull(args: PullArgs) -> Result<ExitCode> {
    let manifest_path = args.dir.join(FILE_NAME);
    if manifest_path.exists() {
        bail!(InvalidInput(format!(
            "{} exists: pull writes a new folder",
            manifest_path.display()
        )));
    }
    let api = Api::new(&args.server)?;
    let schemas = args.dir.join("schemas");
    std::fs::create_dir_all(&schemas)
        .map_err(|e| InvalidInput(format!("{}: {e}", schemas.display())))?;
    let mut manifest = Manifest::default();
    let mut used = BTreeSet::new();
    for subject in registry_subjects(&api)? {
        let path = format!("/subjects/{}/versions/latest", segment(&subject));
        let Some(latest) = api.call_quietly("GET", &path, None)? else {
            continue;
        };
        let schema_type = latest["schemaType"].as_str().unwrap_or("AVRO").to_string();
        let extension = match schema_type.as_str() {
            "PROTOBUF" => "proto",
            "AVRO" => "avsc",
            _ => "json",
        };
        let mut stem = file_stem(&subject);
        while !used.insert(stem.clone()) {
            stem.push('_');
        }
        let file = format!("schemas/{stem}.{extension}");
        let text = latest["schema"].as_str().unwrap_or_default();
        let text = if extension == "proto" {
            text.to_string()
        } else {
            // Written pretty, as people keep schemas; the identity is the same.
            serde_json::from_str::<Value>(text)
                .and_then(|v| serde_json::to_string_pretty(&v))
                .unwrap_or_else(|_| text.to_string())
        };
        std::fs::write(args.dir.join(&file), format!("{}\n", text.trim_end()))
            .map_err(|e| InvalidInput(format!("{file}: {e}")))?;
        let config = api
            .call_quietly(
                "GET",
                &format!("/config/{}?defaultToGlobal=false", segment(&subject)),
                None,
            )?
            .unwrap_or(Value::Null);
        let references = latest["references"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| ManifestReference {
                name: r["name"].as_str().unwrap_or_default().to_string(),
                subject: r["subject"].as_str().unwrap_or_default().to_string(),
                version: r["version"].as_i64(),
            })
            .collect();
        let table = |key: &str| {
            latest
                .get(key)
                .filter(|m| m.is_object())
                .and_then(|m| toml::Table::try_from(m.clone()).ok())
        };
        manifest.subjects.push(Entry {
            name: subject.clone(),
            file: Some(file.clone()),
            format: Some(schema_type.to_ascii_lowercase()),
            compatibility: config["compatibilityLevel"].as_str().map(str::to_string),
            preset: None,
            references,
            metadata: table("metadata"),
            rule_set: table("ruleSet"),
            ..Entry::default()
        });
        outln!(
            "pulled {subject} (version {}) into {file}",
            latest["version"]
        );
    }
    let text = toml::to_string_pretty(&manifest)?;
    std::fs::write(&manifest_path, text)
        .map_err(|e| InvalidInput(format!("{}: {e}", manifest_path.display())))?;
    outln!("wrote {}", manifest_path.display());
    Ok(ExitCode::SUCCESS)
}

/// A file name for a subject: its characters that are safe in a file name, others as `_`.
fn file_stem(subject: &str) -> String {
    let stem: String = subject
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let stem = stem.trim_start_matches('.').to_string();
    if stem.is_empty() {
        "subject".into()
    } else {
        stem
    }
}

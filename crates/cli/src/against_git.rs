//! `covenant check --against-git REV [PATHS...]`: every schema file changed between the working
//! tree and a git revision, judged offline against its versions in the history, as
//! `buf breaking --against '.git#...'` does for Protobuf, for all four formats.
//!
//! A changed file is judged against its version at REV, and under a transitive level against
//! every earlier version the git log holds for it (oldest first, a commit that left it unchanged
//! counted once). A file new since REV is checked alone; a deleted one is reported, not judged
//! (removing a file removes no registered version). Each Protobuf version is compiled with the
//! `.proto` files of its own revision, so imports resolve as they were then.
//!
//! The history is read with the `git` command, which every repository that uses this has:
//! `git diff`, `git ls-files`, `git log` and `git cat-file`.

use crate::check::{self, CheckArgs, InvalidInput, Output};
use crate::output::out;
use anyhow::{Context, Result, bail};
use covenant_engine::{Reference, Report};
use covenant_schema::{ParsedSchema, SchemaType};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// One changed schema file and what it was judged against.
struct Judged {
    /// The path from the repository's root.
    path: String,
    /// The revisions of the versions it was judged against, oldest first (short ids).
    against: Vec<String>,
    report: Report,
    rendered: String,
}

pub fn run(args: &CheckArgs, revision: &str) -> Result<ExitCode> {
    let repo = Repo::here()?;
    let commit = repo.commit(revision)?;
    let pathspecs: Vec<PathBuf> = args.new.iter().chain(&args.old).cloned().collect();
    let transitive = args.level.to_ascii_uppercase().ends_with("_TRANSITIVE");
    let mut judged = Vec::new();
    let mut deleted = Vec::new();
    for path in repo.changed(&commit, &pathspecs)? {
        let file = repo.root.join(&path);
        if !file.exists() {
            deleted.push(path);
            continue;
        }
        if !is_schema_file(args, &file) {
            continue;
        }
        judged.push(judge(args, &repo, &commit, &path, transitive)?);
    }
    let compatible = judged.iter().all(|j| j.report.compatible);
    out!("{}", render(args.output, revision, &judged, &deleted)?);
    Ok(if compatible {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Judges the working tree's `path` against its versions up to `commit`.
fn judge(
    args: &CheckArgs,
    repo: &Repo,
    commit: &str,
    path: &str,
    transitive: bool,
) -> Result<Judged> {
    let file = repo.root.join(path);
    let chosen = check::schema_type_for(&args.input, &file)?;
    let limits = args.input.limits.limits();
    let references = |at: Option<&str>| -> Result<Vec<Reference>> {
        let mut references = check::load_references(&args.input, chosen.schema_type)?;
        if chosen.schema_type == SchemaType::Protobuf {
            references.extend(repo.protos(at, &proto_roots(args, repo)?)?);
        }
        Ok(references)
    };
    let candidate = check::parse_file(&chosen, &file, &references(None)?, &limits)?;
    let mut history: Vec<(i64, ParsedSchema)> = Vec::new();
    let mut against = Vec::new();
    let folder = tempfile::tempdir().context("creating a temporary folder")?;
    for (i, (revision, text)) in repo
        .versions(commit, path, transitive)?
        .into_iter()
        .enumerate()
    {
        // The version is read from a file of the same name, so errors and format inference
        // see what the user knows.
        let dir = folder.path().join(i.to_string());
        let old = dir.join(Path::new(path).file_name().unwrap_or_default());
        std::fs::create_dir_all(&dir).context("writing a version to a temporary folder")?;
        std::fs::write(&old, text).context("writing a version to a temporary folder")?;
        let parsed = check::parse_file(&chosen, &old, &references(Some(&revision))?, &limits)
            .with_context(|| format!("{path} at {}", short(&revision)))?;
        history.push((i as i64 + 1, parsed));
        against.push(short(&revision));
    }
    let report = check::verdict(args, &candidate, &history, false)?;
    let text = std::fs::read_to_string(&file)
        .map_err(|e| InvalidInput(format!("{path}: cannot read: {e}")))?;
    let rendered = match args.output {
        Output::Text => check::render(Output::Text, &report, &candidate, &text, path)?,
        Output::Json => serde_json::to_string(&covenant_engine::render_json(&report))?,
        Output::Sarif => check::render(Output::Sarif, &report, &candidate, &text, path)?,
    };
    std::mem::forget((candidate, history));
    Ok(Judged {
        path: path.to_string(),
        against,
        report,
        rendered,
    })
}

/// The folders (from the repository's root) whose `.proto` files can be imported by their
/// path below them: `--proto-path` folders inside the repository, else its root.
fn proto_roots(args: &CheckArgs, repo: &Repo) -> Result<Vec<String>> {
    if args.input.proto_paths.is_empty() {
        return Ok(vec![String::new()]);
    }
    let mut roots = Vec::new();
    for dir in &args.input.proto_paths {
        let full = dir
            .canonicalize()
            .map_err(|e| InvalidInput(format!("{}: {e}", dir.display())))?;
        let inside = full.strip_prefix(&repo.root).map_err(|_| {
            InvalidInput(format!(
                "--proto-path {} is outside the repository {}",
                dir.display(),
                repo.root.display()
            ))
        })?;
        roots.push(inside.to_string_lossy().replace('\\', "/"));
    }
    Ok(roots)
}

/// Whether a changed file is a schema: `.avsc` and `.proto` files, and `.json` files whose
/// content is a schema (JSON Schema, an Avro named type, an Iceberg schema or table metadata),
/// or any file when `--format` names the format.
fn is_schema_file(args: &CheckArgs, file: &Path) -> bool {
    if args.input.format.is_some() {
        return true;
    }
    match file.extension().and_then(|e| e.to_str()) {
        Some("avsc" | "proto") => true,
        Some("json") => std::fs::read_to_string(file)
            .ok()
            .and_then(|text| serde_json::from_str::<Value>(&text).ok())
            .is_some_and(|value| looks_like_a_schema(&value)),
        _ => false,
    }
}

fn looks_like_a_schema(value: &Value) -> bool {
    let Some(object) = value.as_object() else {
        return false;
    };
    let typed = object
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| matches!(t, "record" | "enum" | "fixed" | "struct" | "object"));
    typed
        || ["$schema", "properties", "format-version", "schema-id"]
            .iter()
            .any(|key| object.contains_key(*key))
}

fn short(revision: &str) -> String {
    revision.chars().take(12).collect()
}

fn render(output: Output, revision: &str, judged: &[Judged], deleted: &[String]) -> Result<String> {
    match output {
        Output::Text => Ok(render_text(revision, judged, deleted)),
        Output::Json => {
            let files: Vec<Value> = judged
                .iter()
                .map(|j| {
                    let report: Value = serde_json::from_str(&j.rendered).unwrap_or(Value::Null);
                    json!({"path": j.path, "against": j.against, "compatible": j.report.compatible,
                           "report": report})
                })
                .collect();
            let document = json!({
                "against": revision,
                "compatible": judged.iter().all(|j| j.report.compatible),
                "files": files,
                "deleted": deleted,
            });
            Ok(format!("{}\n", serde_json::to_string_pretty(&document)?))
        }
        Output::Sarif => Ok(format!(
            "{}\n",
            serde_json::to_string_pretty(&merge_sarif(judged))?
        )),
    }
}

fn render_text(revision: &str, judged: &[Judged], deleted: &[String]) -> String {
    let mut text = String::new();
    if judged.is_empty() {
        text.push_str(&format!("no schema file changed since {revision}\n"));
    }
    for j in judged {
        let against = if j.against.is_empty() {
            "new since the revision: checked alone".to_string()
        } else {
            format!("against {}", j.against.join(", "))
        };
        text.push_str(&format!("== {} ({against})\n{}", j.path, j.rendered));
        if !j.rendered.ends_with('\n') {
            text.push('\n');
        }
    }
    for path in deleted {
        text.push_str(&format!(
            "== {path}: deleted since {revision}, not judged (no registered version is removed by it)\n"
        ));
    }
    let refused = judged.iter().filter(|j| !j.report.compatible).count();
    if !judged.is_empty() {
        text.push_str(&format!(
            "{} schema file(s) changed since {revision}: {} compatible, {refused} incompatible\n",
            judged.len(),
            judged.len() - refused
        ));
    }
    text
}

/// One SARIF log for every file: the first file's run with every file's results, and the
/// rules any of them used.
fn merge_sarif(judged: &[Judged]) -> Value {
    let mut runs = judged
        .iter()
        .filter_map(|j| serde_json::from_str::<Value>(&j.rendered).ok());
    let Some(mut log) = runs.next() else {
        return json!({
            "version": "2.1.0",
            "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
            "runs": [{"tool": {"driver": {"name": "covenant", "rules": []}}, "results": []}],
        });
    };
    for other in runs {
        let run = &other["runs"][0];
        if let Some(results) = log["runs"][0]["results"].as_array_mut() {
            results.extend(run["results"].as_array().cloned().unwrap_or_default());
        }
        let rules = log["runs"][0]["tool"]["driver"]["rules"].as_array_mut();
        if let Some(rules) = rules {
            for rule in run["tool"]["driver"]["rules"]
                .as_array()
                .cloned()
                .unwrap_or_default()
            {
                if !rules.iter().any(|r| r["id"] == rule["id"]) {
                    rules.push(rule);
                }
            }
        }
    }
    log
}

/// The repository the command runs in, through the `git` command.
struct Repo {
    root: PathBuf,
    /// The `.proto` files read per revision (`None`: the working tree), so that every file and
    /// version judged against one revision reads its imports once.
    protos: std::cell::RefCell<BTreeMap<Option<String>, Vec<Reference>>>,
}

impl Repo {
    fn here() -> Result<Repo> {
        let root = git(None, &["rev-parse", "--show-toplevel"])
            .map_err(|e| InvalidInput(format!("--against-git needs a git repository: {e}")))?;
        let root = PathBuf::from(String::from_utf8_lossy(&root).trim());
        let root = root.canonicalize().unwrap_or(root);
        Ok(Repo {
            root,
            protos: Default::default(),
        })
    }

    fn git(&self, args: &[&str]) -> Result<Vec<u8>> {
        git(Some(&self.root), args)
    }

    /// The commit `revision` names.
    fn commit(&self, revision: &str) -> Result<String> {
        if revision.starts_with('-') {
            bail!(InvalidInput(format!("'{revision}' is not a git revision")));
        }
        let spec = format!("{revision}^{{commit}}");
        let id = self
            .git(&["rev-parse", "--verify", "--quiet", &spec])
            .map_err(|_| InvalidInput(format!("'{revision}' names no commit here")))?;
        Ok(String::from_utf8_lossy(&id).trim().to_string())
    }

    /// Files (from the root) that differ between `commit` and the working tree, untracked
    /// ones included, within `pathspecs` (relative to the current folder) when any are given.
    fn changed(&self, commit: &str, pathspecs: &[PathBuf]) -> Result<Vec<String>> {
        let cwd = std::env::current_dir().context("reading the current folder")?;
        let specs: Vec<String> = pathspecs
            .iter()
            .map(|p| {
                let full = if p.is_absolute() {
                    p.clone()
                } else {
                    cwd.join(p)
                };
                format!(":(top){}", self.relative(&full))
            })
            .collect();
        let mut diff = vec!["diff", "--name-only", "--no-renames", "-z", commit, "--"];
        diff.extend(specs.iter().map(String::as_str));
        let mut untracked = vec!["ls-files", "--others", "--exclude-standard", "-z", "--"];
        untracked.extend(specs.iter().map(String::as_str));
        let mut files: Vec<String> = Vec::new();
        for listing in [self.git(&diff)?, self.git(&untracked)?] {
            for name in listing.split(|b| *b == 0).filter(|n| !n.is_empty()) {
                let name = String::from_utf8_lossy(name).into_owned();
                if !files.contains(&name) {
                    files.push(name);
                }
            }
        }
        files.sort();
        Ok(files)
    }

    /// `path` from the root (lexically; `..` steps are resolved against the root).
    fn relative(&self, full: &Path) -> String {
        let full = full.canonicalize().unwrap_or_else(|_| full.to_path_buf());
        full.strip_prefix(&self.root)
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_else(|_| full.to_string_lossy().into_owned())
    }

    /// The versions of `path` to judge against, oldest first: at `commit`, and with
    /// `transitive` every earlier one the log holds; a commit that left the content as it was
    /// counts once. None when the file did not exist at `commit`.
    fn versions(
        &self,
        commit: &str,
        path: &str,
        transitive: bool,
    ) -> Result<Vec<(String, String)>> {
        let Some(at_commit) = self.blob(commit, path) else {
            return Ok(Vec::new());
        };
        let commits = if transitive {
            let log = self.git(&["log", "--format=%H", "--reverse", commit, "--", path])?;
            String::from_utf8_lossy(&log)
                .lines()
                .map(str::to_string)
                .collect()
        } else {
            vec![commit.to_string()]
        };
        let mut versions: Vec<(String, String)> = Vec::new();
        let mut last_blob = None;
        for revision in commits {
            let Some(blob) = self.blob(&revision, path) else {
                last_blob = None;
                continue;
            };
            if last_blob.as_deref() == Some(blob.as_str()) {
                continue;
            }
            let text = self.git(&["cat-file", "blob", &blob])?;
            versions.push((revision, String::from_utf8_lossy(&text).into_owned()));
            last_blob = Some(blob);
        }
        if last_blob.as_deref() != Some(at_commit.as_str()) {
            let text = self.git(&["cat-file", "blob", &at_commit])?;
            versions.push((
                commit.to_string(),
                String::from_utf8_lossy(&text).into_owned(),
            ));
        }
        Ok(versions)
    }

    /// The blob id of `path` at `revision`, if it existed there.
    fn blob(&self, revision: &str, path: &str) -> Option<String> {
        let spec = format!("{revision}:{path}");
        self.git(&["rev-parse", "--verify", "--quiet", &spec])
            .ok()
            .map(|id| String::from_utf8_lossy(&id).trim().to_string())
    }

    /// The `.proto` files below each of `roots` (from the repository's root) at `revision`
    /// (the working tree for `None`: tracked and untracked files git does not ignore), each
    /// named by its path below its root, as an import names it.
    fn protos(&self, revision: Option<&str>, roots: &[String]) -> Result<Vec<Reference>> {
        let key = revision.map(str::to_string);
        if let Some(read) = self.protos.borrow().get(&key) {
            return Ok(read.clone());
        }
        let read = self.read_protos(revision, roots)?;
        self.protos.borrow_mut().insert(key, read.clone());
        Ok(read)
    }

    fn read_protos(&self, revision: Option<&str>, roots: &[String]) -> Result<Vec<Reference>> {
        let mut by_name: BTreeMap<String, String> = BTreeMap::new();
        for root in roots {
            let prefix = if root.is_empty() {
                String::new()
            } else {
                format!("{}/", root.trim_end_matches('/'))
            };
            let spec = format!(":(top){root}");
            let listing = match revision {
                Some(revision) => {
                    self.git(&["ls-tree", "-r", "--name-only", "-z", revision, "--", &spec])?
                }
                None => self.git(&[
                    "ls-files",
                    "--cached",
                    "--others",
                    "--exclude-standard",
                    "-z",
                    "--",
                    &spec,
                ])?,
            };
            for file in listing
                .split(|b| *b == 0)
                .filter(|n| n.ends_with(b".proto"))
            {
                let file = String::from_utf8_lossy(file).into_owned();
                let name = file.strip_prefix(&prefix).unwrap_or(&file).to_string();
                let text = match revision {
                    Some(revision) => {
                        let spec = format!("{revision}:{file}");
                        String::from_utf8_lossy(&self.git(&["cat-file", "blob", &spec])?)
                            .into_owned()
                    }
                    None => match std::fs::read_to_string(self.root.join(&file)) {
                        Ok(text) => text,
                        // Listed by the index but deleted in the working tree.
                        Err(_) => continue,
                    },
                };
                by_name.entry(name).or_insert(text);
            }
        }
        Ok(by_name
            .into_iter()
            .map(|(name, schema)| Reference {
                subject: name.clone(),
                name,
                version: 1,
                schema,
            })
            .collect())
    }
}

/// Runs `git` with `args` (in `dir` when given) and answers its standard output; a failure
/// is invalid input naming git's message.
fn git(dir: Option<&Path>, args: &[&str]) -> Result<Vec<u8>> {
    let mut command = Command::new("git");
    if let Some(dir) = dir {
        command.arg("-C").arg(dir);
    }
    let output = command
        .args(args)
        .output()
        .map_err(|e| InvalidInput(format!("cannot run git: {e}")))?;
    if !output.status.success() {
        let message = String::from_utf8_lossy(&output.stderr).trim().to_string();
        bail!(InvalidInput(format!("git {}: {message}", args.join(" "))));
    }
    Ok(output.stdout)
}

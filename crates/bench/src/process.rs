//! Part 1b: whole processes over the same files, several runs, median and spread.
//!
//! What each side does is the same shape by construction: `covenant check` and the Python
//! peer script take the same arguments (`--level LEVEL NEW OLD...`) and both parse every file
//! and judge every pair in scope; `covenant check --strictness wire` and `buf breaking` with
//! the WIRE category each compile two versions of a Protobuf file and compare them.

use crate::generate::Generated;
use crate::inproc::{Case, format_available, load_corpus};
use crate::table::{Row, Sample, speedup};
use anyhow::{Context, Result, bail};
use covenant_schema::SchemaType;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const PART: &str = "1b check, whole process";

/// The peer programs, each either found and usable or absent with the reason why.
#[derive(Debug, Clone)]
pub struct Peers {
    pub covenant: PathBuf,
    /// Python interpreter with Apache's `avro` package, and the peer script.
    pub python: Result<(PathBuf, PathBuf), String>,
    pub buf: Result<PathBuf, String>,
}

/// Runs a command to completion, output discarded, and returns its exit code.
fn run(cmd: &mut Command) -> Result<i32> {
    let status = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("starting {cmd:?}"))?;
    match status.status.code() {
        Some(code) => Ok(code),
        None => bail!(
            "{cmd:?} was killed: {}",
            String::from_utf8_lossy(&status.stderr)
        ),
    }
}

/// Times `runs` repetitions of a batch of commands; every command must exit with one of
/// `expect` (anything else means the tool could not do the work, so its time would be a lie).
fn time_batch(
    runs: usize,
    expect: &[i32],
    mut batch: impl FnMut() -> Vec<Command>,
) -> Result<(Sample, Vec<i32>)> {
    let mut times = Vec::new();
    let mut codes = Vec::new();
    for run_index in 0..runs.max(1) {
        let mut commands = batch();
        let start = Instant::now();
        let mut these = Vec::with_capacity(commands.len());
        for cmd in &mut commands {
            these.push(run(cmd)?);
        }
        times.push(start.elapsed());
        for (cmd, code) in commands.iter().zip(&these) {
            if !expect.contains(code) {
                let mut again = Command::new(cmd.get_program());
                again.args(cmd.get_args());
                let out = again.output().ok();
                bail!(
                    "{cmd:?} exited {code}: {}",
                    out.map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
                        .unwrap_or_default()
                        .trim()
                );
            }
        }
        if run_index == 0 {
            codes = these;
        }
    }
    let sample = Sample::of(times).context("at least one run")?;
    Ok((sample, codes))
}

fn covenant_check(peers: &Peers, format: &str, level: &str) -> Command {
    let mut cmd = Command::new(&peers.covenant);
    cmd.args(["check", "--format", format, "--level", level]);
    cmd
}

fn python_check(python: &Path, script: &Path, level: &str) -> Command {
    let mut cmd = Command::new(python);
    cmd.arg(script).args(["--level", level]);
    cmd
}

/// The newest generated Avro version against all earlier ones, FULL_TRANSITIVE, one process.
pub fn avro_generated(
    g: &Generated,
    peers: &Peers,
    runs: usize,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let level = "FULL_TRANSITIVE";
    let workload = format!(
        "Avro {}-field record, FULL_TRANSITIVE vs {} versions (one process)",
        g.sizes.avro_fields,
        g.sizes.avro_versions - 1
    );
    let (ours, _) = time_batch(runs, &[0], || {
        let mut c = covenant_check(peers, "avro", level);
        c.arg(&g.avro.newest).arg(&g.avro.history_dir);
        vec![c]
    })?;
    let mut row = Row::new(PART, workload).covenant(ours.describe());
    match &peers.python {
        Ok((python, script)) => {
            let (theirs, _) = time_batch(runs, &[0], || {
                let mut c = python_check(python, script, level);
                c.arg(&g.avro.newest).arg(&g.avro.history_dir);
                vec![c]
            })?;
            row = row
                .peer(format!("Python avro {}", theirs.describe()))
                .ratio(speedup(ours.median, theirs.median))
                .notes("both parse every file and check both directions against every version; both exit 0");
        }
        Err(why) => row = row.peer("n/a").ratio("n/a").notes(why.clone()),
    }
    rows.push(row);
    Ok(())
}

/// Writes corpus cases without references to `dir/NNNN/{reader,writer}.avsc`.
fn write_cases(cases: &[&Case], dir: &Path) -> Result<Vec<(PathBuf, PathBuf)>> {
    let mut out = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let d = dir.join(format!("{i:04}"));
        std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
        let (r, w) = (d.join("reader.avsc"), d.join("writer.avsc"));
        std::fs::write(&r, &c.reader)?;
        std::fs::write(&w, &c.writer)?;
        std::fs::write(d.join("id.txt"), &c.id)?;
        out.push((r, w));
    }
    Ok(out)
}

/// One process per corpus case (reader BACKWARD against writer): start-up cost dominates,
/// which is what a CI step running one check per changed schema pays.
pub fn avro_corpus(
    corpus: &Path,
    peers: &Peers,
    sample: usize,
    runs: usize,
    scratch: &Path,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let all = load_corpus(&corpus.join("avro.jsonl"))?;
    // Spread the sample over the whole file; cases with references need extra flags that the
    // peer script does not take, so they are left out of this row.
    let plain: Vec<&Case> = all
        .iter()
        .filter(|c| c.reader_refs.is_empty() && c.writer_refs.is_empty())
        .filter(|c| {
            <covenant_avro::AvroFormat as covenant_engine::Format>::parse(&c.reader, &[]).is_ok()
                && <covenant_avro::AvroFormat as covenant_engine::Format>::parse(&c.writer, &[])
                    .is_ok()
                && apache_avro::Schema::parse_str(&c.reader).is_ok()
                && apache_avro::Schema::parse_str(&c.writer).is_ok()
        })
        .collect();
    let step = (plain.len() / sample.max(1)).max(1);
    let chosen: Vec<&Case> = plain.iter().step_by(step).take(sample).copied().collect();
    let files = write_cases(&chosen, &scratch.join("avro-corpus"))?;
    let (ours, our_codes) = time_batch(runs, &[0, 1], || {
        files
            .iter()
            .map(|(r, w)| {
                let mut c = covenant_check(peers, "avro", "BACKWARD");
                c.arg(r).arg(w);
                c
            })
            .collect()
    })?;
    let agree_ours = chosen
        .iter()
        .zip(&our_codes)
        .filter(|(c, code)| (**code == 0) == c.expected)
        .count();
    let workload = format!("Avro corpus, {} cases, one process each", chosen.len());
    let mut row = Row::new(PART, workload).covenant(ours.describe());
    match &peers.python {
        Ok((python, script)) => {
            let (theirs, their_codes) = time_batch(runs, &[0, 1], || {
                files
                    .iter()
                    .map(|(r, w)| {
                        let mut c = python_check(python, script, "BACKWARD");
                        c.arg(r).arg(w);
                        c
                    })
                    .collect()
            })?;
            let agree_theirs = chosen
                .iter()
                .zip(&their_codes)
                .filter(|(c, code)| (**code == 0) == c.expected)
                .count();
            row = row
                .peer(format!("Python avro {}", theirs.describe()))
                .ratio(speedup(ours.median, theirs.median))
                .notes(format!(
                    "agree with Java: Covenant {agree_ours}/{n}, Python avro {agree_theirs}/{n}; mostly interpreter/process start-up",
                    n = chosen.len()
                ));
        }
        Err(why) => {
            row = row.peer("n/a").ratio("n/a").notes(why.clone());
        }
    }
    rows.push(row);
    Ok(())
}

/// Every consecutive pair of the generated Protobuf history: `covenant check --level BACKWARD
/// --strictness wire vN vN-1` against `buf breaking vN --against vN-1` with the WIRE category.
pub fn proto_generated(
    g: &Generated,
    peers: &Peers,
    runs: usize,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let s = g.sizes;
    let pairs = s.proto_versions.saturating_sub(1);
    let workload = format!(
        "Protobuf {} messages × {} fields, {} consecutive version pairs, one process each",
        s.proto_messages, s.proto_fields, pairs
    );
    if let Some(why) = format_available(SchemaType::Protobuf) {
        rows.push(Row::new(PART, workload).covenant("n/a").notes(why));
        return Ok(());
    }
    let versions = &g.proto.versions;
    let (ours, _) = time_batch(runs, &[0], || {
        versions
            .windows(2)
            .map(|w| {
                let mut c = covenant_check(peers, "protobuf", "BACKWARD");
                c.args(["--strictness", "wire"]).arg(&w[1]).arg(&w[0]);
                c
            })
            .collect()
    })?;
    let mut row = Row::new(PART, workload).covenant(ours.describe());
    match &peers.buf {
        Ok(buf) => {
            let dir = |p: &PathBuf| p.parent().map(Path::to_path_buf).unwrap_or_default();
            let (theirs, _) = time_batch(runs, &[0], || {
                versions
                    .windows(2)
                    .map(|w| {
                        let mut c = Command::new(buf);
                        c.arg("breaking")
                            .arg(dir(&w[1]))
                            .arg("--against")
                            .arg(dir(&w[0]))
                            .args([
                                "--config",
                                r#"{"version":"v1","breaking":{"use":["WIRE"]}}"#,
                            ]);
                        c
                    })
                    .collect()
            })?;
            row = row
                .peer(format!("buf breaking (WIRE) {}", theirs.describe()))
                .ratio(speedup(ours.median, theirs.median))
                .notes("each side compiles both files and compares them; all pairs pass on both");
        }
        Err(why) => row = row.peer("n/a").ratio("n/a").notes(why.clone()),
    }
    rows.push(row);
    Ok(())
}

/// Checks that a peer program can run at all, so a broken install reads as n/a with a reason
/// rather than as a failed benchmark.
pub fn probe_python(python: &Path, script: &Path) -> Result<(PathBuf, PathBuf), String> {
    let out = Command::new(python)
        .args(["-c", "import avro.compatibility"])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if !out.status.success() {
        return Err(format!(
            "Python avro not importable: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    if !script.is_file() {
        return Err(format!("peer script {} missing", script.display()));
    }
    Ok((python.to_path_buf(), script.to_path_buf()))
}

pub fn probe_buf(buf: &Path) -> Result<PathBuf, String> {
    let out = Command::new(buf)
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", buf.display()))?;
    if !out.status.success() {
        return Err(format!(
            "buf --version failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(buf.to_path_buf())
}

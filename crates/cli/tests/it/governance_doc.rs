//! `docs/governance.md` says its outputs are the real ones: this test runs every `$ command`
//! of its console blocks, in order, against a real `covenant serve` (on a free port instead
//! of 8081) and compares what each prints (standard output, then standard error) with the
//! lines the document shows under it.
//!
//! After a deliberate change of the outputs, regenerate the document with
//! `UPDATE_EXPECT=1 cargo test -p covenant-cli --test it -- governance_doc::`.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/governance.md");
const DOC_PORT: &str = "127.0.0.1:8081";

/// One `$ command` of a console block and the output lines shown under it.
struct Step {
    command: String,
    /// Lines of the document holding the output: `output.start..output.end`.
    output: std::ops::Range<usize>,
}

/// The steps of every ```` ```console ```` block, in document order. A command continues on
/// the next line after a trailing backslash; its output runs to the next `$ ` or the fence.
fn steps(lines: &[&str]) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    let mut in_block = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if !in_block {
            in_block = line.trim_end() == "```console";
            i += 1;
            continue;
        }
        if line.trim_end() == "```" {
            in_block = false;
        } else if let Some(first) = line.strip_prefix("$ ") {
            let mut command = first.to_string();
            while command.ends_with('\\') && i + 1 < lines.len() {
                i += 1;
                command.push('\n');
                command.push_str(lines[i]);
            }
            out.push(Step {
                command,
                output: i + 1..i + 1,
            });
        } else if let Some(step) = out.last_mut() {
            step.output.end = i + 1;
        }
        i += 1;
    }
    out
}

fn tools_present() -> bool {
    ["bash", "curl", "jq"].iter().all(|tool| {
        Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_covenant"))
        .parent()
        .expect("binary folder")
        .to_path_buf()
}

fn shell(command: &str, dir: &Path, port: &str) -> Command {
    let path = format!(
        "{}:{}",
        bin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut shell = Command::new("bash");
    shell
        .args(["-o", "pipefail", "-c", command])
        .current_dir(dir)
        .env("PATH", path)
        .env("COVENANT_URL", format!("http://{port}"))
        .env("NO_COLOR", "1")
        .env("LC_ALL", "C");
    shell
}

/// Starts the document's `covenant serve ... &` as a child of the test, on `port`.
fn start_server(command: &str, dir: &Path, port: &str) -> Child {
    let foreground = command.trim_end().trim_end_matches('&').trim_end();
    let with_port = foreground.replacen(
        "covenant serve",
        &format!("covenant serve --listen {port}"),
        1,
    );
    let child = shell(&format!("exec {with_port}"), dir, port)
        .spawn()
        .expect("start covenant serve");
    let up = (0..200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        std::net::TcpStream::connect(port).is_ok()
    });
    assert!(up, "covenant serve did not start: {command}");
    child
}

#[test]
fn every_output_in_the_governance_walkthrough_is_real() {
    if !tools_present() {
        eprintln!("skipped: bash, curl and jq are needed to run docs/governance.md");
        return;
    }
    let doc = std::fs::read_to_string(DOC).expect("read docs/governance.md");
    let lines: Vec<&str> = doc.lines().collect();
    let steps = steps(&lines);
    assert!(steps.len() > 30, "only {} commands found", steps.len());
    let dir = tempfile::tempdir().expect("tempdir");
    let port = format!("127.0.0.1:{}", support::free_port());
    let mut server: Option<Child> = None;
    let mut actual_outputs: Vec<Vec<String>> = Vec::new();
    let mut mismatches = Vec::new();
    for step in &steps {
        let expected: Vec<&str> = lines[step.output.clone()].to_vec();
        // The schema files are shown by `cat`; the document's text is the file.
        if let Some(file) = step.command.strip_prefix("cat ") {
            std::fs::write(dir.path().join(file.trim()), expected.join("\n") + "\n")
                .expect("write schema file");
        }
        if step.command.starts_with("covenant serve") {
            server = Some(start_server(&step.command, dir.path(), &port));
            actual_outputs.push(Vec::new());
            continue;
        }
        let command = step.command.replace(DOC_PORT, &port);
        // Both streams into one pipe, in the order a terminal shows them.
        let merged = format!("{{ {command}\n}} 2>&1");
        let out = shell(&merged, dir.path(), &port)
            .output()
            .expect("run a documented command");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
        .replace(&port, DOC_PORT);
        let actual: Vec<String> = text.lines().map(str::to_string).collect();
        if actual != expected {
            mismatches.push(format!(
                "$ {}\n--- documented\n{}\n--- actual\n{}",
                step.command,
                expected.join("\n"),
                actual.join("\n")
            ));
        }
        actual_outputs.push(actual);
    }
    if let Some(mut server) = server {
        let _ = server.kill();
        let _ = server.wait();
    }
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(DOC, rewrite(&lines, &steps, &actual_outputs)).expect("write doc");
        return;
    }
    assert!(
        mismatches.is_empty(),
        "docs/governance.md shows outputs that are not the real ones (regenerate with \
         UPDATE_EXPECT=1 cargo test -p covenant-cli --test it -- governance_doc::):\n\n{}",
        mismatches.join("\n\n")
    );
}

/// The document with each step's output replaced by what it printed.
fn rewrite(lines: &[&str], steps: &[Step], outputs: &[Vec<String>]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut next = 0;
    for (step, actual) in steps.iter().zip(outputs) {
        out.extend(lines[next..step.output.start].iter().map(|l| l.to_string()));
        out.extend(actual.iter().cloned());
        next = step.output.end;
    }
    out.extend(lines[next..].iter().map(|l| l.to_string()));
    out.join("\n") + "\n"
}

#[test]
fn steps_are_read_with_continuations_and_outputs() {
    let doc = "text\n```console\n$ a \\\n  b\nout 1\nout 2\n$ c > /dev/null\n```\n```sh\n$ not run\n```\n";
    let lines: Vec<&str> = doc.lines().collect();
    let steps = steps(&lines);
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[0].command, "a \\\n  b");
    assert_eq!(&lines[steps[0].output.clone()], ["out 1", "out 2"]);
    assert_eq!(steps[1].command, "c > /dev/null");
    assert!(steps[1].output.is_empty());
}

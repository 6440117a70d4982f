//! `covenant approve` and `covenant approvals` against `covenant serve`: a refused rename
//! approved for exactly its schema file, listed, registered (the answer names the approval),
//! and a revoked approval that no longer lets the same file through on another subject.

use crate::support;
use support::covenant;

use serde_json::{Value, json};
use support::TestServer as Server;

const V1: &str = r#"{"type":"record","name":"Case","fields":[{"name":"id","type":"string"},{"name":"caseOwner","type":["null","string"],"default":null}]}"#;
const V2: &str = r#"{"type":"record","name":"Case","fields":[{"name":"id","type":"string"},{"name":"assignedOfficer","type":["null","string"],"default":null}]}"#;

/// Runs the CLI against `server`: exit code, stdout, stderr.
fn cli(server: &Server, args: &[&str]) -> (Option<i32>, String, String) {
    let mut all: Vec<&str> = args.to_vec();
    all.insert(1, "--url");
    all.insert(2, &server.base);
    let out = covenant(&all);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The rules a refusal's message names.
fn rules(message: &str) -> Vec<String> {
    let mut out: Vec<String> = message
        .split("{rule: ")
        .skip(1)
        .filter_map(|p| p.split(',').next())
        .map(str::to_string)
        .collect();
    out.sort();
    out.dedup();
    out
}

async fn refused_subject(server: &Server, subject: &str) -> Vec<String> {
    let (status, body) = server.register(subject, "AVRO", V1).await;
    assert_eq!(status, 200, "{body}");
    server
        .config(
            subject,
            json!({"semanticRules": {"LIKELY_RENAME": "error"}}),
        )
        .await;
    let (status, refusal) = server.register(subject, "AVRO", V2).await;
    assert_eq!(status, 409, "{refusal}");
    let found = rules(refusal["message"].as_str().unwrap_or(""));
    assert!(found.contains(&"LIKELY_RENAME".to_string()), "{refusal}");
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_lists_and_revokes_for_one_schema_file() {
    let server = Server::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let file = support::write(dir.path(), "case-v2.avsc", V2);
    let file = support::s(&file).to_string();

    let subject = "case-value";
    let found = refused_subject(&server, subject).await;
    // Without an approver on a registry without authentication: refused, nothing written.
    let (code, _, err) = cli(
        &server,
        &[
            "approve",
            "--subject",
            subject,
            "--rule",
            "LIKELY_RENAME",
            "--reason",
            "r",
            &file,
        ],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("'approver' is required"), "{err}");
    for rule in &found {
        let (code, out, err) = cli(
            &server,
            &[
                "approve",
                "--subject",
                subject,
                "--rule",
                rule,
                "--reason",
                "assignedOfficer replaces caseOwner",
                "--expires",
                "7d",
                "--approver",
                "risk-office",
                &file,
            ],
        );
        assert_eq!(code, Some(0), "{out}{err}");
        assert!(out.starts_with("approval #"), "{out}");
        assert!(out.contains(&format!("live {rule}")), "{out}");
    }
    let (code, listed, _) = cli(&server, &["approvals", "list", "--subject", subject]);
    assert_eq!(code, Some(0));
    assert_eq!(listed.lines().count(), found.len(), "{listed}");
    assert!(listed.contains("by risk-office until "), "{listed}");
    let (status, answer) = server.register(subject, "AVRO", V2).await;
    assert_eq!(status, 200, "{answer}");
    let approvals: Vec<Value> = answer["approvals"].as_array().cloned().unwrap_or_default();
    assert_eq!(approvals.len(), found.len(), "{answer}");
    assert_eq!(approvals[0]["approver"], json!("risk-office"), "{answer}");

    // Another subject, approved then revoked: still refused.
    let other = "case2-value";
    let found = refused_subject(&server, other).await;
    let mut ids = Vec::new();
    for rule in &found {
        let (code, out, err) = cli(
            &server,
            &[
                "approve",
                "--subject",
                other,
                "--rule",
                rule,
                "--reason",
                "r",
                "--approver",
                "risk-office",
                &file,
            ],
        );
        assert_eq!(code, Some(0), "{err}");
        let id = out
            .trim_start_matches("approval #")
            .split(' ')
            .next()
            .unwrap_or("")
            .to_string();
        ids.push(id);
    }
    for id in &ids {
        let (code, out, err) = cli(
            &server,
            &[
                "approvals",
                "revoke",
                "--subject",
                other,
                id,
                "--reason",
                "too early",
                "--by",
                "risk-office",
            ],
        );
        assert_eq!(code, Some(0), "{err}");
        assert!(out.contains(&format!("approval #{id} revoked")), "{out}");
    }
    // An id of another subject is not this subject's to revoke.
    let (code, _, err) = cli(
        &server,
        &[
            "approvals",
            "revoke",
            "--subject",
            other,
            "1",
            "--by",
            "risk-office",
        ],
    );
    assert_eq!(code, Some(1), "{err}");
    let (status, refusal) = server.register(other, "AVRO", V2).await;
    assert_eq!(status, 409, "{refusal}");
}

//! What the REST governance API accepts, the command line sends too: `covenant usage report`
//! with unknown enum symbols and decode failures (seen in `/metrics`), and `covenant
//! deprecations update` editing a record's notes (kept in its updates). Against a running
//! `covenant serve`.

use crate::support;

use serde_json::json;
use support::TestServer as Server;
use support::covenant;

const CASE: &str = r#"{"type":"record","name":"CaseEvent","fields":[{"name":"caseId","type":"string"},{"name":"caseStatus","type":{"type":"enum","name":"CaseStatus","symbols":["OPEN","CLOSED"],"default":"OPEN"}},{"name":"legacy_owner","type":["null","string"],"default":null}]}"#;

/// Runs `covenant <command> <subcommand> --url BASE <rest>`: exit code, stdout, stderr.
fn cli(server: &Server, args: &[&str]) -> (Option<i32>, String, String) {
    let mut all: Vec<&str> = args[..2].to_vec();
    all.extend(["--url", &server.base]);
    all.extend_from_slice(&args[2..]);
    let out = covenant(&all);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The value of the `/metrics` sample of `family` whose labels include every one of
/// `labels`.
async fn sample(server: &Server, family: &str, labels: &[&str]) -> Option<f64> {
    let text = server
        .client
        .get(format!("{}/metrics", server.base))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics text");
    text.lines()
        .filter(|l| !l.starts_with('#') && l.contains(family))
        .find(|l| labels.iter().all(|label| l.contains(label)))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_reports_carry_unknown_enum_values_and_decode_failures() {
    let server = Server::start().await;
    let (status, answer) = server.register("cases", "AVRO", CASE).await;
    assert_eq!(status, 200, "{answer}");
    let (code, out, err) = cli(
        &server,
        &[
            "usage",
            "report",
            "--subject",
            "cases",
            "--client",
            "svc_reports",
            "--fields",
            "caseId,caseStatus",
            "--records",
            "1=40",
            "--writer-schema-id",
            &answer["id"].to_string(),
            "--unknown-enum",
            "caseStatus=SUSPENDED:3",
            "--unknown-enum",
            "caseStatus=PAUSED",
            "--decode-failures",
            "2",
        ],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    let unknown = sample(
        &server,
        "contract_enum_unknown",
        &["subject=\"cases\"", "field=\"caseStatus\""],
    )
    .await;
    assert_eq!(unknown, Some(4.0), "three SUSPENDED and one PAUSED");
    let failures = sample(
        &server,
        "consumer_deserialization_failure",
        &["subject=\"cases\""],
    )
    .await;
    assert_eq!(failures, Some(2.0));

    for bad in ["caseStatus", "caseStatus=", "=X", "caseStatus=X:many"] {
        let (code, _, err) = cli(
            &server,
            &[
                "usage",
                "report",
                "--subject",
                "cases",
                "--client",
                "svc_reports",
                "--unknown-enum",
                bad,
            ],
        );
        assert_eq!(code, Some(2), "{bad}: {err}");
        assert!(err.contains("must be FIELD=SYMBOL"), "{bad}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deprecation_notes_are_edited_from_the_command_line() {
    let server = Server::start().await;
    let (status, answer) = server.register("cases", "AVRO", CASE).await;
    assert_eq!(status, 200, "{answer}");
    let (status, record) = server
        .call(
            "POST",
            "/covenant/v1/deprecations",
            Some(json!({
                "target": {"kind": "field", "subject": "cases", "path": "legacy_owner"},
                "old_promise": "legacy_owner names the owner in the old system",
                "new_promise": "caseId resolves the owner",
                "announced_by": "cases-team",
            })),
        )
        .await;
    assert_eq!(status, 200, "{record}");
    let id = record["id"].to_string();
    let (code, out, err) = cli(
        &server,
        &[
            "deprecations",
            "update",
            &id,
            "--by",
            "cases-team",
            "--note",
            "after the review",
            "--freeze",
            "new dashboards cannot select legacy_owner",
            "--fallback",
            "restore dual emission for one release",
            "--sunset",
            "2027-01-01T00:00:00Z",
        ],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("new dashboards cannot select legacy_owner"),
        "the record is printed: {out}"
    );
    let (status, stored) = server
        .call("GET", &format!("/covenant/v1/deprecations/{id}"), None)
        .await;
    assert_eq!(status, 200, "{stored}");
    assert_eq!(
        stored["notes"]["freeze"],
        "new dashboards cannot select legacy_owner"
    );
    assert_eq!(
        stored["notes"]["fallback"],
        "restore dual emission for one release"
    );
    assert_eq!(stored["sunset"], json!(1_798_761_600_000_i64));
    let updates = stored["updates"].as_array().expect("updates");
    let last = updates.last().expect("one update");
    assert_eq!(last["by"], "cases-team", "{last}");
    let changes = last.to_string();
    assert!(
        changes.contains("freeze") && changes.contains("after the review"),
        "{last}"
    );

    // Nothing to change is a usage error, and nothing is sent.
    let (code, _, err) = cli(
        &server,
        &["deprecations", "update", &id, "--by", "cases-team"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("say what to change"), "{err}");
    let (_, unchanged) = server
        .call("GET", &format!("/covenant/v1/deprecations/{id}"), None)
        .await;
    assert_eq!(
        unchanged["updates"].as_array().map(Vec::len),
        Some(updates.len())
    );
}

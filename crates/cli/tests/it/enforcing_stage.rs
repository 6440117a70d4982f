//! The `enforcing` stage in full (evolving-under-consumer-pressure: "Enforcement becomes
//! progressively more revealing while it remains reversible"): non-production consumers get
//! failures, production ones warnings naming them, a passed canary is needed to leave the
//! stage forward, and stepping back keeps working. Through the CLI against `covenant serve`.

use crate::support;
use support::covenant;

use serde_json::{Value, json};
use support::TestServer as Server;

const V1: &str = r#"{"type":"record","name":"Subscription","fields":[{"name":"id","type":"string"},{"name":"plan_name","type":"string"},{"name":"billing_plan_id","type":"string","default":""}]}"#;

/// Runs the CLI against `server`: exit code, stdout, stderr.
fn cli(server: &Server, args: &[&str]) -> (Option<i32>, String, String) {
    let mut all: Vec<&str> = args.to_vec();
    let at = all.iter().position(|a| !a.starts_with('-')).unwrap_or(0) + 1;
    all.insert(at, "--url");
    all.insert(at + 1, &server.base);
    let out = covenant(&all);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(server: &Server, args: &[&str]) -> String {
    let (code, out, err) = cli(server, args);
    assert_eq!(code, Some(0), "{args:?}: {out}{err}");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enforcement_fails_non_production_readers_and_needs_a_canary_to_end() {
    let server = Server::start().await;
    let subject = "billing.subscription-value";
    let (status, body) = server.register(subject, "AVRO", V1).await;
    assert_eq!(status, 200, "{body}");
    let declare = |name: &str, client: &str, environment: Option<&str>| {
        let mut args = vec![
            "consumers",
            "add",
            name,
            "--owner",
            "billing",
            "--purpose",
            "plan reports",
            "--cadence",
            "daily",
            "--criticality",
            "high",
            "--contact",
            "b@example.com",
            "--client",
            client,
            "--reads",
        ];
        let reads = format!("{subject}:billing_plan_id");
        args.push(&reads);
        if let Some(e) = environment {
            args.extend(["--environment", e]);
        }
        let out = ok(&server, &args);
        serde_json::from_str::<Value>(&out).expect("consumer json")
    };
    let staging = declare("billing-staging", "svc_staging", Some("non-production"));
    assert_eq!(staging["environment"], "non-production");
    let revenue = declare("revenue", "svc_revenue", None);
    assert!(revenue.get("environment").is_none(), "{revenue}");
    let listed = ok(&server, &["consumers", "list"]);
    assert!(
        listed.contains("billing-staging (non-production)  daily"),
        "{listed}"
    );
    assert!(listed.contains("revenue  daily"), "{listed}");
    let (code, _, err) = cli(
        &server,
        &[
            "consumers",
            "add",
            "odd",
            "--owner",
            "o",
            "--purpose",
            "p",
            "--cadence",
            "daily",
            "--criticality",
            "low",
            "--contact",
            "c",
            "--environment",
            "qa",
        ],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("42240"), "{err}");

    ok(
        &server,
        &[
            "deprecations",
            "create",
            "--subject",
            subject,
            "--field",
            "plan_name",
            "--replacement",
            "billing_plan_id",
            "--old-promise",
            "display label",
            "--new-promise",
            "stable identity",
            "--by",
            "billing-team",
        ],
    );
    for stage in ["frozen", "enforcing"] {
        ok(
            &server,
            &["deprecations", "stage", "1", stage, "--by", "billing-team"],
        );
    }

    // A staging build still reads plan_name: its report is recorded and fails.
    let report = |client: &str| {
        cli(
            &server,
            &[
                "usage",
                "report",
                "--subject",
                subject,
                "--client",
                client,
                "--fields",
                "plan_name",
            ],
        )
    };
    let (code, out, err) = report("svc_staging");
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(err.contains("HTTP 410, error 41001"), "{err}");
    assert!(
        err.contains(
            "Non-production consumer 'billing-staging' (client 'svc_staging') read 'plan_name'"
        ) && err.contains("deprecation #1")
            && err.contains("move to 'billing_plan_id'"),
        "{err}"
    );
    let (status, raw) = server
        .call(
            "POST",
            "/covenant/v1/usage",
            Some(json!({
                "subject": subject, "client_id": "svc_staging", "fields_read": ["plan_name"]
            })),
        )
        .await;
    assert_eq!(
        (status, raw["error_code"].as_i64()),
        (410, Some(41001)),
        "{raw}"
    );
    assert_eq!(raw["consumer"], "billing-staging", "{raw}");
    assert_eq!(raw["findings"][0]["kind"], "enforcement_failure", "{raw}");
    // The failed report was written, so the audit trail keeps it.
    let (status, trail) = server
        .call("GET", "/covenant/v1/audit?operation=usage.report", None)
        .await;
    assert_eq!(status, 200, "{trail}");
    assert_eq!(
        trail["entries"].as_array().map(Vec::len),
        Some(2),
        "{trail}"
    );
    // Production: a warning naming the consumer, not a failure.
    let (code, out, err) = report("svc_revenue");
    assert_eq!(code, Some(0), "{err}");
    let receipt: Value = serde_json::from_str(&out).expect("receipt");
    assert_eq!(
        receipt["findings"][0]["kind"], "enforcement_warning",
        "{receipt}"
    );
    assert_eq!(receipt["findings"][0]["consumer"], "revenue", "{receipt}");
    // The failed reads are evidence: the usage query sees them.
    let out = ok(
        &server,
        &[
            "usage",
            "query",
            "--subject",
            subject,
            "--field",
            "plan_name",
            "--consumer",
            "billing-staging",
        ],
    );
    assert!(out.contains("billing-staging"), "{out}");

    // Enforcement is reversible: back to frozen, the staging read no longer fails.
    ok(
        &server,
        &[
            "deprecations",
            "stage",
            "1",
            "frozen",
            "--by",
            "billing-team",
            "--note",
            "unexpected reader",
        ],
    );
    let (code, out, err) = report("svc_staging");
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(!out.contains("enforcement_"), "{out}");
    ok(
        &server,
        &[
            "deprecations",
            "stage",
            "1",
            "enforcing",
            "--by",
            "billing-team",
        ],
    );

    // Leaving enforcement forward needs a passed canary; a failed one does not do.
    ok(
        &server,
        &[
            "deprecations",
            "evidence",
            "1",
            "--claim",
            "non-production omission complete",
            "--by",
            "billing-team",
            "--non-production-omission",
            "staging",
            "--detail",
            "staging producers omitted plan_name for a week",
        ],
    );
    ok(
        &server,
        &[
            "deprecations",
            "evidence",
            "1",
            "--claim",
            "internal canary",
            "--by",
            "billing-team",
            "--canary",
            "tenant internal-billing",
            "--failed",
            "--link",
            "https://ci.example.com/run/1",
        ],
    );
    let (code, _, err) = cli(
        &server,
        &[
            "deprecations",
            "stage",
            "1",
            "removable",
            "--by",
            "billing-team",
        ],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("[no_canary] Deprecation #1 records no passed canary"),
        "{err}"
    );
    assert!(!err.contains("[no_evidence]"), "{err}");
    ok(
        &server,
        &[
            "deprecations",
            "evidence",
            "1",
            "--claim",
            "internal canary complete",
            "--by",
            "billing-team",
            "--canary",
            "tenant internal-billing",
            "--link",
            "https://ci.example.com/run/2",
        ],
    );
    let (_, _, err) = cli(
        &server,
        &[
            "deprecations",
            "stage",
            "1",
            "removable",
            "--by",
            "billing-team",
        ],
    );
    assert!(!err.contains("[no_canary]"), "{err}");
    let record = ok(&server, &["deprecations", "show", "1"]);
    for line in [
        "non-production omission in 'staging': passed (staging producers omitted plan_name for a week)",
        "canary on 'tenant internal-billing': FAILED <https://ci.example.com/run/1>",
        "canary on 'tenant internal-billing': passed <https://ci.example.com/run/2>",
        "enforcing -> frozen by billing-team: unexpected reader",
    ] {
        assert!(record.contains(line), "{line} not in {record}");
    }
    // A canary must say where it ran.
    let (code, _, err) = cli(
        &server,
        &[
            "deprecations",
            "evidence",
            "1",
            "--claim",
            "c",
            "--by",
            "b",
            "--canary",
            " ",
        ],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("a canary names the bounded path"), "{err}");
}

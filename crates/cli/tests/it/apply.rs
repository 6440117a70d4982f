//! `covenant apply` and `covenant pull` against a running server: a manifest of 20 subjects
//! with references is planned in dependency order, applied, found in step by a second plan,
//! pulled into an empty folder that plans nothing either, and an incompatible edit makes the
//! plan exit 1.

use crate::support;

use serde_json::json;
use std::path::Path;
use std::process::{Command, Output};
use support::TestServer;

fn write(root: &Path, path: &str, text: &str) {
    let file = root.join(path);
    std::fs::create_dir_all(file.parent().expect("parent")).expect("folder");
    std::fs::write(file, text).expect("write");
}

fn record(name: &str, fields: serde_json::Value) -> String {
    serde_json::to_string_pretty(
        &json!({"type": "record", "name": name, "namespace": "acme", "fields": fields}),
    )
    .expect("json")
}

/// money, ten payments referencing it, four invoices referencing a payment each, and five
/// events declared by one `files` pattern: 20 subjects.
fn folder(root: &Path) {
    let mut manifest = String::from(
        "[defaults]\ncompatibility = \"BACKWARD\"\n\n\
         [[subjects]]\nname = \"money-value\"\nfile = \"schemas/money.avsc\"\n\
         metadata = { properties = { owner = \"payments\" } }\n\
         rule_set = { domainRules = [{ name = \"positive\", kind = \"CONDITION\", mode = \"WRITE\", \
         type = \"CEL\", expr = \"message.units >= 0\" }] }\n",
    );
    write(
        root,
        "schemas/money.avsc",
        &record("Money", json!([{"name": "units", "type": "long"}])),
    );
    for i in 0..10 {
        write(
            root,
            &format!("schemas/payment-{i:02}.avsc"),
            &record(
                &format!("Payment{i:02}"),
                json!([{"name": "id", "type": "string"}, {"name": "total", "type": "acme.Money"}]),
            ),
        );
        manifest.push_str(&format!(
            "\n[[subjects]]\nname = \"payment-{i:02}-value\"\nfile = \"schemas/payment-{i:02}.avsc\"\n\
             references = [{{ name = \"acme.Money\", subject = \"money-value\" }}]\n"
        ));
    }
    for i in 0..4 {
        write(
            root,
            &format!("schemas/invoice-{i:02}.avsc"),
            &record(
                &format!("Invoice{i:02}"),
                json!([{"name": "payment", "type": format!("acme.Payment{i:02}")}]),
            ),
        );
        manifest.push_str(&format!(
            "\n[[subjects]]\nname = \"invoice-{i:02}-value\"\nfile = \"schemas/invoice-{i:02}.avsc\"\n\
             references = [{{ name = \"acme.Payment{i:02}\", subject = \"payment-{i:02}-value\" }}]\n"
        ));
    }
    for i in 0..5 {
        write(
            root,
            &format!("schemas/events/event{i}.avsc"),
            &record(
                &format!("Event{i}"),
                json!([{"name": "at", "type": "long"}]),
            ),
        );
    }
    manifest
        .push_str("\n[[subjects]]\nname = \"{stem}-value\"\nfiles = \"schemas/events/*.avsc\"\n");
    write(root, "covenant.toml", &manifest);
}

fn covenant_in(dir: &Path, server: &TestServer, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_covenant"))
        .current_dir(dir)
        .args(args)
        .args(["--url", &server.base])
        .output()
        .expect("run covenant")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn lines_starting<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.starts_with(prefix)).collect()
}

/// The position of the first line naming `subject`.
fn position(lines: &[&str], subject: &str) -> usize {
    lines
        .iter()
        .position(|l| l.contains(&format!(" {subject} ")))
        .unwrap_or_else(|| panic!("{subject} not in {lines:#?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_is_planned_applied_pulled_and_found_in_step() {
    let server = TestServer::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    folder(dir.path());

    // The plan on an empty registry: 20 registrations, references first, 20 configs.
    let plan = covenant_in(dir.path(), &server, &["apply", "--dry-run"]);
    let text = stdout(&plan);
    assert_eq!(
        plan.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&plan.stderr)
    );
    let registrations = lines_starting(&text, "would register ");
    assert_eq!(registrations.len(), 20, "{text}");
    assert_eq!(
        lines_starting(&text, "would set config ").len(),
        20,
        "{text}"
    );
    let money = position(&registrations, "money-value");
    for i in 0..4 {
        let payment = position(&registrations, &format!("payment-{i:02}-value"));
        let invoice = position(&registrations, &format!("invoice-{i:02}-value"));
        assert!(money < payment && payment < invoice, "{registrations:#?}");
    }
    assert!(text.contains("would register event3-value from schemas/events/event3.avsc"));
    let (_, subjects) = server.call("GET", "/subjects", None).await;
    assert_eq!(subjects, json!([]), "a plan registers nothing");

    // Applied: every subject registered, with its id.
    let applied = covenant_in(dir.path(), &server, &["apply"]);
    let text = stdout(&applied);
    assert_eq!(
        applied.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    assert_eq!(lines_starting(&text, "registered ").len(), 20, "{text}");
    let (_, subjects) = server.call("GET", "/subjects", None).await;
    assert_eq!(subjects.as_array().map(Vec::len), Some(20), "{subjects}");
    let (_, config) = server
        .call(
            "GET",
            "/config/invoice-02-value?defaultToGlobal=false",
            None,
        )
        .await;
    assert_eq!(config["compatibilityLevel"], "BACKWARD");
    let (_, money) = server
        .call("GET", "/subjects/money-value/versions/1", None)
        .await;
    assert_eq!(
        money["metadata"]["properties"]["owner"], "payments",
        "{money}"
    );
    assert_eq!(
        money["ruleSet"]["domainRules"][0]["name"], "positive",
        "{money}"
    );

    // In step: the second plan has nothing to do, and a second apply changes nothing.
    for args in [&["apply", "--dry-run"][..], &["apply"][..]] {
        let again = covenant_in(dir.path(), &server, args);
        let text = stdout(&again);
        assert_eq!(
            again.status.code(),
            Some(0),
            "{args:?}: {text}{}",
            String::from_utf8_lossy(&again.stderr)
        );
        assert!(text.ends_with("nothing to do\n"), "{text}");
        assert_eq!(lines_starting(&text, "unchanged: ").len(), 20, "{text}");
    }
    let (_, versions) = server
        .call("GET", "/subjects/payment-05-value/versions", None)
        .await;
    assert_eq!(versions, json!([1]));

    // Pulled into an empty folder: its manifest plans nothing either.
    let pulled = tempfile::tempdir().expect("temp dir");
    let pull = covenant_in(pulled.path(), &server, &["pull", "."]);
    assert_eq!(
        pull.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&pull.stderr)
    );
    assert!(pulled.path().join("covenant.toml").is_file());
    let plan = covenant_in(pulled.path(), &server, &["apply", "--dry-run"]);
    let text = stdout(&plan);
    assert_eq!(plan.status.code(), Some(0), "{text}");
    assert!(text.ends_with("nothing to do\n"), "{text}");
    // A second pull into the same folder is refused.
    let again = covenant_in(pulled.path(), &server, &["pull", "."]);
    assert_eq!(again.status.code(), Some(2));

    // An incompatible edit: the plan says which and exits 1; apply refuses at that subject.
    write(
        dir.path(),
        "schemas/payment-03.avsc",
        &record(
            "Payment03",
            json!([{"name": "id", "type": "string"}, {"name": "total", "type": "acme.Money"},
                   {"name": "currency", "type": "string"}]),
        ),
    );
    let plan = covenant_in(dir.path(), &server, &["apply", "--dry-run"]);
    let text = stdout(&plan);
    assert_eq!(plan.status.code(), Some(1), "{text}");
    let refused = lines_starting(&text, "refused: ");
    assert_eq!(refused.len(), 1, "{text}");
    assert!(refused[0].contains("payment-03-value"), "{text}");
    assert!(
        text.contains("READER_FIELD_MISSING_DEFAULT_VALUE"),
        "{text}"
    );
    let apply = covenant_in(dir.path(), &server, &["apply"]);
    assert_eq!(apply.status.code(), Some(1), "{}", stdout(&apply));
    let (_, versions) = server
        .call("GET", "/subjects/payment-03-value/versions", None)
        .await;
    assert_eq!(versions, json!([1]));

    // A subject the folder does not declare is listed and kept.
    let (status, _) = server
        .register("legacy-value", "AVRO", &record("Legacy", json!([])))
        .await;
    assert_eq!(status, 200);
    std::fs::remove_file(dir.path().join("schemas/payment-03.avsc")).expect("remove");
    write(
        dir.path(),
        "schemas/payment-03.avsc",
        &record(
            "Payment03",
            json!([{"name": "id", "type": "string"}, {"name": "total", "type": "acme.Money"}]),
        ),
    );
    let plan = covenant_in(dir.path(), &server, &["apply", "--dry-run"]);
    let text = stdout(&plan);
    assert!(
        text.contains("not in the folder: legacy-value (kept;"),
        "{text}"
    );
    let prune = covenant_in(dir.path(), &server, &["apply", "--prune"]);
    assert_eq!(prune.status.code(), Some(2), "--prune needs --yes");
    let prune = covenant_in(dir.path(), &server, &["apply", "--prune", "--yes"]);
    assert!(
        stdout(&prune).contains("deleted (soft): legacy-value"),
        "{}",
        stdout(&prune)
    );
    let (status, _) = server
        .call("GET", "/subjects/legacy-value/versions", None)
        .await;
    assert_eq!(status, 404);
}

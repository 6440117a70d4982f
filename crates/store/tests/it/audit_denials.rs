//! Refusals in the trail of the embedded store: repeats of one kind are stored once and
//! counted, text is stored escaped, and a store written before refusals were counted opens
//! with its entries counted once.

use covenant_store::audit::OUTCOME_DENIED;
use covenant_store::audit_denials::DenialKey;
use covenant_store::{AuditContext, AuditEntry, AuditQuery, AuditTarget, SqliteStore, Store};

fn refusal(principal: &str, subject: &str) -> AuditEntry {
    let mut entry = AuditContext {
        principal: principal.to_string(),
        source: Some("10.1.2.3".into()),
        request_id: Some(format!("req-{subject}")),
        detail: None,
    }
    .entry("Read", AuditTarget::subject(Some(subject)));
    entry.outcome = OUTCOME_DENIED.into();
    entry.detail = Some("AuthenticationRequired on GET /subjects/{subject}/versions".into());
    entry
}

fn anonymous_key() -> DenialKey {
    DenialKey {
        principal: None,
        source: Some("10.1.2.3".into()),
        reason: "AuthenticationRequired".into(),
        operation: "Read".into(),
        resource: None,
        route: "GET /subjects/{subject}/versions".into(),
    }
}

async fn trail(store: &dyn Store) -> Vec<AuditEntry> {
    store
        .audit_entries(&AuditQuery {
            limit: 1000,
            ..AuditQuery::default()
        })
        .await
        .expect("trail")
}

#[tokio::test]
async fn repeated_refusals_are_one_counted_entry() {
    let dir = tempfile::tempdir().expect("dir");
    let store = SqliteStore::open(dir.path()).expect("store");
    let first_at = chrono::Utc::now().timestamp_millis();
    for n in 0..2000 {
        let entry = refusal("anonymous", &format!("s{n}"));
        store
            .record_denied(&entry, &anonymous_key())
            .await
            .expect("record");
    }
    // Another principal is another kind.
    let mut alice = anonymous_key();
    alice.principal = Some("alice".into());
    alice.resource = Some("Subject:s1".into());
    store
        .record_denied(&refusal("alice", "s1"), &alice)
        .await
        .expect("record");

    let entries = trail(&store).await;
    assert_eq!(entries.len(), 2, "{entries:?}");
    let anonymous = &entries[0];
    assert_eq!(anonymous.count, 2000);
    assert_eq!(anonymous.subject.as_deref(), Some("s0"), "the first one's");
    assert!(anonymous.at >= first_at);
    assert!(anonymous.last_at.expect("last") >= anonymous.at);
    assert_eq!(
        (entries[1].principal.as_str(), entries[1].count),
        ("alice", 1)
    );
    assert_eq!(entries[1].last_at, None);
}

#[tokio::test]
async fn counts_are_written_out_without_a_read() {
    let dir = tempfile::tempdir().expect("dir");
    {
        let store = SqliteStore::open(dir.path()).expect("store");
        for _ in 0..5 {
            store
                .record_denied(&refusal("anonymous", "x"), &anonymous_key())
                .await
                .expect("record");
        }
        tokio::time::sleep(
            covenant_store::audit_denials::FLUSH_INTERVAL + std::time::Duration::from_millis(500),
        )
        .await;
        store.settled().await.expect("settled");
    }
    let reopened = SqliteStore::open(dir.path()).expect("reopen");
    let entries = trail(&reopened).await;
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].count, 5);
}

#[tokio::test]
async fn forged_lines_are_stored_escaped() {
    let dir = tempfile::tempdir().expect("dir");
    let store = SqliteStore::open(dir.path()).expect("store");
    let forged =
        "x\n2030-01-01T00:00:00.000Z  ok      register               orders v1  by admin\u{1b}[2K";
    let mut entry = refusal("mallory\r", forged);
    entry.outcome = "ok".into();
    store.record_audit(&entry).await.expect("record");
    store
        .record_denied(&refusal("anonymous", forged), &anonymous_key())
        .await
        .expect("record");
    for e in trail(&store).await {
        for text in [
            Some(e.principal.as_str()),
            e.subject.as_deref(),
            e.request_id.as_deref(),
        ]
        .into_iter()
        .flatten()
        {
            assert!(
                !text.chars().any(covenant_store::audit::is_unsafe_char),
                "{text:?}"
            );
        }
        assert!(
            e.subject
                .as_deref()
                .expect("subject")
                .starts_with("x\\n2030")
        );
        assert!(
            e.subject
                .as_deref()
                .expect("subject")
                .ends_with("\\u{1b}[2K")
        );
    }
}

#[tokio::test]
async fn entries_written_before_counting_read_as_one_attempt() {
    let dir = tempfile::tempdir().expect("dir");
    {
        // A store as the previous release left it: the audit table without its counts.
        let conn = rusqlite::Connection::open(dir.path().join("covenant.sqlite3")).expect("db");
        conn.execute_batch(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL);
             INSERT INTO schema_migrations VALUES (1, 0), (2, 0), (3, 0), (4, 0);
             CREATE TABLE schemas (id INTEGER PRIMARY KEY, schema_type TEXT NOT NULL,
                 schema TEXT NOT NULL, refs TEXT NOT NULL, metadata TEXT, rule_set TEXT,
                 content_key TEXT NOT NULL, guid TEXT);
             CREATE TABLE subject_versions (subject TEXT NOT NULL, version INTEGER NOT NULL,
                 schema_id INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0,
                 created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
                 PRIMARY KEY (subject, version));
             CREATE TABLE schema_references (schema_id INTEGER NOT NULL, ordinal INTEGER NOT NULL,
                 name TEXT NOT NULL, subject TEXT NOT NULL, version INTEGER NOT NULL,
                 PRIMARY KEY (schema_id, ordinal));
             CREATE TABLE config (scope TEXT PRIMARY KEY, compatibility TEXT, extra TEXT NOT NULL);
             CREATE TABLE modes (scope TEXT PRIMARY KEY, mode TEXT NOT NULL);
             CREATE TABLE contexts (name TEXT PRIMARY KEY, slot INTEGER NOT NULL UNIQUE);
             CREATE TABLE audit_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL,
                 principal TEXT NOT NULL, source TEXT, operation TEXT NOT NULL, subject TEXT,
                 version INTEGER, schema_id INTEGER, config_key TEXT, outcome TEXT NOT NULL,
                 request_id TEXT, detail TEXT);
             INSERT INTO audit_log(at, principal, operation, outcome)
                 VALUES (1000, 'old', 'register', 'ok');",
        )
        .expect("old layout");
    }
    let store = SqliteStore::open(dir.path()).expect("migrated");
    assert!(store.applied_migrations().expect("migrations").contains(&5));
    let entries = trail(&store).await;
    assert_eq!(entries.len(), 1);
    assert_eq!((entries[0].count, entries[0].last_at), (1, None));
    let json = serde_json::to_value(&entries[0]).expect("json");
    assert_eq!(json["count"], 1);
}

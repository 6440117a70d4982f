//! Governance and sample writes append their audit entry in the same transaction as the
//! change: a committed write has exactly one entry, a refused or failed one none, and when the
//! entry cannot be written the change does not commit either. The last is shown with a
//! trigger that makes `audit_log` refuse entries of one principal. Runs on SQLite, and on
//! PostgreSQL when `COVENANT_TEST_POSTGRES` holds an admin URL (`scripts/with-postgres.sh`),
//! in a database of its own.

use covenant_store::governance::*;
use covenant_store::{
    AuditContext, AuditEntry, AuditQuery, AuditTarget, NewSample, PostgresGovernanceStore,
    PostgresSampleStore, PostgresStore, SampleAdded, SampleStore, SqliteGovernanceStore,
    SqliteSampleStore, SqliteStore, Store,
};
use std::collections::BTreeMap;

const T0: i64 = 1_767_225_600_000;
/// The principal whose entries the trigger refuses.
const REFUSED: &str = "refused";

struct Stores {
    registry: Box<dyn Store>,
    governance: Box<dyn GovernanceStore>,
    samples: Box<dyn SampleStore>,
}

fn entry(principal: &str, operation: &str) -> AuditEntry {
    let context = AuditContext {
        principal: principal.to_string(),
        source: Some("127.0.0.1".to_string()),
        request_id: Some(format!("{principal}-{operation}")),
        detail: None,
    };
    context.entry(operation, AuditTarget::default())
}

fn consumer(name: &str, clients: &[&str]) -> Consumer {
    Consumer::from_new(
        NewConsumer {
            name: name.to_string(),
            owner: "team".to_string(),
            purpose: "reads".to_string(),
            cadence: Cadence::Daily,
            criticality: Criticality::Low,
            contact: "team@example.com".to_string(),
            clients: clients.iter().map(|c| c.to_string()).collect(),
            reads: Vec::new(),
            environment: Default::default(),
        },
        T0,
    )
}

fn deprecation() -> NewDeprecation {
    NewDeprecation {
        target: DeprecationTarget::Field {
            subject: "s".into(),
            path: "f".into(),
        },
        contract: String::new(),
        old_promise: "f exists".into(),
        new_promise: "f goes".into(),
        replacement: Some("g".into()),
        owners: Vec::new(),
        window_start: T0,
        window_end: T0 + 1,
        sunset: None,
        notes: RecordNotes::default(),
        announced_by: "team".into(),
    }
}

fn report(client: &str) -> UsageReport {
    UsageReport {
        subject: "s".into(),
        client_id: client.into(),
        fields_read: vec!["f".into()],
        interval_start: T0,
        interval_end: T0,
        ..UsageReport::default()
    }
}

fn finding(client: &str) -> UsageFinding {
    UsageFinding {
        kind: FindingKind::UnattributedUsage,
        at: T0,
        subject: "s".into(),
        field: None,
        client_id: client.into(),
        consumer: None,
        deprecation_id: None,
        message: "nobody owns it".into(),
    }
}

fn sample() -> NewSample {
    NewSample {
        subject: "s".into(),
        version: 1,
        encoding: "avro".into(),
        message_name: None,
        payload: vec![2, 0],
    }
}

fn accept(_: &Consumer) -> GovernanceResult<()> {
    Ok(())
}

fn refuse(_: &Consumer) -> GovernanceResult<()> {
    Err(GovernanceError::Refused("frozen field".into()))
}

/// The operations in the trail of `principal`, oldest first.
async fn trail(s: &Stores, principal: &str) -> Vec<String> {
    let query = AuditQuery {
        principal: Some(principal.to_string()),
        limit: 1000,
        ..AuditQuery::default()
    };
    let entries = s.registry.audit_entries(&query).await.expect("trail");
    entries.into_iter().map(|e| e.operation).collect()
}

/// Consumer writes: committed ones leave one entry each, refused ones (a duplicate, a check
/// that says no, a client id held by another consumer after the row was rewritten, a missing
/// consumer) leave none.
async fn consumer_writes(s: &Stores) {
    let g = &s.governance;
    let op = |o: &str| entry("alice", o);
    g.create_consumer(&consumer("a", &[]), &accept, Some(&op("consumer.create")))
        .await
        .expect("create a");
    g.create_consumer(
        &consumer("c", &["x"]),
        &accept,
        Some(&op("consumer.create")),
    )
    .await
    .expect("create c");
    let dup = g
        .create_consumer(&consumer("a", &[]), &accept, Some(&op("consumer.create")))
        .await;
    assert!(matches!(dup, Err(GovernanceError::Conflict(_))));
    let refused = g
        .create_consumer(&consumer("b", &[]), &refuse, Some(&op("consumer.create")))
        .await;
    assert!(matches!(refused, Err(GovernanceError::Refused(_))));
    let taken = g
        .modify_consumer(
            "a",
            &|c| {
                c.clients.push("x".into());
                Ok(())
            },
            Some(&op("consumer.update")),
        )
        .await;
    assert!(matches!(taken, Err(GovernanceError::Conflict(_))));
    let a = g.consumer("a").await.expect("read").expect("a exists");
    assert!(a.clients.is_empty(), "the refused edit rolled back");
    let missing = g
        .modify_consumer("nobody", &|_| Ok(()), Some(&op("consumer.update")))
        .await;
    assert!(matches!(missing, Err(GovernanceError::NotFound { .. })));
    g.modify_consumer(
        "a",
        &|c| {
            c.retired_at = Some(T0);
            Ok(())
        },
        Some(&op("consumer.retire")),
    )
    .await
    .expect("retire");
    assert_eq!(
        trail(s, "alice").await,
        ["consumer.create", "consumer.create", "consumer.retire"]
    );
}

/// Usage and deprecation writes: the report, its findings and its entry are one write; a
/// refused edit leaves no entry.
async fn usage_and_deprecation_writes(s: &Stores) {
    let g = &s.governance;
    let op = |o: &str| entry("bob", o);
    g.record_usage(
        &report("svc"),
        None,
        &[finding("svc")],
        Some(&op("usage.report")),
    )
    .await
    .expect("usage");
    assert_eq!(g.findings(T0, T0).await.expect("findings").len(), 1);
    let d = g
        .create_deprecation(&deprecation(), T0, Some(&op("deprecation.create")))
        .await
        .expect("deprecate");
    let refused = g
        .modify_deprecation(
            d.id,
            &|_| Err(GovernanceError::Refused("no".into())),
            Some(&op("deprecation.stage")),
        )
        .await;
    assert!(matches!(refused, Err(GovernanceError::Refused(_))));
    let moved = g
        .modify_deprecation(
            d.id,
            &|r| {
                r.stage = Stage::Frozen;
                Ok(())
            },
            Some(&op("deprecation.stage")),
        )
        .await;
    assert_eq!(moved.expect("stage").stage, Stage::Frozen);
    assert_eq!(
        trail(s, "bob").await,
        ["usage.report", "deprecation.create", "deprecation.stage"]
    );
}

/// Sample writes: a refused add (the limit) and an unmark of a version with no mark record
/// nothing.
async fn sample_writes(s: &Stores) {
    let p = &s.samples;
    let op = |o: &str| entry("carol", o);
    let SampleAdded::Stored(first) = p
        .add_sample(&sample(), 1, Some(&op("sample.add")))
        .await
        .expect("add")
    else {
        panic!("the first sample is refused");
    };
    let full = p.add_sample(&sample(), 1, Some(&op("sample.add"))).await;
    assert_eq!(full.expect("add"), SampleAdded::LimitReached { limit: 1 });
    let removed = p
        .delete_samples("s", &[first.id], Some(&op("sample.delete")))
        .await;
    assert_eq!(removed.expect("delete"), [first.id]);
    p.mark_live("s", 1, T0, Some(&op("live.mark")))
        .await
        .expect("mark");
    assert!(
        !p.unmark_live("s", 2, Some(&op("live.unmark")))
            .await
            .expect("unmark")
    );
    assert!(
        p.unmark_live("s", 1, Some(&op("live.unmark")))
            .await
            .expect("unmark")
    );
    assert_eq!(
        trail(s, "carol").await,
        ["sample.add", "sample.delete", "live.mark", "live.unmark"]
    );
}

/// With `audit_log` refusing the entry, each write fails and its change is not in the store.
async fn a_refused_entry_rolls_the_change_back(s: &Stores) {
    let g = &s.governance;
    let p = &s.samples;
    let op = |o: &str| entry(REFUSED, o);
    let created = g
        .create_consumer(
            &consumer("z", &["zz"]),
            &accept,
            Some(&op("consumer.create")),
        )
        .await;
    assert!(matches!(created, Err(GovernanceError::Backend(_))));
    assert_eq!(g.consumer("z").await.expect("read"), None);
    assert_eq!(g.consumer_for_client("zz").await.expect("read"), None);

    let before = g.deprecations(None).await.expect("list");
    let d = before.first().expect("a deprecation from earlier");
    let edit = g
        .modify_deprecation(
            d.id,
            &|r| {
                r.stage = Stage::Announced;
                Ok(())
            },
            Some(&op("deprecation.stage")),
        )
        .await;
    assert!(edit.is_err());
    // A target with no deprecation yet, so that only the refused entry can stop the write.
    let mut fresh = deprecation();
    fresh.target = DeprecationTarget::Subject {
        subject: "fresh".into(),
    };
    let opened = g
        .create_deprecation(&fresh, T0, Some(&op("deprecation.create")))
        .await;
    assert!(matches!(opened, Err(GovernanceError::Backend(_))));
    assert_eq!(g.deprecations(None).await.expect("list"), before);

    let usage = g
        .record_usage(
            &report("svc-z"),
            None,
            &[finding("svc-z")],
            Some(&op("usage.report")),
        )
        .await;
    assert!(usage.is_err());
    let query = UsageQuery {
        from: T0 - 1,
        to: T0 + 1,
        ..UsageQuery::default()
    };
    let reporters: Vec<String> = g
        .field_usage(&query)
        .await
        .expect("usage")
        .into_iter()
        .map(|u| u.client_id)
        .collect();
    assert_eq!(reporters, ["svc"], "the refused report was not counted");
    assert_eq!(g.findings(T0, T0).await.expect("findings").len(), 1);

    let add = p.add_sample(&sample(), 5, Some(&op("sample.add"))).await;
    assert!(add.is_err());
    assert!(p.samples("s", None).await.expect("samples").is_empty());
    assert!(
        p.mark_live("s", 3, T0, Some(&op("live.mark")))
            .await
            .is_err()
    );
    assert!(p.live_marks("s").await.expect("marks").is_empty());
    assert!(trail(s, REFUSED).await.is_empty());
}

async fn run_all(s: &Stores, refuse_entries: impl AsyncFnOnce()) {
    consumer_writes(s).await;
    usage_and_deprecation_writes(s).await;
    sample_writes(s).await;
    refuse_entries().await;
    a_refused_entry_rolls_the_change_back(s).await;
    let everyone = AuditQuery {
        limit: 1000,
        ..AuditQuery::default()
    };
    let all = s.registry.audit_entries(&everyone).await.expect("trail");
    assert_eq!(all.len(), 10, "one entry per committed write, nothing else");
    let mut per_request: BTreeMap<String, usize> = BTreeMap::new();
    for e in &all {
        *per_request
            .entry(e.request_id.clone().unwrap_or_default())
            .or_default() += 1;
        assert_eq!(e.source.as_deref(), Some("127.0.0.1"));
    }
    assert!(per_request.contains_key("carol-live.unmark"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn governance_and_sample_entries_share_their_transaction_on_sqlite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let registry = SqliteStore::open(dir.path()).expect("registry");
    let path = registry.path().to_path_buf();
    let stores = Stores {
        governance: Box::new(SqliteGovernanceStore::open(dir.path()).expect("governance")),
        samples: Box::new(SqliteSampleStore::open(&path).expect("samples")),
        registry: Box::new(registry),
    };
    run_all(&stores, async || {
        let conn = rusqlite::Connection::open(&path).expect("open");
        conn.execute_batch(&format!(
            "CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log \
             WHEN NEW.principal = '{REFUSED}' BEGIN SELECT RAISE(ABORT, 'audit refused'); END;"
        ))
        .expect("trigger");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn governance_and_sample_entries_share_their_transaction_on_postgres() {
    let Ok(admin) = std::env::var("COVENANT_TEST_POSTGRES") else {
        println!("COVENANT_TEST_POSTGRES is unset: skipping the PostgreSQL audit transaction test");
        return;
    };
    let name = format!("covenant_audit_tx_{}", std::process::id());
    let url = format!("{}/{name}", admin.rsplit_once('/').expect("a database").0);
    let (admin_client, conn) = tokio_postgres::connect(&admin, tokio_postgres::NoTls)
        .await
        .expect("connect");
    let driver = tokio::spawn(conn);
    admin_client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .expect("create database");
    let stores = Stores {
        registry: Box::new(PostgresStore::connect(&url).await.expect("registry")),
        governance: Box::new(PostgresGovernanceStore::connect(&url).await.expect("gov")),
        samples: Box::new(PostgresSampleStore::connect(&url).await.expect("samples")),
    };
    run_all(&stores, async || {
        let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .expect("connect");
        let driver = tokio::spawn(conn);
        client
            .batch_execute(&format!(
                "CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$ \
                 BEGIN IF NEW.principal = '{REFUSED}' THEN RAISE EXCEPTION 'audit refused'; \
                 END IF; RETURN NEW; END $$; \
                 CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_log \
                 FOR EACH ROW EXECUTE FUNCTION refuse_audit();"
            ))
            .await
            .expect("trigger");
        drop(client);
        let _ = driver.await;
    })
    .await;
    drop(stores);
    let _ = admin_client
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .await;
    drop(admin_client);
    let _ = driver.await;
}

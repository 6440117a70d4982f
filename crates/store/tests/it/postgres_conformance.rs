//! The shared store conformance suite against PostgreSQL, plus what only a shared database
//! has: several stores ("nodes") on one database racing each other, concurrent migrations and
//! the change feed. Runs when `COVENANT_TEST_POSTGRES` holds an admin URL (see
//! `scripts/with-postgres.sh`); every test creates its own database there.

use covenant_store::conformance::schema as avro;
use covenant_store::postgres::{Change, ChangeKind};
use covenant_store::{
    ConfigRecord, Placement, PostgresStore, Rejection, Scope, Store, StoreError, StoredVersion,
    conformance,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const ENV: &str = "COVENANT_TEST_POSTGRES";

/// A database created for one test, dropped at the end when possible.
struct TestDb {
    admin: String,
    name: String,
    url: String,
}

impl TestDb {
    async fn drop_db(self) {
        if let Ok((client, conn)) =
            tokio_postgres::connect(&self.admin, tokio_postgres::NoTls).await
        {
            let driver = tokio::spawn(conn);
            let _ = client
                .batch_execute(&format!(
                    "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                    self.name
                ))
                .await;
            drop(client);
            let _ = driver.await;
        }
    }
}

/// `admin` with its database name replaced by `db`.
fn with_database(admin: &str, db: &str) -> String {
    let (base, query) = match admin.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (admin, None),
    };
    let authority_start = base.find("://").map(|i| i + 3).unwrap_or(0);
    let root = match base[authority_start..].find('/') {
        Some(i) => &base[..authority_start + i],
        None => base,
    };
    match query {
        Some(q) => format!("{root}/{db}?{q}"),
        None => format!("{root}/{db}"),
    }
}

/// Creates a uniquely named database, or returns `None` (after a notice) without a server.
async fn fresh_db(test: &str) -> Option<TestDb> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let Ok(admin) = std::env::var(ENV) else {
        eprintln!("{test}: {ENV} is not set; skipping the PostgreSQL backend test");
        return None;
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let name = format!(
        "covenant_t_{}_{}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst),
        nanos
    );
    let (client, conn) = tokio_postgres::connect(&admin, tokio_postgres::NoTls)
        .await
        .expect("connect to the admin database");
    let driver = tokio::spawn(conn);
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .expect("create test database");
    drop(client);
    let _ = driver.await;
    let url = with_database(&admin, &name);
    Some(TestDb { admin, name, url })
}

async fn store_for(db: &TestDb) -> PostgresStore {
    PostgresStore::connect(&db.url).await.expect("connect")
}

macro_rules! conformance_test {
    ($name:ident, $check:path) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let Some(db) = fresh_db(stringify!($name)).await else {
                return;
            };
            let store = store_for(&db).await;
            $check(&store).await;
            drop(store);
            db.drop_db().await;
        }
    };
}

conformance_test!(conformance_ids_and_dedupe, conformance::ids_and_dedupe);
conformance_test!(
    conformance_version_numbering,
    conformance::version_numbering
);
conformance_test!(
    conformance_guard,
    conformance::guard_sees_versions_and_can_refuse
);
conformance_test!(conformance_deletes, conformance::soft_and_permanent_deletes);
conformance_test!(
    conformance_explicit_ids,
    conformance::explicit_ids_and_versions
);
conformance_test!(
    conformance_batches,
    conformance::batches_register_all_or_nothing
);
conformance_test!(
    conformance_versions_page,
    conformance::versions_page_by_subject_and_version
);
conformance_test!(conformance_references, conformance::references_are_indexed);
conformance_test!(
    conformance_references_must_be_live,
    conformance::references_must_be_live
);
conformance_test!(
    conformance_guarded_deletes,
    conformance::guarded_deletes_see_references
);
conformance_test!(conformance_config_and_mode, conformance::config_and_mode);
conformance_test!(conformance_settings, conformance::settings_read_together);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registrations_at_once_are_written_in_groups_each_whole() {
    let Some(db) = fresh_db("groups").await else {
        return;
    };
    let store = store_for(&db).await;
    conformance::shared_registrations_are_each_whole(&store).await;
    assert!(
        store.grouped_registrations() > 0,
        "48 registrations at once were written one by one"
    );

    // A member the database refuses (PostgreSQL's text cannot hold NUL) fails its group, whose
    // members are then written one by one: it fails alone.
    let allow: covenant_store::SharedGuard = Arc::new(conformance::allow);
    let candidates: Vec<_> = (0..12)
        .map(|i| match i {
            7 => avro("{\"type\":\"bad\u{0}\"}"),
            _ => avro(&format!("{{\"type\":\"group-fail-{i}\"}}")),
        })
        .collect();
    let node = &store;
    let results = futures_util::future::join_all(candidates.iter().enumerate().map(|(i, c)| {
        let subject = format!("group-fail-{i}");
        let guard = Arc::clone(&allow);
        async move {
            let store = node;
            store
                .register_shared(&subject, c, Placement::default(), guard, None)
                .await
        }
    }))
    .await;
    for (i, r) in results.iter().enumerate() {
        match i {
            7 => assert!(matches!(r, Err(StoreError::Backend(_))), "{r:?}"),
            _ => assert_eq!(r.as_ref().map(|r| r.version).ok(), Some(1), "{i}: {r:?}"),
        }
        let versions = store
            .subject_versions(&format!("group-fail-{i}"))
            .await
            .expect("versions");
        assert_eq!(versions.len(), usize::from(i != 7), "{i}");
    }
    drop(store);
    db.drop_db().await;
}

/// A group that waits on a lock another node holds keeps the queue from the node's other
/// writer only for a while: a registration of another subject is written meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_waiting_on_another_nodes_lock_does_not_stop_other_writes() {
    let Some(db) = fresh_db("held").await else {
        return;
    };
    let store = Arc::new(store_for(&db).await);
    let (holder, conn) = tokio_postgres::connect(&db.url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    let driver = tokio::spawn(conn);
    // The subject lock of a registration: its space (`LOCK_SUBJECT`) and the subject's hash.
    holder
        .batch_execute("BEGIN; SELECT pg_advisory_xact_lock(x'436f0002'::int, hashtext('held'))")
        .await
        .expect("hold the subject's lock");
    let allow: covenant_store::SharedGuard = Arc::new(conformance::allow);
    let register = |subject: &'static str| {
        let (store, guard) = (Arc::clone(&store), Arc::clone(&allow));
        tokio::spawn(async move {
            let candidate = avro(&format!("{{\"type\":\"{subject}-type\"}}"));
            store
                .register_shared(subject, &candidate, Placement::default(), guard, None)
                .await
        })
    };
    let held = register("held");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let free = tokio::time::timeout(Duration::from_secs(5), register("free"))
        .await
        .expect("a registration of another subject waited for the held lock")
        .expect("task");
    assert_eq!(free.map(|r| r.version).ok(), Some(1));
    if held.is_finished() {
        panic!(
            "the held subject was written under another's lock: {:?}",
            held.await
        );
    }
    holder.batch_execute("COMMIT").await.expect("release");
    let held = held.await.expect("task");
    assert_eq!(held.map(|r| r.version).ok(), Some(1));
    drop(holder);
    let _ = driver.await;
    drop(store);
    db.drop_db().await;
}

conformance_test!(
    conformance_schema_type_counts,
    conformance::schema_type_counts_count_each_schema_once
);
conformance_test!(
    postgres_passes_the_whole_suite_in_one_database,
    conformance::run_all
);

#[test]
fn admin_url_gets_the_test_database() {
    assert_eq!(
        with_database("postgres://postgres@127.0.0.1:5432/postgres", "t1"),
        "postgres://postgres@127.0.0.1:5432/t1"
    );
    assert_eq!(
        with_database("postgres://u:p@h/postgres?sslmode=disable", "t1"),
        "postgres://u:p@h/t1?sslmode=disable"
    );
    assert_eq!(with_database("postgres://h:1", "t1"), "postgres://h:1/t1");
}

/// Needs no server: nothing listens on port 1.
#[tokio::test]
async fn an_unreachable_database_is_a_readable_backend_error() {
    let url = "postgres://postgres@127.0.0.1:1/covenant";
    match PostgresStore::connect(url).await {
        Err(StoreError::Backend(message)) => {
            assert!(
                message.contains("127.0.0.1:1/covenant") && message.contains("unreachable"),
                "message names the database and the problem: {message}"
            );
        }
        Err(other) => panic!("expected a backend error, got {other:?}"),
        Ok(_) => panic!("connecting to a closed port succeeded"),
    }
    let store = PostgresStore::open_lazy(url).expect("a lazy store opens without the database");
    assert!(matches!(store.ping().await, Err(StoreError::Backend(_))));
    assert!(matches!(
        store.subject_versions("s").await,
        Err(StoreError::Backend(_))
    ));
    assert!(!store.is_listening());
    match PostgresStore::open_lazy("postgres://h:notaport/db") {
        Err(StoreError::Backend(message)) => assert!(message.contains("invalid PostgreSQL URL")),
        Err(other) => panic!("expected a backend error, got {other:?}"),
        Ok(_) => panic!("a malformed URL was accepted"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_starting_at_once_migrate_once() {
    let Some(db) = fresh_db("nodes_starting_at_once_migrate_once").await else {
        return;
    };
    let starts = (0..4).map(|_| {
        let url = db.url.clone();
        tokio::spawn(async move { PostgresStore::connect(&url).await })
    });
    let mut stores = Vec::new();
    for start in starts {
        stores.push(start.await.expect("join").expect("connect"));
    }
    for store in &stores {
        assert_eq!(
            store.applied_migrations().await.expect("migrations"),
            vec![1, 2, 3, 4, 5]
        );
        store.ping().await.expect("ping");
    }
    drop(stores);
    db.drop_db().await;
}

async fn next_change(rx: &mut tokio::sync::broadcast::Receiver<Change>) -> Change {
    loop {
        let change = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("a change arrives within 10 s")
            .expect("feed open");
        if change.kind != ChangeKind::Resync {
            return change;
        }
    }
}

async fn wait_listening(store: &PostgresStore) {
    for _ in 0..200 {
        if store.is_listening() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the change feed did not start listening");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_on_one_node_reach_the_other_through_the_change_feed() {
    let Some(db) = fresh_db("change_feed").await else {
        return;
    };
    let writer = store_for(&db).await;
    let reader = store_for(&db).await;
    let mut rx = reader.subscribe_changes();
    wait_listening(&reader).await;
    let allow = |_: &[StoredVersion]| Ok(());

    let r = writer
        .register("feed", &avro("feed-1"), Placement::default(), &allow, None)
        .await
        .expect("register");
    let change = next_change(&mut rx).await;
    assert_eq!(
        change,
        Change {
            kind: ChangeKind::Schema,
            subject: Some("feed".into()),
            id: Some(r.id),
            version: Some(1)
        }
    );
    writer
        .register(
            "feed-other",
            &avro("feed-1"),
            Placement::default(),
            &allow,
            None,
        )
        .await
        .expect("register existing content elsewhere");
    let change = next_change(&mut rx).await;
    assert_eq!(
        (change.kind, change.subject.as_deref(), change.id),
        (ChangeKind::Subject, Some("feed-other"), Some(r.id))
    );
    // An idempotent re-registration writes nothing, so nothing is announced; a refused one
    // neither. The next event is the config change.
    writer
        .register("feed", &avro("feed-1"), Placement::default(), &allow, None)
        .await
        .expect("re-register");
    writer
        .set_config(
            Scope::Global,
            &ConfigRecord {
                compatibility: Some("FULL".into()),
                extra: Default::default(),
            },
            None,
        )
        .await
        .expect("config");
    let change = next_change(&mut rx).await;
    assert_eq!((change.kind, change.subject), (ChangeKind::Config, None));
    writer
        .set_mode(Scope::Subject("feed"), "READONLY", None)
        .await
        .expect("mode");
    let change = next_change(&mut rx).await;
    assert_eq!(
        (change.kind, change.subject.as_deref()),
        (ChangeKind::Mode, Some("feed"))
    );
    writer.soft_delete("feed", &[1]).await.expect("soft delete");
    let change = next_change(&mut rx).await;
    assert_eq!(
        (change.kind, change.subject.as_deref(), change.version),
        (ChangeKind::Subject, Some("feed"), Some(1))
    );
    drop((writer, reader));
    db.drop_db().await;
}

/// Contents in families that exclude each other within a subject, plus shared contents that
/// go anywhere.
fn family(content: &str) -> Option<char> {
    content
        .strip_prefix("fam-")
        .and_then(|rest| rest.chars().next())
}

#[derive(Debug)]
struct Exclusive;
impl std::fmt::Display for Exclusive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a version of the other family exists")
    }
}
impl std::error::Error for Exclusive {}

#[derive(Debug, Clone)]
struct Ack {
    subject: String,
    content: String,
    id: i64,
    version: i64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_racing_keep_every_invariant() {
    let Some(db) = fresh_db("two_nodes_racing").await else {
        return;
    };
    let nodes = [
        Arc::new(store_for(&db).await),
        Arc::new(store_for(&db).await),
    ];
    const TASKS: u64 = 16;
    const PER_TASK: u64 = 30;
    let subjects = ["race-0", "race-1", "race-2", "race-3"];
    let contents: Vec<String> = (0..8)
        .map(|k| format!("shared-{k}"))
        .chain((0..4).map(|k| format!("fam-A-{k}")))
        .chain((0..4).map(|k| format!("fam-B-{k}")))
        .collect();

    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let store = nodes[(t % 2) as usize].clone();
        let contents = contents.clone();
        tasks.push(tokio::spawn(async move {
            let mut acks = Vec::new();
            let mut refused = 0u64;
            let mut seed = t
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            for _ in 0..PER_TASK {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let subject = subjects[((seed >> 33) % subjects.len() as u64) as usize];
                let content = &contents[((seed >> 40) % contents.len() as u64) as usize];
                let mine = family(content);
                let guard = move |versions: &[StoredVersion]| -> Result<(), Rejection> {
                    let clash = versions.iter().filter(|v| !v.deleted).any(|v| {
                        let theirs = family(&v.schema.schema);
                        mine.is_some() && theirs.is_some() && theirs != mine
                    });
                    if clash {
                        Err(Rejection::new(Exclusive))
                    } else {
                        Ok(())
                    }
                };
                // Half the tasks register through the group writer, half alone.
                let candidate = avro(content);
                let registered = if t % 2 == 0 {
                    let guard = Arc::new(guard);
                    let placement = Placement::default();
                    store
                        .register_shared(subject, &candidate, placement, guard, None)
                        .await
                } else {
                    store
                        .register(subject, &candidate, Placement::default(), &guard, None)
                        .await
                };
                match registered {
                    Ok(r) => acks.push(Ack {
                        subject: subject.to_string(),
                        content: content.clone(),
                        id: r.id,
                        version: r.version,
                    }),
                    Err(StoreError::Rejected(_)) => refused += 1,
                    Err(other) => panic!("registration failed: {other:?}"),
                }
            }
            (acks, refused)
        }));
    }
    let mut acks = Vec::new();
    let mut refused = 0;
    for task in tasks {
        let (a, r) = task.await.expect("task");
        acks.extend(a);
        refused += r;
    }

    let store = &nodes[0];
    let all = store.all_versions().await.expect("all versions");
    // One id per content, and distinct contents get distinct ids.
    let mut id_of: HashMap<String, i64> = HashMap::new();
    let mut content_of: HashMap<i64, String> = HashMap::new();
    for v in &all {
        let content = v.schema.schema.clone();
        let id = v.schema.id;
        assert_eq!(
            *id_of.entry(content.clone()).or_insert(id),
            id,
            "content '{content}' has two ids"
        );
        assert_eq!(
            *content_of.entry(id).or_insert(content.clone()),
            content,
            "id {id} carries two contents"
        );
    }
    for ack in &acks {
        assert_eq!(
            id_of.get(&ack.content),
            Some(&ack.id),
            "acknowledged id of '{}' differs from the stored one",
            ack.content
        );
    }
    // Versions contiguous from 1 in every subject; no two exclusive families in a subject.
    let mut by_subject: BTreeMap<&str, Vec<&StoredVersion>> = BTreeMap::new();
    for v in &all {
        by_subject.entry(v.subject.as_str()).or_default().push(v);
    }
    for (subject, versions) in &by_subject {
        let numbers: Vec<i64> = versions.iter().map(|v| v.version).collect();
        let expected: Vec<i64> = (1..=versions.len() as i64).collect();
        assert_eq!(
            numbers, expected,
            "versions of '{subject}' are not contiguous"
        );
        let families: BTreeSet<char> = versions
            .iter()
            .filter_map(|v| family(&v.schema.schema))
            .collect();
        assert!(
            families.len() <= 1,
            "subject '{subject}' holds exclusive families {families:?}"
        );
        let distinct: BTreeSet<&str> = versions.iter().map(|v| v.schema.schema.as_str()).collect();
        assert_eq!(
            distinct.len(),
            versions.len(),
            "subject '{subject}' registered one content twice"
        );
    }
    // Every acknowledged registration is present as acknowledged.
    let present: BTreeSet<(&str, i64, i64)> = all
        .iter()
        .map(|v| (v.subject.as_str(), v.version, v.schema.id))
        .collect();
    for ack in &acks {
        assert!(
            present.contains(&(ack.subject.as_str(), ack.version, ack.id)),
            "acknowledged {ack:?} is missing"
        );
    }
    assert_eq!(
        store.max_schema_id().await.expect("max id"),
        content_of.len() as i64,
        "ids were allocated without gaps"
    );
    println!(
        "postgres race: {} registrations on 2 nodes ({} acknowledged, {} refused by the guard); \
         checked {} versions in {} subjects, {} distinct contents with {} ids",
        TASKS * PER_TASK,
        acks.len(),
        refused,
        all.len(),
        by_subject.len(),
        id_of.len(),
        content_of.len()
    );
    assert!(refused > 0, "the race exercised the guard");
    drop(nodes);
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imports_racing_new_ids_never_share_an_id() {
    let Some(db) = fresh_db("imports_racing").await else {
        return;
    };
    let a = Arc::new(store_for(&db).await);
    let b = Arc::new(store_for(&db).await);
    let allow = |_: &[StoredVersion]| Ok(());
    // Node A imports ids 1..=20 while node B allocates new ids for other contents.
    let importer = {
        let a = a.clone();
        tokio::spawn(async move {
            let mut outcomes = Vec::new();
            for id in 1..=20i64 {
                let placement = Placement {
                    id: Some(id),
                    version: None,
                    dedupe: covenant_store::Dedupe::Never,
                };
                let r = a
                    .register(
                        "imported",
                        &avro(&format!("imp-{id}")),
                        placement,
                        &allow,
                        None,
                    )
                    .await;
                outcomes.push((id, r));
            }
            outcomes
        })
    };
    let allocator = {
        let b = b.clone();
        tokio::spawn(async move {
            let mut ids = Vec::new();
            for k in 0..20 {
                let r = b
                    .register(
                        "fresh",
                        &avro(&format!("new-{k}")),
                        Placement::default(),
                        &allow,
                        None,
                    )
                    .await
                    .expect("new id");
                ids.push(r.id);
            }
            ids
        })
    };
    let imported = importer.await.expect("importer");
    let fresh = allocator.await.expect("allocator");
    let mut conflicts = 0;
    let mut taken = BTreeSet::new();
    for (id, outcome) in &imported {
        match outcome {
            Ok(r) => {
                assert_eq!(r.id, *id);
                assert!(taken.insert(r.id), "id {id} handed out twice");
            }
            Err(StoreError::IdConflict { id: got }) => {
                assert_eq!(got, id);
                conflicts += 1;
            }
            Err(other) => panic!("import failed: {other:?}"),
        }
    }
    for id in &fresh {
        assert!(taken.insert(*id), "id {id} handed out twice");
    }
    for id in &taken {
        let record = a.schema_by_id(*id).await.expect("by id").expect("present");
        let expected_prefix = if imported.iter().any(|(i, r)| i == id && r.is_ok()) {
            "imp-"
        } else {
            "new-"
        };
        assert!(record.schema.starts_with(expected_prefix));
    }
    println!(
        "postgres import race: {} imported, {} import conflicts, {} new ids, {} distinct ids",
        imported.len() - conflicts,
        conflicts,
        fresh.len(),
        taken.len()
    );
    drop((a, b));
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_change_feed_reconnects_and_asks_for_a_resync() {
    let Some(db) = fresh_db("feed_reconnect").await else {
        return;
    };
    let writer = store_for(&db).await;
    let reader = store_for(&db).await;
    let mut rx = reader.subscribe_changes();
    wait_listening(&reader).await;
    // The resync of the first connection may still be queued: only one after the
    // termination below proves a reconnection.
    tokio::time::sleep(Duration::from_millis(100)).await;
    while rx.try_recv().is_ok() {}
    let (admin, conn) = tokio_postgres::connect(&db.url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    let driver = tokio::spawn(conn);
    let killed = admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE application_name = $1 AND datname = current_database()",
            &[&covenant_store::postgres::FEED_APPLICATION_NAME],
        )
        .await
        .expect("terminate the listeners");
    assert_eq!(killed.len(), 2, "both stores hold one listening connection");
    let started = std::time::Instant::now();
    loop {
        let change = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("a resync arrives within 10 s")
            .expect("feed open");
        if change.kind == ChangeKind::Resync {
            break;
        }
    }
    println!(
        "change feed: resync {} ms after its connection was terminated",
        started.elapsed().as_millis()
    );
    assert!(reader.is_listening());
    // Pooled connections dropped by the server are replaced rather than handed out.
    writer.ping().await.expect("ping");
    let killed = admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE application_name = 'covenant' AND datname = current_database()",
            &[],
        )
        .await
        .expect("terminate pooled connections");
    assert!(!killed.is_empty());
    tokio::time::sleep(Duration::from_millis(200)).await;
    writer
        .ping()
        .await
        .expect("ping after the pool lost its connections");
    let allow = |_: &[StoredVersion]| Ok(());
    let r = writer
        .register(
            "after-reconnect",
            &avro("rc-1"),
            Placement::default(),
            &allow,
            None,
        )
        .await
        .expect("register");
    let change = next_change(&mut rx).await;
    assert_eq!((change.kind, change.id), (ChangeKind::Schema, Some(r.id)));
    drop(admin);
    let _ = driver.await;
    drop((writer, reader));
    db.drop_db().await;
}

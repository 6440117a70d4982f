//! The shared store conformance suite against the SQLite backend, plus what only SQLite has
//! (migrations, reopening the same file).

use covenant_store::{Placement, SqliteStore, Store, conformance};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_passes_the_conformance_suite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path()).expect("open");
    conformance::run_all(&store).await;
}

#[tokio::test]
async fn sqlite_works_on_a_current_thread_runtime() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path()).expect("open");
    conformance::ids_and_dedupe(&store).await;
}

#[tokio::test]
async fn migrations_apply_once_and_data_survives_reopen() {
    let dir = tempfile::tempdir().expect("temp dir");
    let allow = |_: &[covenant_store::StoredVersion]| Ok(());
    let id = {
        let store = SqliteStore::open(dir.path()).expect("open");
        assert_eq!(
            store.applied_migrations().expect("migrations"),
            vec![1, 2, 3, 4, 5]
        );
        let schema = covenant_store::NewSchema {
            schema_type: "AVRO".into(),
            schema: "\"string\"".into(),
            references: vec![],
            metadata: None,
            rule_set: None,
            content_key: "k".into(),
        };
        store
            .register("s", &schema, Placement::default(), &allow, None)
            .await
            .expect("register")
            .id
    };
    let store = SqliteStore::open(dir.path()).expect("reopen");
    assert_eq!(
        store.applied_migrations().expect("migrations"),
        vec![1, 2, 3, 4, 5]
    );
    let record = store
        .schema_by_id(id)
        .await
        .expect("read")
        .expect("present");
    assert_eq!(record.schema, "\"string\"");
}

#[tokio::test]
async fn rows_written_before_guids_get_one_on_reopen() {
    let dir = tempfile::tempdir().expect("temp dir");
    let allow = |_: &[covenant_store::StoredVersion]| Ok(());
    let (id, guid) = {
        let store = SqliteStore::open(dir.path()).expect("open");
        let schema = covenant_store::NewSchema {
            schema_type: "AVRO".into(),
            schema: "\"long\"".into(),
            references: vec![],
            metadata: None,
            rule_set: None,
            content_key: "k".into(),
        };
        let id = store
            .register("s", &schema, Placement::default(), &allow, None)
            .await
            .expect("register")
            .id;
        (id, schema.guid())
    };
    let conn = rusqlite::Connection::open(dir.path().join("covenant.sqlite3")).expect("file");
    conn.execute("UPDATE schemas SET guid = NULL", [])
        .expect("forget guids");
    drop(conn);
    let store = SqliteStore::open(dir.path()).expect("reopen");
    assert_eq!(
        store.schema_ids_by_guid(&guid).await.expect("by guid"),
        vec![id]
    );
}

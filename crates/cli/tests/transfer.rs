//! `covenant export` / `covenant import` through the binary: embedded store to PostgreSQL and
//! back, with ids, versions, soft deletes, references, config and modes compared at each hop.
//! The PostgreSQL hops run when `COVENANT_TEST_POSTGRES` holds an admin URL.

mod support;

use covenant_store::{
    ConfigRecord, NewSchema, Placement, Rejection, SchemaRef, Scope, SqliteStore, Store,
    StoredVersion,
};
use std::path::Path;
use std::process::Command;
use support::TestDb;

fn allow(_: &[StoredVersion]) -> Result<(), Rejection> {
    Ok(())
}

fn avro(text: &str) -> NewSchema {
    NewSchema {
        schema_type: "AVRO".into(),
        schema: text.into(),
        references: Vec::new(),
        metadata: None,
        rule_set: None,
        content_key: format!("key:{text}"),
    }
}

async fn populate(store: &dyn Store) {
    for text in ["a1", "a2", "a3"] {
        store
            .register("alpha", &avro(text), Placement::default(), &allow, None)
            .await
            .expect("register");
    }
    let mut user = avro("b1");
    user.references = vec![SchemaRef {
        name: "A".into(),
        subject: "alpha".into(),
        version: 1,
    }];
    user.metadata = Some(serde_json::json!({"properties": {"owner": "team"}}));
    user.rule_set = Some(serde_json::json!({"domainRules": []}));
    store
        .register("beta", &user, Placement::default(), &allow, None)
        .await
        .expect("register");
    store
        .register("beta", &avro("a2"), Placement::default(), &allow, None)
        .await
        .expect("shared id");
    store.soft_delete("alpha", &[2]).await.expect("soft delete");
    store
        .register("gone", &avro("g1"), Placement::default(), &allow, None)
        .await
        .expect("register");
    store.hard_delete("gone", &[1]).await.expect("hard delete");
    let mut extra = serde_json::Map::new();
    extra.insert("normalize".into(), serde_json::Value::Bool(true));
    store
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
    store
        .set_config(
            Scope::Subject("beta"),
            &ConfigRecord {
                compatibility: Some("NONE".into()),
                extra,
            },
            None,
        )
        .await
        .expect("config");
    store
        .set_mode(Scope::Global, "READWRITE", None)
        .await
        .expect("mode");
    store
        .set_mode(Scope::Subject("alpha"), "READONLY", None)
        .await
        .expect("mode");
}

fn covenant(args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_covenant"))
        .args(args)
        .output()
        .expect("run covenant");
    assert!(
        out.status.success(),
        "covenant {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The dump without what may differ between stores: export time and creation times.
fn comparable(json: &[u8]) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_slice(json).expect("dump is JSON");
    if let Some(o) = v.as_object_mut() {
        o.remove("exportedAt");
    }
    if let Some(subjects) = v.get_mut("subjects").and_then(|s| s.as_array_mut()) {
        for s in subjects {
            if let Some(versions) = s.get_mut("versions").and_then(|v| v.as_array_mut()) {
                for version in versions {
                    if let Some(o) = version.as_object_mut() {
                        o.remove("createdAt");
                    }
                }
            }
        }
    }
    v
}

fn export_dir(dir: &Path) -> Vec<u8> {
    covenant(&["export", "--data-dir", &dir.display().to_string()]).stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_import_round_trip_between_embedded_and_postgres() {
    let src = tempfile::tempdir().expect("dir");
    {
        let store = SqliteStore::open(src.path()).expect("open");
        populate(&store).await;
    }
    let first = export_dir(src.path());
    let dump_path = src.path().join("dump.json");
    std::fs::write(&dump_path, &first).expect("write dump");
    let expected = comparable(&first);
    let versions = expected["subjects"]
        .as_array()
        .map(|s| {
            s.iter()
                .map(|s| s["versions"].as_array().map_or(0, Vec::len))
                .sum::<usize>()
        })
        .unwrap_or(0);
    assert_eq!(versions, 5, "alpha 1-3 and beta 1-2 exported, gone not");

    let mut hops = vec!["embedded"];
    let final_dump = match TestDb::create("covenant_transfer").await {
        Some(db) => {
            let url = db.url.clone();
            covenant(&["import", "--store", &url, &dump_path.display().to_string()]);
            let from_pg = covenant(&["export", "--store", &url]).stdout;
            assert_eq!(comparable(&from_pg), expected, "embedded -> PostgreSQL");
            hops.push("postgres");
            // A second import into the same database changes nothing.
            covenant(&["import", "--store", &url, &dump_path.display().to_string()]);
            let pg_path = src.path().join("from-pg.json");
            std::fs::write(&pg_path, &from_pg).expect("write dump");
            let back = tempfile::tempdir().expect("dir");
            covenant(&[
                "import",
                "--data-dir",
                &back.path().display().to_string(),
                &pg_path.display().to_string(),
            ]);
            hops.push("embedded");
            let store = covenant_store::PostgresStore::connect(&url)
                .await
                .expect("connect");
            let next = store
                .register("alpha", &avro("a4"), Placement::default(), &allow, None)
                .await
                .expect("register after import");
            assert_eq!(
                (next.id, next.version),
                (5, 4),
                "allocation continues after the imported ids and versions"
            );
            drop(store);
            db.drop_db().await;
            export_dir(back.path())
        }
        None => {
            eprintln!(
                "COVENANT_TEST_POSTGRES is not set; round trip through the embedded store only"
            );
            let back = tempfile::tempdir().expect("dir");
            covenant(&[
                "import",
                "--data-dir",
                &back.path().display().to_string(),
                &dump_path.display().to_string(),
            ]);
            hops.push("embedded");
            export_dir(back.path())
        }
    };
    assert_eq!(comparable(&final_dump), expected, "after the round trip");
    println!(
        "transfer round trip {}: {} schemas, {} versions, {} configs, {} modes identical",
        hops.join(" -> "),
        expected["schemas"].as_array().map_or(0, Vec::len),
        versions,
        expected["configs"].as_array().map_or(0, Vec::len),
        expected["modes"].as_array().map_or(0, Vec::len)
    );
}

#[test]
fn import_refuses_a_file_that_is_not_a_dump() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("bad.json");
    std::fs::write(
        &path,
        r#"{"format":"something-else","formatVersion":1,"schemas":[],"subjects":[]}"#,
    )
    .expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_covenant"))
        .args([
            "import",
            "--data-dir",
            &dir.path().join("store").display().to_string(),
            &path.display().to_string(),
        ])
        .output()
        .expect("run covenant");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not a covenant export"), "{stderr}");
}

//! `covenant export` and `import` carry the DEK Registry's keys (format 4): KEKs and DEKs,
//! soft-deleted ones included, as they were stored, from the embedded store to another one
//! and (with `COVENANT_TEST_POSTGRES`) through PostgreSQL; a second import writes nothing and
//! a key held with other content is reported, never overwritten.

use crate::support;

use covenant_store::SqliteStore;
use covenant_store::deks::{Dek, DekStore, Kek, KeyWrite};
use covenant_store::deks_sqlite::SqliteDekStore;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use support::{covenant, s};

fn kek(name: &str, deleted: bool) -> Kek {
    Kek {
        name: name.into(),
        kms_type: "aws-kms".into(),
        kms_key_id: format!("arn:aws:kms:eu-west-1:1:key/{name}"),
        kms_props: BTreeMap::from([("region".to_string(), "eu-west-1".to_string())]),
        doc: Some("orders PII".into()),
        shared: false,
        ts: 1_764_515_000_000,
        deleted,
    }
}

fn dek(kek: &str, version: i64, deleted: bool) -> Dek {
    Dek {
        kek_name: kek.into(),
        subject: "orders-value".into(),
        version,
        algorithm: "AES256_GCM".into(),
        encrypted_key_material: Some(format!("ZW5jcnlwdGVk{version}")),
        key_material: None,
        ts: 1_764_515_000_000 + version,
        deleted,
    }
}

fn export(args: &[&str]) -> Value {
    let out = covenant(&[&["export"], args].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a dump")
}

fn import(args: &[&str], dump: &Path) -> std::process::Output {
    covenant(&[&["import"], args, &[s(dump)]].concat())
}

fn keys(dump: &Value) -> (Value, Value) {
    (dump["keks"].clone(), dump["deks"].clone())
}

#[test]
fn keys_move_between_stores_as_they_were() {
    let dir = tempfile::tempdir().expect("dir");
    let src = dir.path().join("src");
    {
        let store = SqliteStore::open(&src).expect("open");
        let keys = SqliteDekStore::open(store.path()).expect("keys");
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        runtime.block_on(async {
            for k in [kek("orders_kek", false), kek("old_kek", true)] {
                assert_eq!(
                    keys.insert_kek(&k, None).await.expect("kek"),
                    KeyWrite::Done
                );
            }
            for d in [dek("orders_kek", 1, false), dek("orders_kek", 2, true)] {
                assert_eq!(
                    keys.insert_dek(&d, None).await.expect("dek"),
                    KeyWrite::Done
                );
            }
        });
    }
    let first = export(&["--data-dir", s(&src)]);
    assert_eq!(first["formatVersion"], 4);
    assert_eq!(first["keks"].as_array().map(Vec::len), Some(2), "{first}");
    assert_eq!(first["deks"].as_array().map(Vec::len), Some(2), "{first}");
    assert_eq!(first["deks"][1]["deleted"], true);
    assert_eq!(first["deks"][0]["encryptedKeyMaterial"], "ZW5jcnlwdGVk1");
    assert_eq!(first["keks"][1]["kmsProps"]["region"], "eu-west-1");
    let dump_path = dir.path().join("dump.json");
    std::fs::write(&dump_path, first.to_string()).expect("write");

    let dst = dir.path().join("dst");
    let out = import(&["--data-dir", s(&dst)], &dump_path);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("4 DEK Registry keys"), "{stderr}");
    assert_eq!(keys(&export(&["--data-dir", s(&dst)])), keys(&first));
    let again = import(&["--data-dir", s(&dst)], &dump_path);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{stderr}");
    assert!(
        stderr.contains("0 DEK Registry keys"),
        "a second import writes nothing: {stderr}"
    );

    // Through a database of its own: the server's tests share the one the variable names.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    if let Some(db) = runtime.block_on(support::TestDb::create("covenant_dek_transfer")) {
        let url = db.url.clone();
        let out = import(&["--store", &url], &dump_path);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            keys(&export(&["--store", &url])),
            keys(&first),
            "through PostgreSQL"
        );
        runtime.block_on(db.drop_db());
    }

    // A DEK held with other key material is reported and left alone.
    let mut changed = first.clone();
    changed["deks"][0]["encryptedKeyMaterial"] = "b3RoZXI=".into();
    let changed_path = dir.path().join("changed.json");
    std::fs::write(&changed_path, changed.to_string()).expect("write");
    let out = import(&["--data-dir", s(&dst)], &changed_path);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("DEK of subject 'orders-value' under KEK 'orders_kek' (version 1, AES256_GCM) already exists with other content"),
        "{stderr}"
    );
    assert_eq!(keys(&export(&["--data-dir", s(&dst)])), keys(&first));
}

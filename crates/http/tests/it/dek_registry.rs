//! Confluent's DEK Registry (`/dek-registry/v1`) through the real router on a SQLite store:
//! the calls Confluent's clients make (with their query spellings), Confluent's error codes,
//! the refusal of shared KEKs, and the audit entries of every write (which never carry key
//! material).

use crate::common;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::Answer;
use covenant_http::{HttpConfig, router};
use covenant_registry::Registry;
use covenant_store::SqliteStore;
use covenant_store::deks_sqlite::SqliteDekStore;
use serde_json::{Value, json};
use std::sync::Arc;
use tower::ServiceExt;

/// A registry with its DEK Registry, on a store in a temporary directory.
struct App {
    router: Router,
    _dir: tempfile::TempDir,
}

impl App {
    async fn send(&self, method: &str, uri: &str, body: Option<&str>) -> Answer {
        let mut req = Request::builder().method(method).uri(uri);
        if body.is_some() {
            req = req.header("content-type", "application/vnd.schemaregistry.v1+json");
        }
        let req = req
            .body(
                body.map(|b| Body::from(b.to_string()))
                    .unwrap_or_else(Body::empty),
            )
            .expect("request");
        let res = self.router.clone().oneshot(req).await.expect("infallible");
        let status = res.status();
        let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
            .await
            .expect("body");
        Answer {
            status,
            content_type: String::new(),
            text: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    async fn get(&self, uri: &str) -> Answer {
        self.send("GET", uri, None).await
    }

    async fn delete(&self, uri: &str) -> Answer {
        self.send("DELETE", uri, None).await
    }
}

const KEKS: &str = "/dek-registry/v1/keks";
const MATERIAL: &str = "c2VjcmV0LWtleS1tYXRlcmlhbA==";

fn app() -> App {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path()).expect("store");
    let keys = SqliteDekStore::open(store.path()).expect("key store");
    let registry = Arc::new(Registry::new(Arc::new(store)).with_deks(Arc::new(keys)));
    App {
        router: router(registry, HttpConfig::default()),
        _dir: dir,
    }
}

async fn post(app: &App, uri: &str, body: Value) -> Answer {
    app.send("POST", uri, Some(&body.to_string())).await
}

fn assert_error(a: &Answer, status: u16, code: i64) {
    assert_eq!(a.status.as_u16(), status, "{}", a.text);
    assert_eq!(a.code(), code, "{}", a.text);
}

#[tokio::test]
async fn a_client_creates_and_reads_its_keys_as_confluent_serves_them() {
    let app = app();
    // What the Python client's encryption executor does first: the KEK, then version 1 of
    // the subject's DEK, each created on 404 (its query booleans are spelled `False`).
    let a = app.get(&format!("{KEKS}/orders_kek?deleted=False")).await;
    assert_error(&a, 404, 40470);
    assert_eq!(a.json()["message"], "Key 'orders_kek' not found");
    let kek =
        json!({"name": "orders_kek", "kmsType": "local-kms", "kmsKeyId": "mykey", "shared": false});
    let a = post(&app, KEKS, kek.clone()).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    let created = a.json();
    assert_eq!(created["name"], "orders_kek");
    assert_eq!(created["kmsType"], "local-kms");
    assert_eq!(created["kmsKeyId"], "mykey");
    assert_eq!(created["shared"], false);
    assert_eq!(created["deleted"], false);
    assert!(created["ts"].as_i64().is_some_and(|t| t > 0));
    assert_error(&post(&app, KEKS, kek.clone()).await, 409, 40971);
    let a = app.get(&format!("{KEKS}/orders_kek?deleted=False")).await;
    assert_eq!(a.json(), created);

    let dek_uri = format!("{KEKS}/orders_kek/deks/orders-value");
    let a = app
        .get(&format!(
            "{dek_uri}/versions/1?algorithm=AES256_GCM&deleted=False"
        ))
        .await;
    assert_error(&a, 404, 40470);
    let dek = json!({"subject": "orders-value", "version": 1, "algorithm": "AES256_GCM", "encryptedKeyMaterial": MATERIAL});
    let a = post(&app, &dek_uri, dek.clone()).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    let v1 = a.json();
    assert_eq!(v1["kekName"], "orders_kek");
    assert_eq!(v1["subject"], "orders-value");
    assert_eq!(v1["version"], 1);
    assert_eq!(v1["algorithm"], "AES256_GCM");
    assert_eq!(v1["encryptedKeyMaterial"], MATERIAL);
    assert!(
        v1.get("keyMaterial").is_none(),
        "no key in the clear under a KEK that is not shared"
    );
    assert_error(&post(&app, &dek_uri, dek).await, 409, 40971);
    let a = app
        .get(&format!(
            "{dek_uri}/versions/1?algorithm=AES256_GCM&deleted=False"
        ))
        .await;
    assert_eq!(a.json(), v1);

    // Rotation: a new version; the latest (`-1`, or no version) is it, version 1 stays.
    let a = post(
        &app,
        &dek_uri,
        json!({"subject": "orders-value", "version": 2, "encryptedKeyMaterial": "djI="}),
    )
    .await;
    assert_eq!(a.json()["version"], 2, "{}", a.text);
    assert_eq!(
        app.get(&format!("{dek_uri}/versions/-1")).await.json()["version"],
        2
    );
    assert_eq!(app.get(&dek_uri).await.json()["version"], 2);
    assert_eq!(
        app.get(&format!("{dek_uri}/versions/1")).await.json(),
        v1,
        "old messages stay readable"
    );
    assert_eq!(
        app.get(&format!("{dek_uri}/versions")).await.json(),
        json!([1, 2])
    );
    // Another algorithm is another key.
    assert_error(
        &app.get(&format!("{dek_uri}?algorithm=AES256_SIV")).await,
        404,
        40470,
    );
    // The older route, with the subject only in the body.
    let a = post(
        &app,
        &format!("{KEKS}/orders_kek/deks"),
        json!({"subject": "payments-value", "algorithm": "AES128_GCM", "encryptedKeyMaterial": MATERIAL}),
    )
    .await;
    assert_eq!(a.json()["algorithm"], "AES128_GCM", "{}", a.text);
    assert_eq!(
        app.get(&format!("{KEKS}/orders_kek/deks")).await.json(),
        json!(["orders-value", "payments-value"])
    );
    assert_eq!(app.get(KEKS).await.json(), json!(["orders_kek"]));

    // PUT changes properties and doc, keeps the rest.
    let a = app
        .send(
            "PUT",
            &format!("{KEKS}/orders_kek"),
            Some(&json!({"kmsProps": {"region": "eu"}, "doc": "orders"}).to_string()),
        )
        .await;
    let updated = a.json();
    assert_eq!(updated["kmsProps"], json!({"region": "eu"}), "{}", a.text);
    assert_eq!(updated["doc"], "orders");
    assert_eq!(updated["kmsKeyId"], "mykey");
}

#[tokio::test]
async fn invalid_keys_shared_keks_and_deletes_answer_with_confluents_codes() {
    let app = app();
    for (body, field) in [
        (
            json!({"name": "1bad", "kmsType": "t", "kmsKeyId": "k"}),
            "name",
        ),
        (json!({"name": "k", "kmsType": "t"}), "kmsKeyId"),
        (json!({"name": "k", "kmsKeyId": "k"}), "kmsType"),
    ] {
        let a = post(&app, KEKS, body).await;
        assert_error(&a, 422, 42271);
        assert!(a.text.contains(field), "{field}: {}", a.text);
    }
    // A shared KEK needs a KMS driver in the registry, which Covenant does not have.
    let a = post(
        &app,
        KEKS,
        json!({"name": "k", "kmsType": "aws-kms", "kmsKeyId": "arn", "shared": true}),
    )
    .await;
    assert_error(&a, 422, 42271);
    assert!(a.text.contains("shared"), "{}", a.text);
    assert_error(&app.get(&format!("{KEKS}/k")).await, 404, 40470);
    let a = post(
        &app,
        KEKS,
        json!({"name": "k", "kmsType": "AWS", "kmsKeyId": "arn"}),
    )
    .await;
    assert_eq!(a.json()["kmsType"], "aws-kms", "Confluent's spelling");
    let a = app
        .send(
            "PUT",
            &format!("{KEKS}/k"),
            Some(&json!({"shared": true}).to_string()),
        )
        .await;
    assert_error(&a, 422, 42271);

    let dek_uri = format!("{KEKS}/k/deks/s-value");
    assert_error(
        &post(&app, &dek_uri, json!({"subject": "s-value"})).await,
        422,
        42271,
    );
    assert_error(
        &post(
            &app,
            &dek_uri,
            json!({"algorithm": "DES", "encryptedKeyMaterial": MATERIAL}),
        )
        .await,
        422,
        42271,
    );
    assert_error(
        &post(
            &app,
            &dek_uri,
            json!({"subject": "other-value", "encryptedKeyMaterial": MATERIAL}),
        )
        .await,
        422,
        42271,
    );
    let a = post(&app, &dek_uri, json!({"encryptedKeyMaterial": MATERIAL})).await;
    assert_eq!(a.json()["version"], 1, "version 1 by default: {}", a.text);
    assert_eq!(a.json()["algorithm"], "AES256_GCM");

    // A KEK with a live DEK stays; a permanent delete needs a soft one first.
    assert_error(&app.delete(&format!("{KEKS}/k")).await, 422, 42272);
    assert_error(
        &app.delete(&format!("{dek_uri}?permanent=true")).await,
        404,
        40471,
    );
    assert_eq!(
        app.delete(&format!("{dek_uri}/versions/1")).await.status,
        StatusCode::NO_CONTENT
    );
    assert_error(&app.get(&dek_uri).await, 404, 40470);
    let deleted = app.get(&format!("{dek_uri}?deleted=true")).await.json();
    assert_eq!(deleted["deleted"], true);
    assert_eq!(app.get(&format!("{KEKS}/k/deks")).await.json(), json!([]));
    assert_eq!(
        app.get(&format!("{KEKS}/k/deks?deleted=true")).await.json(),
        json!(["s-value"])
    );
    assert_eq!(
        app.delete(&format!("{KEKS}/k")).await.status,
        StatusCode::NO_CONTENT
    );
    assert_error(&app.get(&format!("{KEKS}/k")).await, 404, 40470);
    assert_eq!(app.get(KEKS).await.json(), json!([]));
    assert_eq!(
        app.get(&format!("{KEKS}?deleted=true")).await.json(),
        json!(["k"])
    );
    // No DEK under a deleted KEK, created or undeleted.
    assert_error(
        &post(
            &app,
            &dek_uri,
            json!({"version": 2, "encryptedKeyMaterial": MATERIAL}),
        )
        .await,
        404,
        40470,
    );
    assert_error(
        &post(&app, &format!("{dek_uri}/undelete"), json!({})).await,
        404,
        40472,
    );
    // DEKs (soft-deleted) still refer to it.
    assert_error(
        &app.delete(&format!("{KEKS}/k?permanent=true")).await,
        422,
        42272,
    );
    assert_eq!(
        app.send("POST", &format!("{KEKS}/k/undelete"), None)
            .await
            .status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        app.send("POST", &format!("{dek_uri}/versions/1/undelete"), None)
            .await
            .status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(app.get(&dek_uri).await.json()["deleted"], false);
    // Soft, then permanent: gone.
    for uri in [
        dek_uri.clone(),
        format!("{dek_uri}?permanent=true"),
        format!("{KEKS}/k"),
        format!("{KEKS}/k?permanent=true"),
    ] {
        assert_eq!(
            app.delete(&uri).await.status,
            StatusCode::NO_CONTENT,
            "{uri}"
        );
    }
    assert_error(
        &app.get(&format!("{KEKS}/k?deleted=true")).await,
        404,
        40470,
    );
    assert_error(&app.delete(&format!("{KEKS}/k")).await, 404, 40470);
}

#[tokio::test]
async fn every_write_is_audited_without_key_material() {
    let app = app();
    post(
        &app,
        KEKS,
        json!({"name": "audited", "kmsType": "local-kms", "kmsKeyId": "k"}),
    )
    .await;
    let dek_uri = format!("{KEKS}/audited/deks/pay-value");
    post(&app, &dek_uri, json!({"encryptedKeyMaterial": MATERIAL})).await;
    // A refused write leaves no entry.
    assert_error(
        &post(&app, &dek_uri, json!({"encryptedKeyMaterial": MATERIAL})).await,
        409,
        40971,
    );
    app.delete(&dek_uri).await;
    let trail = app.get("/covenant/v1/audit").await;
    let entries = trail.json()["entries"].clone();
    let ops: Vec<&str> = entries
        .as_array()
        .unwrap_or_else(|| panic!("entries: {}", trail.text))
        .iter()
        .filter_map(|e| e["operation"].as_str())
        .collect();
    for op in ["kek.create", "dek.create", "dek.delete"] {
        assert_eq!(
            ops.iter().filter(|o| **o == op).count(),
            1,
            "{op} once in {ops:?}"
        );
    }
    let dek_entry = entries
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["operation"] == "dek.create")
        .expect("dek.create");
    assert_eq!(dek_entry["subject"], "pay-value");
    assert!(
        dek_entry["detail"]
            .as_str()
            .is_some_and(|d| d.contains("KEK audited") && d.contains("version 1")),
        "{dek_entry}"
    );
    assert!(!trail.text.contains(MATERIAL), "key material in the trail");
}

#[tokio::test]
async fn without_a_key_store_the_routes_say_the_dek_registry_is_not_enabled() {
    let app = common::app();
    let a = app.get(KEKS).await;
    assert_eq!(a.status.as_u16(), 503, "{}", a.text);
    assert_eq!(a.code(), 50370);
}

fn app_with_max_keys(max_keys: usize) -> App {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path()).expect("store");
    let keys = SqliteDekStore::open(store.path()).expect("key store");
    let registry = Arc::new(
        Registry::new(Arc::new(store))
            .with_deks(Arc::new(keys))
            .with_dek_max_keys(max_keys),
    );
    App {
        router: router(registry, HttpConfig::default()),
        _dir: dir,
    }
}

async fn kek_named(app: &App, name: &str) -> Answer {
    post(
        app,
        KEKS,
        json!({"name": name, "kmsType": "local-kms", "kmsKeyId": "k"}),
    )
    .await
}

async fn dek_for(app: &App, kek: &str, subject: &str, version: i64) -> Answer {
    post(
        app,
        &format!("{KEKS}/{kek}/deks/{subject}"),
        json!({"subject": subject, "version": version, "encryptedKeyMaterial": MATERIAL}),
    )
    .await
}

#[tokio::test]
async fn listings_page_and_filter_by_subject_prefix_as_confluent_does() {
    let app = app();
    for name in ["a_kek", "b_kek", "c_kek"] {
        assert_eq!(kek_named(&app, name).await.status, StatusCode::OK);
    }
    for (kek, subject) in [
        ("a_kek", "orders-value"),
        ("a_kek", "orders-key"),
        ("b_kek", "payments-value"),
    ] {
        assert_eq!(dek_for(&app, kek, subject, 1).await.status, StatusCode::OK);
    }
    for version in 2..=4 {
        assert_eq!(
            dek_for(&app, "a_kek", "orders-value", version).await.status,
            StatusCode::OK
        );
    }
    let names = |uri: &'static str| {
        let app = &app;
        async move { app.get(&format!("{KEKS}{uri}")).await.json() }
    };
    assert_eq!(names("").await, json!(["a_kek", "b_kek", "c_kek"]));
    assert_eq!(names("?offset=1").await, json!(["b_kek", "c_kek"]));
    assert_eq!(names("?offset=1&limit=1").await, json!(["b_kek"]));
    assert_eq!(
        names("?limit=0").await,
        json!(["a_kek", "b_kek", "c_kek"]),
        "0 is all"
    );
    assert_eq!(names("?offset=9").await, json!([]));
    assert_eq!(names("?subjectPrefix=orders").await, json!(["a_kek"]));
    assert_eq!(
        names("?subjectPrefix=payments&subjectPrefix=orders-key").await,
        json!(["a_kek", "b_kek"])
    );
    assert_eq!(names("?subjectPrefix=nothing").await, json!([]));

    let subjects = app
        .get(&format!("{KEKS}/a_kek/deks?offset=1&limit=5"))
        .await
        .json();
    assert_eq!(subjects, json!(["orders-value"]));
    let versions = app
        .get(&format!(
            "{KEKS}/a_kek/deks/orders-value/versions?offset=1&limit=2"
        ))
        .await
        .json();
    assert_eq!(versions, json!([2, 3]));
}

#[tokio::test]
async fn testing_a_kek_answers_what_confluent_answers_for_one_that_is_not_shared() {
    let app = app();
    let a = post(&app, &format!("{KEKS}/missing/test"), json!({})).await;
    assert_error(&a, 404, 40470);
    assert_eq!(kek_named(&app, "held").await.status, StatusCode::OK);
    let a = post(&app, &format!("{KEKS}/held/test"), json!({})).await;
    assert_error(&a, 422, 42271);
    assert!(a.text.contains("shared"), "{}", a.text);
}

#[tokio::test]
async fn one_key_past_the_limit_is_refused_with_40972() {
    let app = app_with_max_keys(2);
    assert_eq!(kek_named(&app, "one").await.status, StatusCode::OK);
    assert_eq!(kek_named(&app, "two").await.status, StatusCode::OK);
    let a = kek_named(&app, "three").await;
    assert_error(&a, 409, 40972);
    assert_eq!(a.json()["message"], "A maximum of 2 keys already exist");
    // DEKs are counted apart from KEKs; versions and soft-deleted ones count.
    assert_eq!(
        dek_for(&app, "one", "s-value", 1).await.status,
        StatusCode::OK
    );
    assert_eq!(
        dek_for(&app, "one", "s-value", 2).await.status,
        StatusCode::OK
    );
    let deleted = app
        .delete(&format!("{KEKS}/one/deks/s-value/versions/2"))
        .await;
    assert!(deleted.status.is_success(), "{}", deleted.text);
    assert_error(&dek_for(&app, "two", "t-value", 1).await, 409, 40972);
    // Nothing was written by the refused requests.
    assert_eq!(
        app.get(&format!("{KEKS}?deleted=true")).await.json(),
        json!(["one", "two"])
    );
    assert_eq!(app.get(&format!("{KEKS}/two/deks")).await.json(), json!([]));
}

/// What Confluent's `rewrap-deks` tool does after the KEK's KMS key was rotated: each DEK is
/// stored again, re-encrypted, with `rewrap=true`.
#[tokio::test]
async fn rewrap_replaces_a_held_deks_material_and_keeps_its_deletion_state() {
    let app = app();
    assert_eq!(kek_named(&app, "k").await.status, StatusCode::OK);
    assert_eq!(
        dek_for(&app, "k", "s-value", 1).await.status,
        StatusCode::OK
    );
    let deleted = app
        .delete(&format!("{KEKS}/k/deks/s-value/versions/1"))
        .await;
    assert!(deleted.status.is_success(), "{}", deleted.text);
    let rewrapped = "cmV3cmFwcGVkLWtleS1tYXRlcmlhbA==";
    let body = json!({"subject": "s-value", "version": 1, "algorithm": "AES256_GCM",
                      "encryptedKeyMaterial": rewrapped, "deleted": true});
    let uri = format!("{KEKS}/k/deks/s-value");
    // Without rewrap a held key is a conflict, and nothing changes.
    assert_error(&post(&app, &uri, body.clone()).await, 409, 40971);
    let held = app
        .get(&format!("{uri}/versions/1?deleted=true"))
        .await
        .json();
    assert_eq!(held["encryptedKeyMaterial"], MATERIAL);

    let a = post(&app, &format!("{uri}?rewrap=true"), body).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    assert_eq!(a.json()["encryptedKeyMaterial"], rewrapped);
    let held = app
        .get(&format!("{uri}/versions/1?deleted=true"))
        .await
        .json();
    assert_eq!(held["encryptedKeyMaterial"], rewrapped);
    assert_eq!(
        held["deleted"], true,
        "still soft-deleted, as the tool sent it"
    );
    assert_error(&app.get(&format!("{uri}/versions/1")).await, 404, 40470);

    // Rewrapping a key that is not held creates it.
    let fresh = json!({"subject": "t-value", "encryptedKeyMaterial": rewrapped});
    let a = post(&app, &format!("{KEKS}/k/deks/t-value?rewrap=true"), fresh).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    assert_eq!(a.json()["version"], 1);
}

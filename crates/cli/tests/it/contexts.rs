//! Schema contexts through a running `covenant serve`, on the embedded store and on
//! PostgreSQL: qualified subjects (`:.ctx:name`) with an id space per context, `GET
//! /contexts`, ids resolved within a context, listings across contexts, config and mode per
//! context and through `:.__GLOBAL:`, the `/contexts/{ctx}/...` URL prefix, references inside
//! and across contexts, and the removal of an empty context.

use crate::support;

use serde_json::{Value, json};
use support::{Serve, TestDb, V1};

const ORDER: &str = r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}"#;
const ORDER_V2_BREAKING: &str = r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"total","type":"double"}]}"#;
const PAYMENT: &str =
    r#"{"type":"record","name":"Payment","fields":[{"name":"amount","type":"double"}]}"#;
const MONEY: &str =
    r#"{"type":"record","name":"Money","namespace":"m","fields":[{"name":"cents","type":"long"}]}"#;
const INVOICE: &str =
    r#"{"type":"record","name":"Invoice","fields":[{"name":"total","type":"m.Money"}]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contexts_on_the_embedded_store() {
    contexts_keep_their_own_ids_and_settings(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contexts_on_postgres() {
    let Some(db) = TestDb::create("covenant_contexts").await else {
        eprintln!("skipped: {} is not set", support::POSTGRES_ENV);
        return;
    };
    contexts_keep_their_own_ids_and_settings(Some(&db.url)).await;
    db.drop_db().await;
}

struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        support::call(&self.http, &self.base, method, path, V1, body).await
    }

    async fn register(&self, subject: &str, body: Value) -> (u16, Value) {
        self.call("POST", &format!("/subjects/{subject}/versions"), Some(body))
            .await
    }

    async fn id_of(&self, subject: &str, schema: &str) -> i64 {
        let (status, answer) = self.register(subject, json!({"schema": schema})).await;
        assert_eq!(status, 200, "{subject}: {answer}");
        answer["id"].as_i64().expect("id")
    }
}

async fn contexts_keep_their_own_ids_and_settings(store: Option<&str>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = Serve::spawn(&dir.path().join("data"), |command| {
        if let Some(url) = store {
            command.args(["--store", url]);
        }
    });
    let c = Client {
        http: covenant_exporter::client::client(),
        base: serve.base.clone(),
    };
    support::wait_ready(&c.http, &c.base).await;

    // One id space per context: each starts at 1, and the same content gets its own id in
    // each context.
    assert_eq!(c.id_of("orders", ORDER).await, 1);
    assert_eq!(c.id_of(":.ctx1:orders", ORDER).await, 1);
    assert_eq!(c.id_of(":.ctx1:payments", PAYMENT).await, 2);
    assert_eq!(c.id_of(":.ctx2:payments", PAYMENT).await, 1);
    assert_eq!(c.id_of("payments-default", PAYMENT).await, 2);
    let (_, contexts) = c.call("GET", "/contexts", None).await;
    assert_eq!(contexts, json!([".", ".ctx1", ".ctx2"]));
    let (_, some) = c.call("GET", "/contexts?contextPrefix=.ctx2", None).await;
    assert_eq!(some, json!([".ctx2"]));

    // Ids resolve in the default context unless `subject` names another.
    let (status, by_id) = c.call("GET", "/schemas/ids/2", None).await;
    assert_eq!(status, 200, "{by_id}");
    assert!(by_id["schema"].as_str().unwrap().contains("Payment"));
    let (status, missing) = c.call("GET", "/schemas/ids/3", None).await;
    assert_eq!((status, &missing["error_code"]), (404, &json!(40403)));
    let (status, in_ctx) = c.call("GET", "/schemas/ids/2?subject=:.ctx1:", None).await;
    assert_eq!(status, 200, "{in_ctx}");
    assert!(in_ctx["schema"].as_str().unwrap().contains("Payment"));
    let (status, named) = c
        .call("GET", "/schemas/ids/2?subject=:.ctx1:payments", None)
        .await;
    assert_eq!(
        (status, &named["subject"], &named["version"]),
        (200, &json!(":.ctx1:payments"), &json!(1))
    );
    let (status, _) = c
        .call("GET", "/schemas/ids/2?subject=:.ctx1:orders", None)
        .await;
    assert_eq!(status, 404, "an id the named subject does not use");
    let (status, _) = c
        .call("GET", "/schemas/ids/1?subject=:.nowhere:", None)
        .await;
    assert_eq!(status, 404);
    // An unqualified subject not in the default context is looked up in the others.
    let (_, found) = c
        .call("GET", "/schemas/ids/1/versions?subject=payments", None)
        .await;
    assert_eq!(found, json!([{"subject": ":.ctx2:payments", "version": 1}]));
    let (_, usages) = c
        .call("GET", "/schemas/ids/1/versions?subject=:.ctx1:", None)
        .await;
    assert_eq!(usages, json!([{"subject": ":.ctx1:orders", "version": 1}]));

    // Listings: every context by default, one context or the default one on request.
    let (_, all) = c.call("GET", "/subjects", None).await;
    assert_eq!(
        all,
        json!([
            ":.ctx1:orders",
            ":.ctx1:payments",
            ":.ctx2:payments",
            "orders",
            "payments-default"
        ])
    );
    let (_, one) = c.call("GET", "/subjects?subjectPrefix=:.ctx1:", None).await;
    assert_eq!(one, json!([":.ctx1:orders", ":.ctx1:payments"]));
    let (_, default_only) = c.call("GET", "/subjects?subjectPrefix=", None).await;
    assert_eq!(default_only, json!(["orders", "payments-default"]));
    let (_, anywhere) = c.call("GET", "/subjects?subjectPrefix=:*:pay", None).await;
    assert_eq!(
        anywhere,
        json!([":.ctx1:payments", ":.ctx2:payments", "payments-default"])
    );
    let (_, schemas) = c.call("GET", "/schemas?subjectPrefix=:*:", None).await;
    assert_eq!(schemas.as_array().map(Vec::len), Some(5), "{schemas}");
    let (_, ctx_schemas) = c.call("GET", "/schemas?subjectPrefix=:.ctx2:", None).await;
    assert_eq!(ctx_schemas[0]["id"], json!(1), "{ctx_schemas}");

    // Config per context: NONE on .ctx1 lets its subjects change freely, not the default's.
    let (status, _) = c
        .call(
            "PUT",
            "/config/:.ctx1:",
            Some(json!({"compatibility": "NONE"})),
        )
        .await;
    assert_eq!(status, 200);
    let (_, level) = c.call("GET", "/config/:.ctx1:", None).await;
    assert_eq!(level["compatibilityLevel"], "NONE");
    let (status, refused) = c
        .register("orders", json!({"schema": ORDER_V2_BREAKING}))
        .await;
    assert_eq!(status, 409, "{refused}");
    let (status, accepted) = c
        .register(":.ctx1:orders", json!({"schema": ORDER_V2_BREAKING}))
        .await;
    assert_eq!((status, &accepted["id"]), (200, &json!(3)), "{accepted}");
    let (_, inherited) = c
        .call("GET", "/config/:.ctx1:orders?defaultToGlobal=true", None)
        .await;
    assert_eq!(inherited["compatibilityLevel"], "NONE");
    // `:.__GLOBAL:` reaches every context without a setting of its own.
    let (status, refused) = c.register(":.ctx2:orders", json!({"schema": ORDER})).await;
    assert_eq!(status, 200, "{refused}");
    let (status, refused) = c
        .register(":.ctx2:orders", json!({"schema": ORDER_V2_BREAKING}))
        .await;
    assert_eq!(status, 409, "{refused}");
    let (status, _) = c
        .call(
            "PUT",
            "/config/:.__GLOBAL:",
            Some(json!({"compatibility": "NONE"})),
        )
        .await;
    assert_eq!(status, 200);
    let (status, accepted) = c
        .register(":.ctx2:orders", json!({"schema": ORDER_V2_BREAKING}))
        .await;
    assert_eq!(status, 200, "{accepted}");
    let (_, level) = c
        .call("GET", "/config/:.ctx2:orders?defaultToGlobal=true", None)
        .await;
    assert_eq!(level["compatibilityLevel"], "NONE");
    let (status, _) = c.call("DELETE", "/config/:.__GLOBAL:", None).await;
    assert_eq!(status, 200);

    // Mode per context.
    let (status, _) = c
        .call("PUT", "/mode/:.ctx2:", Some(json!({"mode": "READONLY"})))
        .await;
    assert_eq!(status, 200);
    let (status, read_only) = c.register(":.ctx2:new", json!({"schema": PAYMENT})).await;
    assert_eq!(
        (status, &read_only["error_code"]),
        (422, &json!(42205)),
        "{read_only}"
    );
    assert!(
        read_only["message"]
            .as_str()
            .unwrap()
            .contains("context .ctx2")
    );
    assert_eq!(c.id_of("new-in-default", MONEY).await, 3);
    let (status, _) = c.call("DELETE", "/mode/:.ctx2:", None).await;
    assert_eq!(status, 200);

    // The URL prefix folds the context into the subject.
    let (status, registered) = c
        .call(
            "POST",
            "/contexts/.ctx3/subjects/s/versions",
            Some(json!({"schema": ORDER})),
        )
        .await;
    assert_eq!(
        (status, &registered["id"]),
        (200, &json!(1)),
        "{registered}"
    );
    let (_, version) = c.call("GET", "/subjects/:.ctx3:s/versions/1", None).await;
    assert_eq!(version["subject"], ":.ctx3:s");
    let (status, by_prefix) = c.call("GET", "/contexts/.ctx3/schemas/ids/1", None).await;
    assert_eq!(status, 200, "{by_prefix}");
    let (_, listed) = c.call("GET", "/contexts/.ctx3/subjects", None).await;
    assert_eq!(listed, json!([":.ctx3:s"]));

    // References: an unqualified one names a subject of the referrer's context.
    assert_eq!(c.id_of(":.ctx1:money", MONEY).await, 4);
    let (status, invoice) = c
        .register(
            ":.ctx1:invoice",
            json!({"schema": INVOICE,
                   "references": [{"name": "m.Money", "subject": "money", "version": 1}]}),
        )
        .await;
    assert_eq!((status, &invoice["id"]), (200, &json!(5)), "{invoice}");
    let (_, referrers) = c
        .call(
            "GET",
            "/subjects/:.ctx1:money/versions/1/referencedby",
            None,
        )
        .await;
    assert_eq!(referrers, json!([5]));
    let (status, unresolved) = c
        .register(
            "invoice",
            json!({"schema": INVOICE,
                   "references": [{"name": "m.Money", "subject": "money", "version": 1}]}),
        )
        .await;
    assert_eq!(
        status, 422,
        "the default context has no 'money': {unresolved}"
    );
    let (status, across) = c
        .register(
            ":.ctx2:invoice",
            json!({"schema": INVOICE,
                   "references": [{"name": "m.Money", "subject": ":.ctx1:money", "version": 1}]}),
        )
        .await;
    assert_eq!(status, 200, "{across}");
    let (status, read_back) = c
        .call(
            "GET",
            &format!("/schemas/ids/{}?subject=:.ctx2:invoice", across["id"]),
            None,
        )
        .await;
    assert_eq!(status, 200, "{read_back}");
    assert_eq!(read_back["references"][0]["subject"], ":.ctx1:money");

    // guids name the context of each id.
    let guid = by_id["guid"].as_str().expect("guid").to_string();
    let (_, ids) = c
        .call("GET", &format!("/schemas/guids/{guid}/ids"), None)
        .await;
    let mut ids = ids.as_array().cloned().unwrap_or_default();
    ids.sort_by_key(|v| v["context"].as_str().map(str::to_string));
    assert_eq!(
        ids,
        vec![
            json!({"context": ".", "id": 2}),
            json!({"context": ".ctx1", "id": 2}),
            json!({"context": ".ctx2", "id": 1}),
        ]
    );

    // A context goes only once it is empty, soft-deleted subjects included.
    let (status, not_empty) = c.call("DELETE", "/contexts/.ctx3", None).await;
    assert_eq!((status, &not_empty["error_code"]), (422, &json!(42211)));
    assert_eq!(
        not_empty["message"],
        "The specified context ':.ctx3:' is not empty."
    );
    let (status, _) = c.call("DELETE", "/subjects/:.ctx3:s", None).await;
    assert_eq!(status, 200);
    let (status, _) = c.call("DELETE", "/contexts/:.ctx3:", None).await;
    assert_eq!(
        status, 422,
        "a soft-deleted subject still holds its context"
    );
    let (status, _) = c
        .call("DELETE", "/subjects/:.ctx3:s?permanent=true", None)
        .await;
    assert_eq!(status, 200);
    let (status, _) = c.call("DELETE", "/contexts/ctx3", None).await;
    assert_eq!(status, 204);
    let (_, contexts) = c.call("GET", "/contexts", None).await;
    assert_eq!(contexts, json!([".", ".ctx1", ".ctx2"]));
    // A context made again starts its ids afresh.
    let (_, again) = c.register(":.ctx3:s", json!({"schema": PAYMENT})).await;
    assert_eq!(again["id"], json!(1), "{again}");

    // Names that cannot be contexts or subjects.
    let (status, _) = c.register(":*:wild", json!({"schema": ORDER})).await;
    assert_eq!(status, 422);
    let (status, _) = c.register(":.__GLOBAL:x", json!({"schema": ORDER})).await;
    assert_eq!(status, 422);
    let (status, default) = c.call("DELETE", "/contexts/:.:", None).await;
    assert_eq!(
        (status, &default["error_code"]),
        (422, &json!(42205)),
        "{default}"
    );
}

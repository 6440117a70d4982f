//! Subject aliases through a running `covenant serve`: a subject whose config names an
//! `alias` answers reads and lookups from the target subject.

use crate::support;

use serde_json::{Value, json};
use support::{Serve, V1};

const ORDER: &str = r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}"#;

async fn call(serve: &Serve, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let client = covenant_exporter::client::client();
    support::call(&client, &serve.base, method, path, V1, body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_and_lookups_of_an_alias_resolve_to_its_target() {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = Serve::spawn(&dir.path().join("data"), |_| {});
    support::wait_ready(&covenant_exporter::client::client(), &serve.base).await;
    let body = Some(json!({"schema": ORDER}));
    let (status, registered) =
        call(&serve, "POST", "/subjects/orders/versions", body.clone()).await;
    assert_eq!(status, 200, "{registered}");

    let (status, missing) = call(&serve, "GET", "/subjects/orders-alias/versions", None).await;
    assert_eq!((status, &missing["error_code"]), (404, &json!(40401)));

    let (status, set) = call(
        &serve,
        "PUT",
        "/config/orders-alias",
        Some(json!({"alias": "orders"})),
    )
    .await;
    assert_eq!(status, 200, "{set}");

    let (status, versions) = call(&serve, "GET", "/subjects/orders-alias/versions", None).await;
    assert_eq!((status, versions), (200, json!([1])));
    let (status, v) = call(
        &serve,
        "GET",
        "/subjects/orders-alias/versions/latest",
        None,
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        (&v["subject"], &v["id"]),
        (&json!("orders"), &registered["id"])
    );
    let (status, text) = call(
        &serve,
        "GET",
        "/subjects/orders-alias/versions/1/schema",
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(text["name"], "Order", "{text}");
    let (status, found) = call(&serve, "POST", "/subjects/orders-alias", body).await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(
        (&found["subject"], &found["version"]),
        (&json!("orders"), &json!(1))
    );

    // `GET /schemas?aliases=true` lists each version with the subjects aliasing it, and the
    // versions of subjects aliased from under the prefix.
    let (_, plain) = call(&serve, "GET", "/schemas", None).await;
    assert_eq!(plain[0].get("aliases"), None, "{plain}");
    let (status, with_aliases) = call(&serve, "GET", "/schemas?aliases=true", None).await;
    assert_eq!(status, 200);
    assert_eq!(with_aliases[0]["subject"], "orders");
    assert_eq!(
        with_aliases[0]["aliases"],
        json!(["orders-alias"]),
        "{with_aliases}"
    );
    let (_, by_alias_prefix) = call(
        &serve,
        "GET",
        "/schemas?aliases=true&subjectPrefix=orders-al",
        None,
    )
    .await;
    assert_eq!(
        by_alias_prefix
            .as_array()
            .map(|a| a.iter().map(|v| v["subject"].clone()).collect::<Vec<_>>()),
        Some(vec![json!("orders")]),
        "{by_alias_prefix}"
    );
    let (_, none) = call(&serve, "GET", "/schemas?subjectPrefix=orders-al", None).await;
    assert_eq!(none, json!([]));

    // An alias naming its own subject is no alias.
    let (status, _) = call(
        &serve,
        "PUT",
        "/config/loop",
        Some(json!({"alias": "loop"})),
    )
    .await;
    assert_eq!(status, 200);
    let (status, missing) = call(&serve, "GET", "/subjects/loop/versions", None).await;
    assert_eq!((status, &missing["error_code"]), (404, &json!(40401)));
}

fn covenant_auth(args: &[&str], stdin: &str) {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_covenant"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn covenant");
    let mut input = child.stdin.take().expect("stdin");
    input.write_all(stdin.as_bytes()).expect("stdin");
    drop(input);
    assert!(child.wait().expect("wait").success(), "covenant {args:?}");
}

async fn call_as(
    serve: &Serve,
    user: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let client = covenant_exporter::client::client();
    let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
    let mut request = client
        .request(method, format!("{}{path}", serve.base))
        .basic_auth(user, Some(format!("{user}-pass")));
    if let Some(body) = body {
        request = request.header("content-type", V1).body(body.to_string());
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// An alias never opens a subject its caller may not read: it is then not followed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alias_is_followed_only_to_a_readable_subject() {
    let dir = tempfile::tempdir().expect("tempdir");
    let auth = dir.path().join("auth.json");
    let file = auth.to_str().expect("utf-8 path");
    for user in ["admin", "writer"] {
        covenant_auth(
            &["auth", "add-user", file, user, "--password-stdin"],
            &format!("{user}-pass\n"),
        );
    }
    covenant_auth(&["auth", "grant", file, "admin", "Write", "Subject:.*"], "");
    covenant_auth(
        &[
            "auth",
            "grant",
            file,
            "writer",
            "Write",
            "Subject:orders-.*",
        ],
        "",
    );
    let serve = Serve::spawn(&dir.path().join("data"), |c| {
        c.arg("--auth-file").arg(&auth);
    });
    support::wait_ready(&covenant_exporter::client::client(), &serve.base).await;
    let body = Some(json!({"schema": ORDER}));
    for subject in ["secret", "orders-value"] {
        let (status, r) = call_as(
            &serve,
            "admin",
            "POST",
            &format!("/subjects/{subject}/versions"),
            body.clone(),
        )
        .await;
        assert_eq!(status, 200, "{r}");
    }
    for (alias, target) in [("orders-secret", "secret"), ("orders-mine", "orders-value")] {
        let (status, r) = call_as(
            &serve,
            "writer",
            "PUT",
            &format!("/config/{alias}"),
            Some(json!({"alias": target})),
        )
        .await;
        assert_eq!(status, 200, "{r}");
    }
    let (status, r) = call_as(
        &serve,
        "writer",
        "GET",
        "/subjects/orders-mine/versions/1",
        None,
    )
    .await;
    assert_eq!(
        (status, &r["subject"]),
        (200, &json!("orders-value")),
        "{r}"
    );
    let (status, r) = call_as(
        &serve,
        "writer",
        "GET",
        "/subjects/orders-secret/versions/1",
        None,
    )
    .await;
    assert_eq!((status, &r["error_code"]), (404, &json!(40401)), "{r}");
    let (status, r) = call_as(&serve, "writer", "POST", "/subjects/orders-secret", body).await;
    assert_eq!((status, &r["error_code"]), (404, &json!(40401)), "{r}");
    let (status, r) = call_as(
        &serve,
        "admin",
        "GET",
        "/subjects/orders-secret/versions/1",
        None,
    )
    .await;
    assert_eq!((status, &r["subject"]), (200, &json!("secret")), "{r}");
}

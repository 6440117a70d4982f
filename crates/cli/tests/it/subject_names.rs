//! Subject name validation through a running `covenant serve`: Confluent's rules and the
//! documented length limit answered with 42208 on every route that takes a subject, while odd
//! but valid names keep working and stored names stay removable.

use crate::support;

use serde_json::{Value, json};
use std::io::{Read, Write};
use std::time::Duration;
use support::{Serve, V1};

const MAX_SUBJECT_CHARS: usize = 1024;

struct Server {
    serve: Serve,
    client: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn start() -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let serve = Serve::spawn(&dir.path().join("data"), |_| {});
        let client = covenant_exporter::client::client();
        support::wait_ready(&client, &serve.base).await;
        Server {
            serve,
            client,
            _dir: dir,
        }
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        support::call(&self.client, &self.serve.base, method, path, V1, body).await
    }

    /// Sends the path byte for byte: HTTP clients resolve `%2E%2E` as a dot segment.
    fn raw(&self, method: &str, path: &str, body: &str) -> String {
        let mut stream =
            std::net::TcpStream::connect(("127.0.0.1", self.serve.port)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {V1}\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).expect("write");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("read");
        answer
    }
}

fn schema() -> Option<Value> {
    Some(json!({"schema": "\"string\""}))
}

fn assert_invalid(answer: &(u16, Value), subject: &str) {
    assert_eq!(answer.0, 422, "{subject:.40}: {}", answer.1);
    assert_eq!(answer.1["error_code"], 42208, "{}", answer.1);
    assert_eq!(
        answer.1["message"],
        format!("The specified subject '{subject}' is not a valid.")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_subject_names_are_refused_on_every_subject_route() {
    let server = Server::start().await;
    let too_long = "s".repeat(MAX_SUBJECT_CHARS + 1);
    let invalid: [(&str, String); 7] = [
        ("a%0Ab", "a\nb".into()),
        ("a%01", "a\u{1}".into()),
        ("__GLOBAL", "__GLOBAL".into()),
        ("__EMPTY", "__EMPTY".into()),
        (":.ctx:", ":.ctx:".into()),
        (":.__GLOBAL:orders", ":.__GLOBAL:orders".into()),
        (&too_long, too_long.clone()),
    ];
    for (path, subject) in &invalid {
        let routes: [(&str, String, Option<Value>); 7] = [
            ("POST", format!("/subjects/{path}/versions"), schema()),
            ("POST", format!("/subjects/{path}"), schema()),
            ("GET", format!("/subjects/{path}/versions"), None),
            ("GET", format!("/subjects/{path}/versions/latest"), None),
            (
                "POST",
                format!("/compatibility/subjects/{path}/versions"),
                schema(),
            ),
            ("GET", format!("/covenant/v1/subjects/{path}/samples"), None),
            ("GET", format!("/covenant/v1/subjects/{path}/readers"), None),
        ];
        for (method, route, body) in routes {
            let answer = server.call(method, &route, body).await;
            assert_invalid(&answer, subject);
        }
    }
    // Config and mode may address a context, never the reserved names.
    for path in ["__GLOBAL", "__EMPTY", "a%01"] {
        let answer = server
            .call(
                "PUT",
                &format!("/config/{path}"),
                Some(json!({"compatibility": "NONE"})),
            )
            .await;
        assert_eq!(answer.1["error_code"], 42208, "{path}: {}", answer.1);
        let answer = server
            .call(
                "PUT",
                &format!("/mode/{path}"),
                Some(json!({"mode": "READONLY"})),
            )
            .await;
        assert_eq!(answer.1["error_code"], 42208, "{path}: {}", answer.1);
    }
    let (status, body) = server.call("GET", "/subjects", None).await;
    assert_eq!((status, body), (200, json!([])), "nothing was stored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dot_segments_are_refused_even_sent_verbatim() {
    let server = Server::start().await;
    for (path, subject) in [("%2E%2E", ".."), ("%2e", "."), (":.ctx:%2E%2E", ":.ctx:..")] {
        let answer = server.raw(
            "POST",
            &format!("/subjects/{path}/versions"),
            r#"{"schema":"\"string\""}"#,
        );
        assert!(answer.starts_with("HTTP/1.1 422"), "{subject}: {answer}");
        assert!(
            answer.contains(&format!(
                r#""message":"The specified subject '{subject}' is not a valid.""#
            )),
            "{subject}: {answer}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_but_valid_names_keep_working() {
    let server = Server::start().await;
    let longest = "s".repeat(MAX_SUBJECT_CHARS);
    let valid = [
        ("..%2F..%2Fetc", "../../etc".to_string()),
        ("%E2%98%83%F0%9F%92%A9", "\u{2603}\u{1f4a9}".to_string()),
        ("...", "...".to_string()),
        (":.ctx:orders", ":.ctx:orders".to_string()),
        ("%20", " ".to_string()),
        (longest.as_str(), longest.clone()),
    ];
    for (path, subject) in &valid {
        let (status, body) = server
            .call("POST", &format!("/subjects/{path}/versions"), schema())
            .await;
        assert_eq!(status, 200, "{subject:.40}: {body}");
        let (status, body) = server
            .call("GET", &format!("/subjects/{path}/versions/1"), None)
            .await;
        assert_eq!((status, &body["subject"]), (200, &json!(subject)), "{body}");
        let (status, body) = server
            .call("DELETE", &format!("/subjects/{path}"), None)
            .await;
        assert_eq!((status, body), (200, json!([1])), "{subject:.40}");
    }
    // A name refused for schemas answers "not found" when deleted: nothing under it can exist
    // unless stored before the rule, and then it must stay removable.
    let (status, body) = server.call("DELETE", "/subjects/a%01", None).await;
    assert_eq!(
        (status, body["error_code"].as_i64()),
        (404, Some(40401)),
        "{body}"
    );
    let (status, body) = server
        .call(
            "PUT",
            "/config/:.ctx:",
            Some(json!({"compatibility": "NONE"})),
        )
        .await;
    assert_eq!(status, 200, "a context's config: {body}");
}

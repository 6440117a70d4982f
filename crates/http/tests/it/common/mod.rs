//! Shared test plumbing: a router over a temp-dir SQLite store, driven through `oneshot`.
#![allow(dead_code)]

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use covenant_http::{HttpConfig, router};
use covenant_registry::Registry;
use covenant_store::SqliteStore;
use serde_json::Value;
use std::sync::Arc;
use tower::ServiceExt;

pub struct App {
    pub router: Router,
    pub registry: Arc<Registry>,
    _dir: tempfile::TempDir,
}

pub fn app_with(config: HttpConfig) -> App {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path()).expect("store");
    let registry = Arc::new(Registry::new(Arc::new(store)));
    App {
        router: router(registry.clone(), config),
        registry,
        _dir: dir,
    }
}

pub fn app() -> App {
    app_with(HttpConfig::default())
}

pub struct Answer {
    pub status: StatusCode,
    pub content_type: String,
    pub text: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }
    pub fn code(&self) -> i64 {
        self.json()["error_code"].as_i64().unwrap_or(-1)
    }
}

impl App {
    pub async fn send(&self, method: &str, uri: &str, body: Option<&str>) -> Answer {
        self.send_typed(method, uri, body, "application/vnd.schemaregistry.v1+json")
            .await
    }

    pub async fn send_typed(
        &self,
        method: &str,
        uri: &str,
        body: Option<&str>,
        content_type: &str,
    ) -> Answer {
        let mut req = Request::builder().method(method).uri(uri);
        if body.is_some() {
            req = req.header("content-type", content_type);
        }
        let req = req
            .body(
                body.map(|b| Body::from(b.to_string()))
                    .unwrap_or_else(Body::empty),
            )
            .expect("request");
        let res = self.router.clone().oneshot(req).await.expect("infallible");
        let status = res.status();
        let content_type = res
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
            .await
            .expect("body");
        Answer {
            status,
            content_type,
            text: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    pub async fn get(&self, uri: &str) -> Answer {
        self.send("GET", uri, None).await
    }
}

/// Whether the Avro format crate can parse yet; format-dependent tests print a notice and
/// pass until it can.
pub fn avro_available() -> bool {
    let ok =
        covenant_schema::ParsedSchema::parse(covenant_schema::SchemaType::Avro, "\"string\"", &[])
            .is_ok();
    if !ok {
        eprintln!("notice: Avro parsing is not available in this build; skipping Avro flow");
    }
    ok
}

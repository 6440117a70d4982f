//! On a store other nodes write, a registration of a subject the node knows to be new is
//! judged without reading the store; its commit checks what it assumed. Here node B follows no
//! change feed, so it never hears of what node A writes: every subject A creates is one B
//! still takes for new. Needs `COVENANT_TEST_POSTGRES` (an admin URL, as
//! `scripts/with-postgres.sh` sets); skipped without it.

use covenant_registry::{RegisterOptions, Registry, RegistryError, SchemaRequest};
use covenant_store::PostgresStore;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn request(fields: &[(&str, &str)]) -> SchemaRequest {
    let fields: Vec<_> = fields
        .iter()
        .map(|(name, ty)| json!({"name": name, "type": ty}))
        .collect();
    SchemaRequest {
        schema: json!({"type": "record", "name": "Guessed", "fields": fields}).to_string(),
        ..SchemaRequest::default()
    }
}

/// Registers as the HTTP layer does: the alias lookup's read passed to the first round.
async fn register(
    node: &Registry,
    subject: &str,
    request: SchemaRequest,
) -> Result<covenant_registry::Registration, RegistryError> {
    let (_, first) = node.alias_target_for_registration(subject).await?;
    let options = RegisterOptions {
        first_read: first.as_ref(),
        ..RegisterOptions::default()
    };
    node.register(subject, request, options).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subject_assumed_new_is_judged_again_against_what_it_holds() {
    let Ok(admin) = std::env::var("COVENANT_TEST_POSTGRES") else {
        println!("COVENANT_TEST_POSTGRES is unset: skipping the PostgreSQL guesses test");
        return;
    };
    let (client, connection) = tokio_postgres::connect(&admin, tokio_postgres::NoTls)
        .await
        .expect("admin connection");
    tokio::spawn(connection);
    let db = format!("guesses_{}", std::process::id());
    client
        .batch_execute(&format!("CREATE DATABASE {db}"))
        .await
        .expect("create database");
    let url = format!("{}/{db}", admin.rsplit_once('/').expect("a database").0);
    let node = |url: String| async move {
        Registry::new(Arc::new(PostgresStore::connect(&url).await.expect("store")))
    };
    let (a, b) = (node(url.clone()).await, node(url.clone()).await);

    // B reads which subjects exist, and keeps the config and mode rows, from its first
    // registration on (in the background).
    register(&b, "warm-up", request(&[("id", "string")]))
        .await
        .expect("warm-up");
    tokio::time::sleep(Duration::from_millis(500)).await;

    for round in 0..5 {
        let subject = format!("guessed-{round}");
        let first = register(&a, &subject, request(&[("id", "string")]))
            .await
            .expect("created on node A");
        // A new required field without a default breaks BACKWARD, against A's version.
        let breaking = register(&b, &subject, request(&[("id", "string"), ("n", "int")])).await;
        assert!(
            matches!(breaking, Err(RegistryError::Incompatible { .. })),
            "round {round}: node B answered {breaking:?}"
        );
        let again = register(&b, &subject, request(&[("id", "string")]))
            .await
            .expect("the same schema on node B");
        assert_eq!(
            (again.id, again.version, again.created),
            (first.id, 1, false),
            "round {round}: node B's answer for A's schema"
        );
    }
    drop((a, b));
    let _ = client
        .batch_execute(&format!("DROP DATABASE {db} WITH (FORCE)"))
        .await;
}

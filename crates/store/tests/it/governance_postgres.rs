//! The governance store suite on PostgreSQL, when `COVENANT_TEST_POSTGRES` names a server
//! (`scripts/with-postgres.sh` starts a throwaway one). Each test works in its own schema.

use crate::governance_suite as suite;

use covenant_store::PostgresGovernanceStore;

async fn store(schema: &str) -> Option<PostgresGovernanceStore> {
    let Ok(url) = std::env::var("COVENANT_TEST_POSTGRES") else {
        println!("COVENANT_TEST_POSTGRES is unset: skipping the PostgreSQL governance tests");
        return None;
    };
    let unique = format!("{schema}_{}", std::process::id());
    Some(
        PostgresGovernanceStore::connect_in_schema(&url, Some(&unique))
            .await
            .expect("connect"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_governance_passes_the_suite() {
    let Some(store) = store("gov_suite").await else {
        return;
    };
    suite::run_all(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_governance_snapshot_restores_into_an_empty_store() {
    let (Some(source), Some(target)) = (store("gov_snap_src").await, store("gov_snap_dst").await)
    else {
        return;
    };
    suite::run_all(&source).await;
    suite::snapshot_restores(&source, &target).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_governance_migrations_apply_once() {
    let Some(store) = store("gov_migrations").await else {
        return;
    };
    assert_eq!(
        store.applied_migrations().await.expect("migrations"),
        vec![1, 2, 3]
    );
    let Ok(url) = std::env::var("COVENANT_TEST_POSTGRES") else {
        return;
    };
    let schema = format!("gov_migrations_{}", std::process::id());
    let again = PostgresGovernanceStore::connect_in_schema(&url, Some(&schema))
        .await
        .expect("reconnect");
    assert_eq!(
        again.applied_migrations().await.expect("migrations"),
        vec![1, 2, 3]
    );
}

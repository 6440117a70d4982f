//! The exporter store's shared suite on PostgreSQL. Needs `COVENANT_TEST_POSTGRES` (a URL to
//! an empty database, as `scripts/with-postgres.sh` provides); without it the test says so and
//! passes.

use covenant_store::exporters::ExporterStore;
use covenant_store::exporters_postgres::PostgresExporterStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shared_suite_passes_on_postgres() {
    let Ok(url) = std::env::var("COVENANT_TEST_POSTGRES") else {
        eprintln!(
            "COVENANT_TEST_POSTGRES is not set: skipping the PostgreSQL exporter store suite"
        );
        return;
    };
    let store = PostgresExporterStore::open_lazy(&url).expect("open");
    covenant_store::exporters::suite::run(&store).await;
    // A lease is one node's: another store (another node) cannot take it meanwhile.
    let other = PostgresExporterStore::open_lazy(&url).expect("open");
    let lease = store.lease("suite-lease").await.expect("lease");
    assert!(lease.is_some());
    assert!(other.lease("suite-lease").await.expect("lease").is_none());
    drop(lease);
}

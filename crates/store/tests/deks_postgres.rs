//! The DEK Registry store's shared suite on PostgreSQL. Needs `COVENANT_TEST_POSTGRES` (a URL
//! to an empty database, as `scripts/with-postgres.sh` provides); without it the test says so
//! and passes.

use covenant_store::deks::DekStore;
use covenant_store::deks_postgres::PostgresDekStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shared_suite_passes_on_postgres() {
    let Ok(url) = std::env::var("COVENANT_TEST_POSTGRES") else {
        eprintln!("COVENANT_TEST_POSTGRES is not set: skipping the PostgreSQL DEK store suite");
        return;
    };
    let store = PostgresDekStore::connect(&url).await.expect("connect");
    // A second connect must find the migrations applied.
    let again = PostgresDekStore::connect(&url).await.expect("reconnect");
    covenant_store::deks::suite::run(&store).await;
    // The suite leaves no key behind, so other suites find the database as it was.
    assert!(again.kek_names(true).await.expect("names").is_empty());
}

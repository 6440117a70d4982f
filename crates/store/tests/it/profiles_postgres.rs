//! The profile store's shared suite on PostgreSQL. Needs `COVENANT_TEST_POSTGRES` (a URL to an
//! empty database, as `scripts/with-postgres.sh` provides); without it the test says so and
//! passes.

use covenant_store::{PostgresProfileStore, ProfileStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shared_suite_passes_on_postgres() {
    let Ok(url) = std::env::var("COVENANT_TEST_POSTGRES") else {
        eprintln!("COVENANT_TEST_POSTGRES is not set: skipping the PostgreSQL profile store suite");
        return;
    };
    let store = PostgresProfileStore::connect(&url).await.expect("connect");
    // A second connect must find the migrations applied.
    let again = PostgresProfileStore::connect(&url)
        .await
        .expect("reconnect");
    covenant_store::profiles::suite::run(&store).await;
    assert_eq!(again.profiles("q", 0, 10).await.expect("list").len(), 1);
    // Leave the database as found for other suites.
    assert_eq!(again.delete_profiles("q").await.expect("delete"), 1);
}

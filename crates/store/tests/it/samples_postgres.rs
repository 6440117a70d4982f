//! The sample store's shared suite on PostgreSQL. Needs `COVENANT_TEST_POSTGRES` (a URL to an
//! empty database, as `scripts/with-postgres.sh` provides); without it the test says so and
//! passes.

use covenant_store::{PostgresSampleStore, SampleStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shared_suite_passes_on_postgres() {
    let Ok(url) = std::env::var("COVENANT_TEST_POSTGRES") else {
        eprintln!("COVENANT_TEST_POSTGRES is not set: skipping the PostgreSQL sample store suite");
        return;
    };
    let store = PostgresSampleStore::connect(&url).await.expect("connect");
    // A second connect must find the migrations applied.
    let again = PostgresSampleStore::connect(&url).await.expect("reconnect");
    covenant_store::samples::suite::run(&store).await;
    assert_eq!(again.live_marks("s").await.expect("marks"), [(2, 200)]);
    // Leave the database as found for other suites.
    let removed = again
        .delete_version_samples("other", &[1])
        .await
        .expect("purge");
    assert_eq!(removed, 1);
    assert!(again.unmark_live("s", 2, None).await.expect("unmark"));
}

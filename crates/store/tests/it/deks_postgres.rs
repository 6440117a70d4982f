//! The DEK Registry store's shared suite on PostgreSQL. Needs `COVENANT_TEST_POSTGRES` (a URL
//! to an empty database, as `scripts/with-postgres.sh` provides); without it the test says so
//! and passes.

use covenant_store::deks::DekStore;
use covenant_store::deks_postgres::PostgresDekStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shared_suite_passes_on_postgres() {
    let Ok(admin) = std::env::var("COVENANT_TEST_POSTGRES") else {
        eprintln!("COVENANT_TEST_POSTGRES is not set: skipping the PostgreSQL DEK store suite");
        return;
    };
    // A database of its own: other suites write keys into the one the variable names.
    let name = format!("covenant_deks_{}", std::process::id());
    let (client, connection) = tokio_postgres::connect(&admin, tokio_postgres::NoTls)
        .await
        .expect("connect to the admin database");
    let driver = tokio::spawn(connection);
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .expect("create the test database");
    let (base, _) = admin.rsplit_once('/').expect("the URL names a database");
    let url = format!("{base}/{name}");
    let store = PostgresDekStore::connect(&url).await.expect("connect");
    // A second connect must find the migrations applied.
    let again = PostgresDekStore::connect(&url).await.expect("reconnect");
    covenant_store::deks::suite::run(&store).await;
    // The suite leaves no key behind, so other suites find the database as it was.
    assert!(again.kek_names(true).await.expect("names").is_empty());
    drop((store, again));
    let _ = client
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .await;
    drop(client);
    let _ = driver.await;
}

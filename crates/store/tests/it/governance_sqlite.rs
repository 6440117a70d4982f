//! The governance store suite on the embedded backend, plus what only it has.

use crate::governance_suite as suite;

use covenant_store::{SqliteGovernanceStore, SqliteStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_governance_passes_the_suite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteGovernanceStore::open(dir.path()).expect("open");
    suite::run_all(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_governance_snapshot_restores_into_an_empty_store() {
    let (a, b) = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let source = SqliteGovernanceStore::open(a.path()).expect("open");
    suite::run_all(&source).await;
    let target = SqliteGovernanceStore::open(b.path()).expect("open");
    suite::snapshot_restores(&source, &target).await;
}

#[tokio::test]
async fn sqlite_governance_works_on_a_current_thread_runtime() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteGovernanceStore::open(dir.path()).expect("open");
    suite::consumers_crud(&store).await;
}

#[tokio::test]
async fn governance_shares_the_registry_file_with_its_own_migrations() {
    let dir = tempfile::tempdir().expect("temp dir");
    let registry = SqliteStore::open(dir.path()).expect("registry");
    let governance = SqliteGovernanceStore::open(dir.path()).expect("governance");
    assert_eq!(governance.path(), registry.path());
    assert_eq!(
        governance.applied_migrations().expect("migrations"),
        vec![1, 2, 3]
    );
    assert_eq!(
        registry.applied_migrations().expect("migrations"),
        vec![1, 2, 3, 4, 5]
    );
    suite::deprecations_round_trip(&governance).await;
    drop(governance);
    let reopened = SqliteGovernanceStore::open(dir.path()).expect("reopen");
    assert_eq!(
        reopened.applied_migrations().expect("migrations"),
        vec![1, 2, 3]
    );
    use covenant_store::GovernanceStore;
    assert_eq!(reopened.deprecations(None).await.expect("list").len(), 2);
}

//! Consumers' declarations count everywhere: a read of a whole version (`S@1`) declares every
//! field of that version in the removal gate, at the entry to `enforcing` and in the consumers
//! findings name, as the freeze already reads it; a declared field no version has is refused
//! with the nearest names.

use async_trait::async_trait;
use covenant_governance::*;
use covenant_store::SqliteGovernanceStore;
use std::collections::BTreeMap;
use std::sync::Arc;

/// 2026-01-01T00:00:00Z.
const T0: i64 = 1_767_225_600_000;
const SUBJECT: &str = "billing-subscription-value";

/// Versions 1 (plan_name), 2 (both) and 3 (billing_plan_id); schema ids equal versions.
struct Versions(BTreeMap<i64, Vec<String>>);

#[async_trait]
impl SchemaFields for Versions {
    async fn fields_of(&self, _: &str, schema_id: i64) -> Option<Vec<String>> {
        self.0.get(&schema_id).cloned()
    }

    async fn version_fields(&self, subject: &str, version: i64) -> Option<Vec<String>> {
        (subject == SUBJECT).then(|| self.0.get(&version).cloned())?
    }

    async fn subject_fields(&self, subject: &str) -> Option<Vec<String>> {
        (subject == SUBJECT).then(|| self.0.values().flatten().cloned().collect())
    }
}

fn governance(dir: &std::path::Path) -> Governance {
    let fields = |f: &[&str]| f.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let versions = Versions(BTreeMap::from([
        (1, fields(&["subscription_id", "plan_name"])),
        (
            2,
            fields(&["subscription_id", "plan_name", "billing_plan_id"]),
        ),
        (3, fields(&["subscription_id", "billing_plan_id"])),
    ]));
    let store = SqliteGovernanceStore::open(dir).expect("open");
    Governance::new(Arc::new(store), Arc::new(ManualClock::new(T0)))
        .with_schema_fields(Arc::new(versions))
}

fn consumer(name: &str, reader: Option<i64>, fields: &[&str]) -> NewConsumer {
    NewConsumer {
        name: name.into(),
        owner: format!("{name}-owners"),
        purpose: format!("{name} purpose"),
        cadence: Cadence::Weekly,
        criticality: Criticality::High,
        contact: format!("{name}@example.com"),
        clients: vec![format!("svc-{name}")],
        reads: vec![SubjectRead {
            subject: SUBJECT.into(),
            reader_version: reader,
            fields: fields.iter().map(|f| f.to_string()).collect(),
        }],
        environment: Default::default(),
    }
}

fn deprecation() -> NewDeprecation {
    NewDeprecation {
        target: DeprecationTarget::Field {
            subject: SUBJECT.into(),
            path: "plan_name".into(),
        },
        contract: "subscription event".into(),
        old_promise: "plan_name is a display label".into(),
        new_promise: "billing_plan_id is identity".into(),
        replacement: Some("billing_plan_id".into()),
        owners: vec![],
        window_start: T0,
        window_end: T0 + 90 * 86_400_000,
        sunset: None,
        notes: RecordNotes::default(),
        announced_by: "billing".into(),
    }
}

async fn stage(gov: &Governance, id: i64, to: Stage) -> GovernanceResult<Deprecation> {
    gov.change_stage(
        id,
        StageRequest {
            to,
            by: "billing".into(),
            note: String::new(),
        },
        None,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_version_declaration_blocks_enforcing_for_every_field_of_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let gov = governance(dir.path());
    gov.create_consumer(consumer("replay-job", Some(1), &[]), None)
        .await
        .expect("replay-job");
    gov.create_consumer(
        consumer("entitlements", Some(3), &["billing_plan_id"]),
        None,
    )
    .await
    .expect("entitlements");
    let d = gov
        .create_deprecation(deprecation(), None)
        .await
        .expect("deprecate");
    stage(&gov, d.id, Stage::Frozen).await.expect("frozen");

    // Version 1 has plan_name: the replay job declares it, so enforcing is refused.
    let refused = stage(&gov, d.id, Stage::Enforcing).await;
    let Err(GovernanceError::Refused(message)) = refused else {
        panic!("expected a refusal, got {refused:?}");
    };
    assert!(
        message.contains("[consumer_declared]") && message.contains("'replay-job'"),
        "{message}"
    );
    assert!(!message.contains("'entitlements'"), "{message}");

    // Every field of version 1, deprecated or not, is declared by it in the gate.
    let gate = gov
        .removal_gate(SUBJECT, &["plan_name".into(), "subscription_id".into()])
        .await
        .expect("gate");
    let mut parties: Vec<(BlockerKind, String, Option<String>)> = gate
        .blockers
        .iter()
        .filter(|b| b.party.as_deref() == Some("replay-job"))
        .filter(|b| b.kind != BlockerKind::InsufficientEvidence)
        .map(|b| (b.kind, b.field.clone(), b.party.clone()))
        .collect();
    parties.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        parties,
        vec![
            (
                BlockerKind::ConsumerDeclared,
                "plan_name".into(),
                Some("replay-job".into())
            ),
            (
                BlockerKind::NotDeprecated,
                "subscription_id".into(),
                Some("replay-job".into())
            ),
        ]
    );
    // Findings name it as a reader of each field of version 1.
    let by_field = gov.consumers_by_field(SUBJECT).await.expect("by field");
    assert_eq!(by_field["plan_name"], vec!["replay-job".to_string()]);
    assert_eq!(
        by_field["subscription_id"],
        vec!["replay-job".to_string()],
        "{by_field:?}"
    );

    // It moves to a reader without the field: enforcing may start.
    gov.update_consumer(
        consumer(
            "replay-job",
            Some(3),
            &["subscription_id", "billing_plan_id"],
        ),
        None,
    )
    .await
    .expect("moved");
    let enforcing = stage(&gov, d.id, Stage::Enforcing)
        .await
        .expect("enforcing");
    assert_eq!(enforcing.stage, Stage::Enforcing);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_field_no_version_has_is_refused_with_the_nearest_names() {
    let dir = tempfile::tempdir().expect("temp dir");
    let gov = governance(dir.path());
    let refused = gov
        .create_consumer(consumer("dashboard", None, &["plan_nmae"]), None)
        .await;
    let Err(GovernanceError::Invalid(message)) = refused else {
        panic!("expected a refusal, got {refused:?}");
    };
    assert_eq!(
        message,
        "Consumer 'dashboard' declares field 'plan_nmae' of subject 'billing-subscription-value', which no version of the subject has; did you mean 'plan_name'?"
    );
    // A field only an earlier version has still exists in the subject's history.
    gov.create_consumer(consumer("dashboard", Some(1), &["plan_name"]), None)
        .await
        .expect("declared");
    let refused = gov
        .update_consumer(consumer("dashboard", Some(3), &["billing_plan"]), None)
        .await;
    assert!(
        matches!(&refused, Err(GovernanceError::Invalid(m)) if m.contains("did you mean 'billing_plan_id'?")),
        "{refused:?}"
    );
    // Subjects the registry knows nothing of are not checked.
    let mut other = consumer("other", None, &["anything"]);
    other.reads[0].subject = "not-registered-value".into();
    gov.create_consumer(other, None)
        .await
        .expect("unknown subject");
}

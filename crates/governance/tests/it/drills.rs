//! The seed's evolution drill at the domain level, on both store backends: a replay job
//! reading old events with new code, a monthly export that wakes after three quiet weeks, and
//! a new dashboard trying to adopt the deprecated column. Plus the rest of the lifecycle.
//! PostgreSQL variants run when `COVENANT_TEST_POSTGRES` is set and print a notice otherwise.

use covenant_governance::*;
use covenant_store::{PostgresGovernanceStore, SqliteGovernanceStore};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;
/// 2026-01-01T00:00:00Z.
const T0: i64 = 1_767_225_600_000;
const SUBJECT: &str = "billing-subscription-value";

struct World {
    gov: Governance,
    clock: Arc<ManualClock>,
}

impl World {
    fn at(&self, at: i64) {
        self.clock.set(at);
    }
}

fn world(store: Arc<dyn GovernanceStore>) -> World {
    let clock = Arc::new(ManualClock::new(T0));
    // Schema id 1 is the old reader (plan_name only), 2 carries both, 3 only billing_plan_id.
    let fields: BTreeMap<i64, Vec<String>> = BTreeMap::from([
        (1, vec!["subscription_id".into(), "plan_name".into()]),
        (
            2,
            vec![
                "subscription_id".into(),
                "plan_name".into(),
                "billing_plan_id".into(),
            ],
        ),
        (3, vec!["subscription_id".into(), "billing_plan_id".into()]),
    ]);
    let gov = Governance::new(store, clock.clone()).with_schema_fields(Arc::new(fields));
    World { gov, clock }
}

async fn on_sqlite<F, Fut>(scenario: F)
where
    F: FnOnce(World) -> Fut,
    Fut: Future<Output = ()>,
{
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteGovernanceStore::open(dir.path()).expect("open");
    scenario(world(Arc::new(store))).await;
}

static SCHEMA: AtomicUsize = AtomicUsize::new(0);

async fn on_postgres<F, Fut>(scenario: F)
where
    F: FnOnce(World) -> Fut,
    Fut: Future<Output = ()>,
{
    let Ok(url) = std::env::var("COVENANT_TEST_POSTGRES") else {
        println!("COVENANT_TEST_POSTGRES is unset: skipping the PostgreSQL variant");
        return;
    };
    let schema = format!(
        "gov_drill_{}_{}",
        std::process::id(),
        SCHEMA.fetch_add(1, Ordering::SeqCst)
    );
    let store = PostgresGovernanceStore::connect_in_schema(&url, Some(&schema))
        .await
        .expect("connect");
    scenario(world(Arc::new(store))).await;
}

macro_rules! both_backends {
    ($scenario:ident, $sqlite:ident, $postgres:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $sqlite() {
            on_sqlite($scenario).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $postgres() {
            on_postgres($scenario).await;
        }
    };
}

fn consumer(name: &str, cadence: Cadence, reader: i64, fields: &[&str]) -> NewConsumer {
    NewConsumer {
        name: name.into(),
        owner: format!("{name}-owners"),
        purpose: format!("{name} purpose"),
        cadence,
        criticality: Criticality::High,
        contact: format!("{name}@example.com"),
        clients: vec![format!("svc-{name}")],
        reads: vec![SubjectRead {
            subject: SUBJECT.into(),
            reader_version: Some(reader),
            fields: fields.iter().map(|f| f.to_string()).collect(),
        }],
        environment: Default::default(),
    }
}

fn usage(client: &str, reader: i64, fields: &[&str], at: i64) -> UsageReport {
    UsageReport {
        subject: SUBJECT.into(),
        client_id: client.into(),
        consumer: None,
        reader_schema_id: Some(reader),
        writer_schema_ids: vec![2],
        fields_read: fields.iter().map(|f| f.to_string()).collect(),
        records_by_version: BTreeMap::from([(2, 100)]),
        unknown_enum_values: BTreeMap::new(),
        decode_failures: 0,
        interval_start: at - HOUR,
        interval_end: at,
    }
}

fn plan_name_deprecation() -> NewDeprecation {
    NewDeprecation {
        target: DeprecationTarget::Field {
            subject: SUBJECT.into(),
            path: "/fields/plan_name".into(),
        },
        contract: "subscription event plan identity; warehouse subscription fact;\nbilling API display label; monthly compliance export".into(),
        old_promise: "plan_name is a mutable display label, historically misused as identity".into(),
        new_promise: "billing_plan_id is stable identity at the event's effective time;\ndisplay text resolves through the versioned plan dimension".into(),
        replacement: Some("billing_plan_id".into()),
        owners: vec![
            Owner { role: "producer".into(), name: "billing".into() },
            Owner { role: "risk approver".into(), name: "finance-controller".into() },
        ],
        window_start: T0,
        window_end: T0 + 120 * DAY,
        sunset: None,
        notes: RecordNotes {
            freeze: "old field absent from new examples; new warehouse dependencies denied".into(),
            ..RecordNotes::default()
        },
        announced_by: "billing".into(),
    }
}

async fn freeze(w: &World, id: i64) {
    w.gov
        .change_stage(
            id,
            StageRequest {
                to: Stage::Frozen,
                by: "billing".into(),
                note: "freeze new use".into(),
            },
            None,
        )
        .await
        .expect("freeze");
}

fn kinds(report: &GateReport) -> Vec<(BlockerKind, Option<String>)> {
    report
        .blockers
        .iter()
        .map(|b| (b.kind, b.party.clone()))
        .collect()
}

/// Drill 1: a replay job sends old events through new code. Its reports carry the old reader
/// schema id and itemize nothing, yet they count as use of plan_name.
async fn replay_job_with_old_reader_counts_as_use(w: World) {
    let d = w
        .gov
        .create_deprecation(plan_name_deprecation(), None)
        .await
        .expect("deprecate");
    w.gov
        .create_consumer(consumer("replayer", Cadence::Weekly, 1, &[]), None)
        .await
        .expect("replayer");
    w.at(T0 + HOUR);
    w.gov
        .report_usage(usage("svc-replayer", 3, &[], T0 + HOUR), None)
        .await
        .expect("usage");
    freeze(&w, d.id).await;

    // Weeks later, a restore replays five-year-old events with the old reader schema.
    w.at(T0 + 30 * DAY);
    let receipt = w
        .gov
        .report_usage(usage("svc-replayer", 1, &[], T0 + 30 * DAY), None)
        .await
        .expect("usage");
    assert_eq!(receipt.consumer.as_deref(), Some("replayer"));
    assert_eq!(
        receipt.deprecated_fields_read,
        vec!["plan_name".to_string()]
    );
    assert!(
        receipt
            .findings
            .iter()
            .any(|f| f.kind == FindingKind::NewUseAfterFreeze),
        "the replayer never read plan_name before the freeze: {:?}",
        receipt.findings
    );

    let gate = w
        .gov
        .removal_gate(SUBJECT, &["plan_name".into()])
        .await
        .expect("gate");
    let recent = gate
        .blockers
        .iter()
        .find(|b| b.kind == BlockerKind::RecentUsage)
        .expect("the replay blocks the removal");
    assert_eq!(recent.party.as_deref(), Some("replayer"));
    assert!(
        recent.message.contains("reader schema id 1"),
        "{}",
        recent.message
    );

    // The same job on the new reader (id 3) a week later, and a week of silence on the old
    // one: the usage blocker is gone.
    w.at(T0 + 38 * DAY);
    w.gov
        .report_usage(usage("svc-replayer", 3, &[], T0 + 38 * DAY), None)
        .await
        .expect("usage");
    let gate = w
        .gov
        .removal_gate(SUBJECT, &["plan_name".into()])
        .await
        .expect("gate");
    assert!(
        !gate
            .blockers
            .iter()
            .any(|b| b.kind == BlockerKind::RecentUsage),
        "{:?}",
        kinds(&gate)
    );

    // Metrics saw the deprecated read, attributed.
    let used: u64 = w
        .gov
        .metrics_snapshot()
        .iter()
        .filter(|s| s.family == DEPRECATED_FIELD_USED)
        .filter(|s| s.labels.contains(&("consumer", "replayer".to_string())))
        .map(|s| s.value)
        .sum();
    assert_eq!(used, 1);
}
both_backends!(
    replay_job_with_old_reader_counts_as_use,
    replay_drill_on_sqlite,
    replay_drill_on_postgres
);

/// Drill 2: a monthly export, quiet for three weeks, still blocks; a full month of silence
/// (with evidence covering it) does not.
async fn monthly_export_quiet_for_three_weeks_blocks(w: World) {
    let d = w
        .gov
        .create_deprecation(plan_name_deprecation(), None)
        .await
        .expect("deprecate");
    w.gov
        .create_consumer(
            consumer("compliance-export", Cadence::Monthly, 2, &["plan_name"]),
            None,
        )
        .await
        .expect("export");
    // Weekly heartbeat reports from the start, with the month-end run reading plan_name.
    w.gov
        .report_usage(
            usage("svc-compliance-export", 2, &["subscription_id"], T0),
            None,
        )
        .await
        .expect("usage");
    w.at(T0 + 10 * DAY);
    w.gov
        .report_usage(
            usage("svc-compliance-export", 2, &["plan_name"], T0 + 10 * DAY),
            None,
        )
        .await
        .expect("usage");
    // The export moves to the replacement and says so.
    w.gov
        .update_consumer(
            consumer(
                "compliance-export",
                Cadence::Monthly,
                3,
                &["billing_plan_id"],
            ),
            None,
        )
        .await
        .expect("migrate");
    freeze(&w, d.id).await;
    for week in 1..=3 {
        let at = T0 + 10 * DAY + week * 7 * DAY;
        w.at(at);
        w.gov
            .report_usage(
                usage("svc-compliance-export", 3, &["billing_plan_id"], at),
                None,
            )
            .await
            .expect("usage");
    }
    // Three quiet weeks: still blocked by the export's own cadence.
    let gate = w
        .gov
        .removal_gate(SUBJECT, &["plan_name".into()])
        .await
        .expect("gate");
    let recent = gate
        .blockers
        .iter()
        .find(|b| {
            b.kind == BlockerKind::RecentUsage && b.party.as_deref() == Some("compliance-export")
        })
        .unwrap_or_else(|| {
            panic!(
                "three quiet weeks must not pass a monthly export: {:?}",
                kinds(&gate)
            )
        });
    assert!(recent.message.contains("monthly"), "{}", recent.message);
    assert!(recent.message.contains("21 days ago"), "{}", recent.message);
    // Becoming removable is refused with the same reason.
    let refused = w
        .gov
        .change_stage(
            d.id,
            StageRequest {
                to: Stage::Enforcing,
                by: "billing".into(),
                note: String::new(),
            },
            None,
        )
        .await
        .expect("enforcing");
    assert_eq!(refused.stage, Stage::Enforcing);
    let err = w
        .gov
        .change_stage(
            d.id,
            StageRequest {
                to: Stage::Removable,
                by: "billing".into(),
                note: String::new(),
            },
            None,
        )
        .await
        .expect_err("not removable yet");
    assert!(err.to_string().contains("compliance-export"), "{err}");

    // A full month after the last read, with reports all along: no usage blocker left.
    let later = T0 + 10 * DAY + 32 * DAY;
    w.at(later);
    w.gov
        .report_usage(
            usage("svc-compliance-export", 3, &["billing_plan_id"], later),
            None,
        )
        .await
        .expect("usage");
    let gate = w
        .gov
        .removal_gate(SUBJECT, &["plan_name".into()])
        .await
        .expect("gate");
    assert!(
        !gate
            .blockers
            .iter()
            .any(|b| b.party.as_deref() == Some("compliance-export")),
        "{:?}",
        kinds(&gate)
    );
    assert_eq!(kinds(&gate), vec![(BlockerKind::StageNotRemovable, None)]);

    // A second monthly consumer that began reporting two weeks ago has not proven a month of
    // silence yet.
    w.gov
        .create_consumer(
            consumer("quarter-close", Cadence::Monthly, 3, &["billing_plan_id"]),
            None,
        )
        .await
        .expect("consumer");
    w.gov
        .report_usage(
            usage(
                "svc-quarter-close",
                3,
                &["billing_plan_id"],
                later - 14 * DAY,
            ),
            None,
        )
        .await
        .expect("usage");
    let gate = w
        .gov
        .removal_gate(SUBJECT, &["plan_name".into()])
        .await
        .expect("gate");
    let thin = gate
        .blockers
        .iter()
        .find(|b| b.kind == BlockerKind::InsufficientEvidence)
        .expect("evidence must cover a full cadence");
    assert_eq!(thin.party.as_deref(), Some("quarter-close"));

    // An attributed exception overrides exactly that blocker, and the stage can advance.
    w.gov
        .add_exception(
            d.id,
            ExceptionRequest {
                approver: "finance-controller".into(),
                reason: "quarter-close was built on billing_plan_id and never read plan_name"
                    .into(),
                overrides: BlockerKind::InsufficientEvidence,
                party: Some("quarter-close".into()),
            },
            None,
        )
        .await
        .expect("exception");
    // The gate is clear, but the window is still open and nothing is on the record: the
    // stage's own entry conditions refuse, each saying what is missing.
    let err = w
        .gov
        .change_stage(
            d.id,
            StageRequest {
                to: Stage::Removable,
                by: "billing".into(),
                note: String::new(),
            },
            None,
        )
        .await
        .expect_err("window open, no evidence");
    let text = err.to_string();
    assert!(text.contains("[window_open]"), "{text}");
    assert!(text.contains("[no_evidence]"), "{text}");
    assert!(text.contains("[no_canary]"), "{text}");
    // A failed canary is evidence, but not the passed canary leaving enforcement needs.
    let canary = |outcome| EvidenceBody::Canary {
        path: "tenant internal-billing".into(),
        outcome,
        detail: "producer omitted plan_name for one week".into(),
        link: Some("https://dashboards.example.com/canary/42".into()),
    };
    w.gov
        .add_evidence(
            d.id,
            "internal canary",
            "billing",
            canary(Outcome::Failed),
            None,
        )
        .await
        .expect("failed canary");
    let text = w
        .gov
        .change_stage(
            d.id,
            StageRequest {
                to: Stage::Removable,
                by: "billing".into(),
                note: String::new(),
            },
            None,
        )
        .await
        .expect_err("no passed canary")
        .to_string();
    assert!(!text.contains("[no_evidence]"), "{text}");
    assert!(text.contains("[no_canary]"), "{text}");
    w.gov
        .add_evidence(
            d.id,
            "internal canary complete",
            "billing",
            canary(Outcome::Passed),
            None,
        )
        .await
        .expect("canary");
    w.gov
        .add_evidence(
            d.id,
            "compliance export moved",
            "billing",
            EvidenceBody::SignOff {
                consumer: "compliance-export".into(),
                who: "head of compliance".into(),
                signed_at: later,
                statement: "the monthly export ran on billing_plan_id".into(),
            },
            None,
        )
        .await
        .expect("evidence");
    w.gov
        .add_exception(
            d.id,
            ExceptionRequest {
                approver: "risk-approver".into(),
                reason: "every declared consumer signed off; the rest of the window protects nobody known".into(),
                overrides: BlockerKind::WindowOpen,
                party: None,
            },
            None,
        )
        .await
        .expect("window exception");
    let removable = w
        .gov
        .change_stage(
            d.id,
            StageRequest {
                to: Stage::Removable,
                by: "billing".into(),
                note: String::new(),
            },
            None,
        )
        .await
        .expect("removable");
    assert_eq!(removable.stage, Stage::Removable);
    let gate = w
        .gov
        .removal_gate(SUBJECT, &["plan_name".into()])
        .await
        .expect("gate");
    assert!(gate.allows_removal(), "{:?}", kinds(&gate));
    assert_eq!(gate.overridden.len(), 1);
    assert_eq!(gate.overridden[0].exception.approver, "finance-controller");
}
both_backends!(
    monthly_export_quiet_for_three_weeks_blocks,
    monthly_export_drill_on_sqlite,
    monthly_export_drill_on_postgres
);

/// Drill 3: a new dashboard tries to adopt the deprecated column during the migration.
async fn new_dashboard_cannot_adopt_frozen_field(w: World) {
    let d = w
        .gov
        .create_deprecation(plan_name_deprecation(), None)
        .await
        .expect("deprecate");
    w.gov
        .create_consumer(consumer("revenue", Cadence::Daily, 2, &["plan_name"]), None)
        .await
        .expect("revenue");
    w.gov
        .report_usage(usage("svc-revenue", 2, &["plan_name"], T0), None)
        .await
        .expect("usage");
    // Before the freeze a new reader may still start (announced only).
    w.gov
        .create_consumer(
            consumer("early-dashboard", Cadence::Daily, 2, &["plan_name"]),
            None,
        )
        .await
        .expect("announced does not freeze");
    w.at(T0 + DAY);
    freeze(&w, d.id).await;

    w.at(T0 + 5 * DAY);
    let err = w
        .gov
        .create_consumer(
            consumer("plan-dashboard", Cadence::Daily, 2, &["/fields/plan_name"]),
            None,
        )
        .await
        .expect_err("a new dependency on a frozen field is refused");
    let message = err.to_string();
    assert!(matches!(err, GovernanceError::Refused(_)), "{err:?}");
    assert!(
        message.contains("'plan_name'") && message.contains("'billing_plan_id'"),
        "{message}"
    );
    assert!(
        w.gov
            .store()
            .consumer("plan-dashboard")
            .await
            .expect("read")
            .is_none()
    );

    // An existing consumer cannot add it either, nor adopt a new reader that keeps it.
    let err = w
        .gov
        .update_consumer(
            consumer("early-dashboard", Cadence::Daily, 3, &["plan_name"]),
            None,
        )
        .await
        .expect_err("new reader keeping a frozen field");
    assert!(err.to_string().contains("reader schema version 3"), "{err}");
    // Keeping its declaration unchanged is allowed; so is dropping the field.
    w.gov
        .update_consumer(
            NewConsumer {
                owner: "bi-team".into(),
                ..consumer("early-dashboard", Cadence::Daily, 2, &["plan_name"])
            },
            None,
        )
        .await
        .expect("unchanged reads");
    w.gov
        .update_consumer(
            consumer("early-dashboard", Cadence::Daily, 3, &["billing_plan_id"]),
            None,
        )
        .await
        .expect("migration");
    // The same dashboard reading through an undeclared credential is flagged.
    let receipt = w
        .gov
        .report_usage(
            usage("bi-shared-account", 2, &["plan_name"], T0 + 5 * DAY),
            None,
        )
        .await
        .expect("usage");
    let found: Vec<FindingKind> = receipt.findings.iter().map(|f| f.kind).collect();
    assert!(found.contains(&FindingKind::UnattributedUsage), "{found:?}");
    assert!(found.contains(&FindingKind::NewUseAfterFreeze), "{found:?}");
    // A reader that read it before the freeze is not flagged as new use.
    let receipt = w
        .gov
        .report_usage(usage("svc-revenue", 2, &["plan_name"], T0 + 5 * DAY), None)
        .await
        .expect("usage");
    assert!(receipt.findings.is_empty(), "{:?}", receipt.findings);
    let stored = w.gov.findings(T0, T0 + 10 * DAY).await.expect("findings");
    assert_eq!(
        stored
            .iter()
            .filter(|f| f.kind == FindingKind::NewUseAfterFreeze)
            .count(),
        1
    );

    // The unattributed reader and the declared one both block removal.
    let gate = w
        .gov
        .removal_gate(SUBJECT, &["plan_name".into()])
        .await
        .expect("gate");
    let k = kinds(&gate);
    assert!(
        k.contains(&(BlockerKind::ConsumerDeclared, Some("revenue".into()))),
        "{k:?}"
    );
    assert!(
        k.contains(&(
            BlockerKind::UnattributedUsage,
            Some("bi-shared-account".into())
        )),
        "{k:?}"
    );
    assert!(
        k.contains(&(BlockerKind::RecentUsage, Some("revenue".into()))),
        "{k:?}"
    );
    let unattributed = w
        .gov
        .unattributed_usage(Some(SUBJECT), T0, T0 + 10 * DAY)
        .await
        .expect("unattributed");
    assert_eq!(unattributed.len(), 1);
    assert_eq!(unattributed[0].client_id, "bi-shared-account");
}
both_backends!(
    new_dashboard_cannot_adopt_frozen_field,
    dashboard_drill_on_sqlite,
    dashboard_drill_on_postgres
);

/// Fields nobody deprecated, the record's rendering and the evidence links.
async fn record_rendering_and_undeprecated_fields(w: World) {
    w.gov
        .create_consumer(
            consumer(
                "support-script",
                Cadence::Weekly,
                2,
                &["plan_name", "subscription_id"],
            ),
            None,
        )
        .await
        .expect("consumer");
    let gate = w
        .gov
        .removal_gate(SUBJECT, &["subscription_id".into(), "unread_field".into()])
        .await
        .expect("gate");
    let k = kinds(&gate);
    assert!(
        k.contains(&(BlockerKind::NotDeprecated, Some("support-script".into()))),
        "{k:?}"
    );
    assert!(
        gate.blockers.iter().all(|b| b.field == "subscription_id"),
        "an ungoverned field adds nothing: {k:?}"
    );

    let mut new = plan_name_deprecation();
    new.replacement = None;
    let d = w
        .gov
        .create_deprecation(new, None)
        .await
        .expect("deprecate");
    let dup = w
        .gov
        .create_deprecation(plan_name_deprecation(), None)
        .await;
    assert!(matches!(dup, Err(GovernanceError::Conflict(_))), "{dup:?}");
    let gate = w
        .gov
        .removal_gate(SUBJECT, &["plan_name".into()])
        .await
        .expect("gate");
    assert!(kinds(&gate).contains(&(BlockerKind::NoReplacement, None)));
    let skip = w
        .gov
        .change_stage(
            d.id,
            StageRequest {
                to: Stage::Removable,
                by: "billing".into(),
                note: String::new(),
            },
            None,
        )
        .await;
    assert!(matches!(skip, Err(GovernanceError::Refused(_))), "{skip:?}");

    w.at(T0 + 2 * DAY);
    w.gov
        .report_usage(
            usage("svc-support-script", 2, &["plan_name"], T0 + 2 * DAY),
            None,
        )
        .await
        .expect("usage");
    let record = w
        .gov
        .add_evidence(
            d.id,
            "support script observed reading plan_name",
            "platform",
            EvidenceBody::UsageQuery {
                query: UsageQuery {
                    subject: Some(SUBJECT.into()),
                    field: Some("plan_name".into()),
                    attribution: Attribution::Any,
                    from: T0,
                    to: T0 + 3 * DAY,
                },
                result: Vec::new(),
            },
            None,
        )
        .await
        .expect("evidence");
    match &record.evidence[0].body {
        EvidenceBody::UsageQuery { result, .. } => {
            assert_eq!(result.len(), 1, "the query ran in the store")
        }
        other => panic!("unexpected evidence {other:?}"),
    }
    w.gov
        .add_evidence(
            d.id,
            "support script migrated",
            "platform",
            EvidenceBody::SignOff {
                consumer: "support-script".into(),
                who: "ana (support lead)".into(),
                signed_at: T0 + 2 * DAY,
                statement: "display only".into(),
            },
            None,
        )
        .await
        .expect("sign-off");
    let ghost = w
        .gov
        .add_evidence(
            d.id,
            "x",
            "platform",
            EvidenceBody::SignOff {
                consumer: "ghost".into(),
                who: "x".into(),
                signed_at: T0,
                statement: String::new(),
            },
            None,
        )
        .await;
    assert!(
        matches!(ghost, Err(GovernanceError::NotFound { .. })),
        "{ghost:?}"
    );
    w.gov
        .add_evidence(
            d.id,
            "replay and restore drills clean",
            "billing",
            EvidenceBody::ReplayResult {
                sample: "fixtures/subscription/v1.json".into(),
                passed: true,
                detail: "old events decode with reader 3".into(),
            },
            None,
        )
        .await
        .expect("replay");

    let text = w.gov.render_deprecation_text(d.id).await.expect("text");
    for label in [
        "contract: subscription event plan identity; warehouse subscription fact;\n          billing API display label",
        "old promise: plan_name is a mutable display label",
        "new promise: billing_plan_id is stable identity",
        "mixed versions:",
        "discovery:",
        "migration evidence:",
        "freeze: old field absent from new examples",
        "enforcement:",
        "fallback:",
        "removal:",
        "owners: producer billing; risk approver finance-controller",
        "[1] support script observed reading plan_name",
        "sign-off by ana (support lead) for consumer 'support-script'",
        "sample replay of 'fixtures/subscription/v1.json': passed",
        "[no_replacement]",
    ] {
        assert!(text.contains(label), "missing {label:?} in:\n{text}");
    }
    let json = w.gov.render_deprecation_json(d.id).await.expect("json");
    assert_eq!(json["stage"], "announced");
    assert_eq!(json["evidence"].as_array().map(Vec::len), Some(3));
    assert!(
        json["removal_gate"]["blockers"]
            .as_array()
            .is_some_and(|b| !b.is_empty())
    );

    // Retiring a consumer drops its declaration from the gate.
    w.gov
        .retire_consumer("support-script", None)
        .await
        .expect("retire");
    assert!(w.gov.consumers(false).await.expect("list").is_empty());
    assert_eq!(w.gov.consumers(true).await.expect("list").len(), 1);
    let last = w.gov.last_reads(SUBJECT, "plan_name").await.expect("last");
    assert_eq!(last.len(), 1);
    assert_eq!(last[0].last_at, T0 + 2 * DAY);

    // Retention: pruning a year later forgets the old buckets.
    w.at(T0 + 500 * DAY);
    assert!(w.gov.prune().await.expect("prune") > 0);
    assert!(
        w.gov
            .last_reads(SUBJECT, "plan_name")
            .await
            .expect("last")
            .is_empty()
    );
}
both_backends!(
    record_rendering_and_undeprecated_fields,
    record_on_sqlite,
    record_on_postgres
);

async fn to_stage(w: &World, id: i64, to: Stage) -> Deprecation {
    w.gov
        .change_stage(
            id,
            StageRequest {
                to,
                by: "billing".into(),
                note: String::new(),
            },
            None,
        )
        .await
        .unwrap_or_else(|e| panic!("to {to}: {e}"))
}

/// Enforcement fails non-production readers and warns production ones, naming each; the
/// reads are recorded either way, and stepping back out of `enforcing` ends both.
async fn enforcement_fails_non_production_readers(w: World) {
    let d = w
        .gov
        .create_deprecation(plan_name_deprecation(), None)
        .await
        .expect("deprecate");
    // Both declare only the replacement, yet their builds still read plan_name.
    let mut staging = consumer("billing-staging", Cadence::Daily, 2, &["billing_plan_id"]);
    staging.environment = Environment::NonProduction;
    w.gov.create_consumer(staging, None).await.expect("staging");
    w.gov
        .create_consumer(
            consumer("revenue", Cadence::Daily, 2, &["billing_plan_id"]),
            None,
        )
        .await
        .expect("revenue");
    freeze(&w, d.id).await;
    to_stage(&w, d.id, Stage::Enforcing).await;
    let at = T0 + DAY;
    w.at(at);
    let kinds_of = |r: &UsageReceipt| r.findings.iter().map(|f| f.kind).collect::<Vec<_>>();
    let staged = w
        .gov
        .report_usage(usage("svc-billing-staging", 3, &["plan_name"], at), None)
        .await
        .expect("staging report");
    // (Reading a frozen field it never read before is a finding of its own.)
    assert_eq!(
        kinds_of(&staged),
        [
            FindingKind::EnforcementFailure,
            FindingKind::NewUseAfterFreeze
        ]
    );
    let message = &staged.findings[0].message;
    assert!(
        message.starts_with("Non-production consumer 'billing-staging'")
            && message.contains(&format!("deprecation #{}", d.id))
            && message.contains("move to 'billing_plan_id'"),
        "{message}"
    );
    let production = w
        .gov
        .report_usage(usage("svc-revenue", 3, &["plan_name"], at), None)
        .await
        .expect("production report");
    assert_eq!(kinds_of(&production)[0], FindingKind::EnforcementWarning);
    // The failed read is evidence like any other: it blocks the removal.
    let gate = w
        .gov
        .removal_gate(SUBJECT, &["plan_name".into()])
        .await
        .expect("gate");
    assert!(
        kinds(&gate).contains(&(BlockerKind::RecentUsage, Some("billing-staging".into()))),
        "{:?}",
        kinds(&gate)
    );
    // Enforcement is reversible: back to frozen, the same read fails nobody.
    assert_eq!(to_stage(&w, d.id, Stage::Frozen).await.stage, Stage::Frozen);
    let again = w
        .gov
        .report_usage(
            usage("svc-billing-staging", 3, &["plan_name"], at + HOUR),
            None,
        )
        .await
        .expect("report");
    assert!(
        !kinds_of(&again).iter().any(|k| matches!(
            k,
            FindingKind::EnforcementFailure | FindingKind::EnforcementWarning
        )),
        "{:?}",
        again.findings
    );
    let record = to_stage(&w, d.id, Stage::Enforcing).await;
    let history: Vec<_> = record.history.iter().map(|h| (h.from, h.to)).collect();
    assert_eq!(
        history[history.len() - 2..],
        [
            (Some(Stage::Enforcing), Stage::Frozen),
            (Some(Stage::Frozen), Stage::Enforcing)
        ]
    );
}
both_backends!(
    enforcement_fails_non_production_readers,
    non_production_enforcement_on_sqlite,
    non_production_enforcement_on_postgres
);

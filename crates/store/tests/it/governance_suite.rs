//! The governance store suite, shared by the SQLite and PostgreSQL test targets through
//! `#[path]`; run on its own it has no tests.
#![allow(dead_code)]

use covenant_store::governance::*;
use std::collections::BTreeMap;

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;
/// A fixed epoch for tests: 2026-01-01T00:00:00Z.
pub const T0: i64 = 1_767_225_600_000;

pub fn consumer(name: &str, clients: &[&str], fields: &[&str]) -> NewConsumer {
    NewConsumer {
        name: name.to_string(),
        owner: format!("{name}-team"),
        purpose: "reads billing events".to_string(),
        cadence: Cadence::Monthly,
        criticality: Criticality::High,
        contact: format!("{name}@example.com"),
        clients: clients.iter().map(|c| c.to_string()).collect(),
        reads: vec![SubjectRead {
            subject: "billing-value".to_string(),
            reader_version: Some(1),
            fields: fields.iter().map(|f| f.to_string()).collect(),
        }],
        environment: Default::default(),
    }
}

fn accept(_: &Consumer) -> GovernanceResult<()> {
    Ok(())
}

pub fn report(client: &str, consumer: Option<&str>, fields: &[&str], at: i64) -> UsageReport {
    UsageReport {
        subject: "billing-value".to_string(),
        client_id: client.to_string(),
        consumer: consumer.map(str::to_string),
        reader_schema_id: Some(1),
        writer_schema_ids: vec![1, 2],
        fields_read: fields.iter().map(|f| f.to_string()).collect(),
        records_by_version: BTreeMap::from([(1, 10), (2, 5)]),
        unknown_enum_values: BTreeMap::from([(
            "status".to_string(),
            BTreeMap::from([("PAUSED".to_string(), 2)]),
        )]),
        decode_failures: 1,
        interval_start: at - HOUR / 2,
        interval_end: at,
    }
}

pub async fn run_all(store: &dyn GovernanceStore) {
    consumers_crud(store).await;
    usage_buckets_and_queries(store).await;
    deprecations_round_trip(store).await;
    schema_sightings(store).await;
    schema_reads_add_up_per_reader_and_version(store).await;
    approvals_round_trip(store).await;
}

/// Approvals are written with an id counting up, listed per subject, revoked by an edit that
/// cannot change what they are for, and expire by their own time.
pub async fn approvals_round_trip(store: &dyn GovernanceStore) {
    let new = |subject: &str, rule: &str, expires_at: Option<i64>| NewApproval {
        subject: subject.to_string(),
        rule: rule.to_string(),
        path: Some("/fields/plan_name".to_string()),
        fingerprint: "f".repeat(64),
        schema_type: "AVRO".to_string(),
        reason: "billing-team renamed it on purpose".to_string(),
        approver: "risk-office".to_string(),
        expires_at,
    };
    let first = store
        .create_approval(&new("billing-value", "LIKELY_RENAME", None), T0, None)
        .await
        .expect("approval");
    assert_eq!((first.id, first.created_at), (1, T0));
    assert!(first.is_live(T0 + 400 * DAY));
    let second = store
        .create_approval(
            &new("orders-value", "LIKELY_RENAME", Some(T0 + DAY)),
            T0,
            None,
        )
        .await
        .expect("approval");
    assert_eq!(second.id, 2);
    assert!(second.is_live(T0 + DAY - 1));
    assert_eq!(second.state(T0 + DAY), "expired");
    let listed = store.approvals(Some("billing-value")).await.expect("list");
    assert_eq!(listed, vec![first.clone()]);
    assert_eq!(store.approvals(None).await.expect("all").len(), 2);
    let revoked = store
        .modify_approval(
            1,
            &|a: &mut Approval| {
                a.revoked = Some(Revocation {
                    by: "risk-office".to_string(),
                    at: T0 + HOUR,
                    reason: "the rename moved to a new field".to_string(),
                });
                Ok(())
            },
            None,
        )
        .await
        .expect("revoke");
    assert_eq!(revoked.state(T0 + 2 * HOUR), "revoked");
    assert_eq!(
        store.approvals(Some("billing-value")).await.expect("list"),
        vec![revoked]
    );
    let retarget = store
        .modify_approval(
            2,
            &|a: &mut Approval| {
                a.fingerprint = "0".repeat(64);
                Ok(())
            },
            None,
        )
        .await;
    assert!(
        matches!(retarget, Err(GovernanceError::Invalid(_))),
        "{retarget:?}"
    );
    assert!(matches!(
        store
            .modify_approval(99, &|_: &mut Approval| Ok(()), None)
            .await,
        Err(GovernanceError::NotFound { .. })
    ));
    assert_eq!(
        store.approvals(Some("orders-value")).await.expect("list"),
        vec![second]
    );
}

pub async fn consumers_crud(store: &dyn GovernanceStore) {
    let created = store
        .create_consumer(
            &Consumer::from_new(consumer("entitlements", &["svc-ent"], &["plan_id"]), T0),
            &accept,
            None,
        )
        .await
        .expect("create");
    assert_eq!(created.name, "entitlements");
    let again = store
        .create_consumer(
            &Consumer::from_new(consumer("entitlements", &[], &[]), T0),
            &accept,
            None,
        )
        .await;
    assert!(
        matches!(again, Err(GovernanceError::Conflict(_))),
        "{again:?}"
    );
    // A client id belongs to one consumer only.
    let stolen = store
        .create_consumer(
            &Consumer::from_new(consumer("thief", &["svc-ent"], &[]), T0),
            &accept,
            None,
        )
        .await;
    assert!(
        matches!(stolen, Err(GovernanceError::Conflict(_))),
        "{stolen:?}"
    );
    assert!(
        store.consumer("thief").await.expect("read").is_none(),
        "a refused create leaves nothing"
    );
    // A check that refuses leaves nothing behind.
    let refuse = |_: &Consumer| Err(GovernanceError::Refused("no".to_string()));
    let refused = store
        .create_consumer(
            &Consumer::from_new(consumer("dashboard", &["svc-dash"], &[]), T0),
            &refuse,
            None,
        )
        .await;
    assert!(matches!(refused, Err(GovernanceError::Refused(_))));
    assert_eq!(
        store.consumer_for_client("svc-dash").await.expect("client"),
        None
    );

    assert_eq!(
        store.consumer_for_client("svc-ent").await.expect("client"),
        Some("entitlements".to_string())
    );
    let updated = store
        .modify_consumer(
            "entitlements",
            &|c| {
                c.owner = "platform".to_string();
                c.clients.push("svc-ent-2".to_string());
                Ok(())
            },
            None,
        )
        .await
        .expect("modify");
    assert_eq!(updated.owner, "platform");
    let read = store
        .consumer("entitlements")
        .await
        .expect("read")
        .expect("present");
    assert_eq!(read, updated);
    assert_eq!(
        store
            .consumer_for_client("svc-ent-2")
            .await
            .expect("client"),
        Some("entitlements".to_string())
    );
    let missing = store.modify_consumer("nobody", &|_| Ok(()), None).await;
    assert!(matches!(missing, Err(GovernanceError::NotFound { .. })));
    // Retiring releases the client ids.
    store
        .modify_consumer(
            "entitlements",
            &|c| {
                c.retired_at = Some(T0 + DAY);
                Ok(())
            },
            None,
        )
        .await
        .expect("retire");
    assert_eq!(
        store.consumer_for_client("svc-ent").await.expect("client"),
        None
    );
    let all = store.consumers().await.expect("list");
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].retired_at, Some(T0 + DAY));
}

pub async fn usage_buckets_and_queries(store: &dyn GovernanceStore) {
    let t = T0 + 10 * DAY;
    store
        .record_usage(
            &report("svc-exp", Some("export"), &["plan_name"], t),
            Some("export"),
            &[],
            None,
        )
        .await
        .expect("usage");
    store
        .record_usage(
            &report(
                "svc-exp",
                Some("export"),
                &["plan_name", "plan_id"],
                t + 60_000,
            ),
            Some("export"),
            &[],
            None,
        )
        .await
        .expect("usage");
    store
        .record_usage(
            &report("svc-exp", Some("export"), &["plan_id"], t + 3 * DAY),
            Some("export"),
            &[],
            None,
        )
        .await
        .expect("usage");
    store
        .record_usage(
            &report("legacy-client", None, &["plan_name"], t + 2 * DAY),
            None,
            &[],
            None,
        )
        .await
        .expect("usage");

    let by_field = |field: &str, attribution: Attribution, from: i64, to: i64| UsageQuery {
        subject: Some("billing-value".to_string()),
        field: Some(field.to_string()),
        attribution,
        from,
        to,
    };
    // Two reports in one hour land in one bucket.
    let rows = store
        .field_usage(&by_field(
            "plan_name",
            Attribution::Consumer("export".into()),
            T0,
            t + 30 * DAY,
        ))
        .await
        .expect("query");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].reads, 2);
    assert_eq!(rows[0].last_at, t + 60_000);
    assert_eq!(rows[0].consumer.as_deref(), Some("export"));
    assert_eq!(rows[0].reader_schema_id, Some(1));

    // Outside the range: nothing.
    let later = store
        .field_usage(&by_field(
            "plan_name",
            Attribution::Consumer("export".into()),
            t + DAY,
            t + 30 * DAY,
        ))
        .await
        .expect("query");
    assert!(later.is_empty(), "{later:?}");

    // Unattributed usage is kept apart.
    let unattributed = store
        .field_usage(&by_field(
            "plan_name",
            Attribution::Unattributed,
            T0,
            t + 30 * DAY,
        ))
        .await
        .expect("query");
    assert_eq!(unattributed.len(), 1);
    assert_eq!(unattributed[0].client_id, "legacy-client");
    assert_eq!(unattributed[0].consumer, None);

    let any = store
        .field_usage(&by_field("plan_name", Attribution::Any, T0, t + 30 * DAY))
        .await
        .expect("query");
    assert_eq!(any.len(), 2);

    let readers = store
        .reader_usage(&UsageQuery {
            subject: Some("billing-value".into()),
            field: None,
            attribution: Attribution::Any,
            from: T0,
            to: t + 30 * DAY,
        })
        .await
        .expect("readers");
    let export_reports: u64 = readers
        .iter()
        .filter(|r| r.consumer.as_deref() == Some("export"))
        .map(|r| r.reports)
        .sum();
    assert_eq!(export_reports, 3);

    let counts = store
        .usage_counts(&UsageQuery {
            subject: Some("billing-value".into()),
            field: None,
            attribution: Attribution::Any,
            from: T0,
            to: t + 30 * DAY,
        })
        .await
        .expect("counts");
    assert_eq!(counts.records_by_version.get(&1), Some(&40));
    assert_eq!(counts.records_by_version.get(&2), Some(&20));
    assert_eq!(counts.unknown_enum_values["status"]["PAUSED"], 8);
    assert_eq!(counts.writer_schema_ids.get(&2), Some(&4));
    assert_eq!(counts.decode_failures, 4);

    let since = store.reporting_since("billing-value").await.expect("since");
    let export_since = since
        .iter()
        .find(|s| s.consumer.as_deref() == Some("export"))
        .expect("export");
    assert_eq!(export_since.first_at, t - HOUR / 2);

    let finding = UsageFinding {
        kind: FindingKind::UnattributedUsage,
        at: t + 2 * DAY,
        subject: "billing-value".into(),
        field: None,
        client_id: "legacy-client".into(),
        consumer: None,
        deprecation_id: None,
        message: "No consumer owns client 'legacy-client'.".into(),
    };
    store
        .record_findings(std::slice::from_ref(&finding))
        .await
        .expect("findings");
    assert_eq!(
        store.findings(T0, t + 30 * DAY).await.expect("findings"),
        vec![finding]
    );

    // Pruning drops whole buckets older than the cutoff and keeps the rest.
    let removed = store.prune_usage(t + DAY).await.expect("prune");
    assert!(removed >= 2, "removed {removed}");
    let left = store
        .field_usage(&by_field("plan_name", Attribution::Any, T0, t + 30 * DAY))
        .await
        .expect("query");
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].client_id, "legacy-client");
    let since = store.reporting_since("billing-value").await.expect("since");
    let export_since = since
        .iter()
        .find(|s| s.consumer.as_deref() == Some("export"))
        .expect("export");
    assert!(export_since.first_at > t + DAY);
}

pub async fn deprecations_round_trip(store: &dyn GovernanceStore) {
    let new = NewDeprecation {
        target: DeprecationTarget::Field {
            subject: "billing-value".into(),
            path: "plan_name".into(),
        },
        contract: "subscription event plan identity".into(),
        old_promise: "plan_name is a mutable display label".into(),
        new_promise: "billing_plan_id is stable identity".into(),
        replacement: Some("billing_plan_id".into()),
        owners: vec![Owner {
            role: "producer".into(),
            name: "billing".into(),
        }],
        window_start: T0,
        window_end: T0 + 90 * DAY,
        sunset: Some(T0 + 120 * DAY),
        notes: RecordNotes::default(),
        announced_by: "billing".into(),
    };
    let first = store
        .create_deprecation(&new, T0, None)
        .await
        .expect("create");
    let stored = store
        .deprecation(first.id)
        .await
        .expect("read")
        .expect("present");
    assert_eq!(stored.sunset, Some(T0 + 120 * DAY), "the sunset is stored");
    let mut other = new.clone();
    other.sunset = None;
    other.target = DeprecationTarget::Subject {
        subject: "old-subject".into(),
    };
    let second = store
        .create_deprecation(&other, T0, None)
        .await
        .expect("create");
    assert_ne!(first.id, second.id);
    assert_eq!(first.stage, Stage::Announced);
    assert_eq!(first.history.len(), 1);

    let changed = store
        .modify_deprecation(
            first.id,
            &|d| {
                d.history.push(StageChange {
                    from: Some(d.stage),
                    to: Stage::Frozen,
                    at: T0 + DAY,
                    by: "billing".into(),
                    note: String::new(),
                });
                d.stage = Stage::Frozen;
                Ok(())
            },
            None,
        )
        .await
        .expect("modify");
    assert_eq!(changed.frozen_at(), Some(T0 + DAY));
    assert_eq!(
        store.deprecation(first.id).await.expect("read"),
        Some(changed.clone())
    );

    // A refused edit changes nothing.
    let refused = store
        .modify_deprecation(
            first.id,
            &|d| {
                d.stage = Stage::Removed;
                Err(GovernanceError::Refused("not yet".into()))
            },
            None,
        )
        .await;
    assert!(matches!(refused, Err(GovernanceError::Refused(_))));
    assert_eq!(
        store
            .deprecation(first.id)
            .await
            .expect("read")
            .map(|d| d.stage),
        Some(Stage::Frozen)
    );
    // The target is fixed.
    let retarget = store
        .modify_deprecation(
            first.id,
            &|d| {
                d.target = DeprecationTarget::Subject {
                    subject: "x".into(),
                };
                Ok(())
            },
            None,
        )
        .await;
    assert!(matches!(retarget, Err(GovernanceError::Invalid(_))));
    // A target holds one deprecation that is not removed; the store checks in its write.
    let again = store.create_deprecation(&new, T0 + DAY, None).await;
    assert!(
        matches!(&again, Err(GovernanceError::Conflict(m)) if m.contains(&format!("#{}", first.id))),
        "{again:?}"
    );

    let of_subject = store
        .deprecations(Some("billing-value"))
        .await
        .expect("list");
    assert_eq!(of_subject.len(), 1);
    assert_eq!(store.deprecations(None).await.expect("list").len(), 2);
    assert!(store.deprecation(9999).await.expect("read").is_none());
    let missing = store.modify_deprecation(9999, &|_| Ok(()), None).await;
    assert!(matches!(missing, Err(GovernanceError::NotFound { .. })));
}

/// The last use of each schema of a subject: reader ids exactly, writer ids and versions at
/// bucket precision, bounded below by `from`, other subjects and empty counts left out.
pub async fn schema_sightings(store: &dyn GovernanceStore) {
    let subject = "sightings-value";
    let sighting = |client: &str, reader: Option<i64>, writers: &[i64], at: i64| UsageReport {
        subject: subject.to_string(),
        client_id: client.to_string(),
        reader_schema_id: reader,
        writer_schema_ids: writers.to_vec(),
        records_by_version: BTreeMap::from([(7, 3), (8, 0)]),
        interval_start: at - HOUR / 4,
        interval_end: at,
        ..UsageReport::default()
    };
    let early = T0 + 10 * DAY + 5 * 60_000;
    let late = T0 + 20 * DAY + 30 * 60_000;
    let old = T0 + DAY;
    for (report, consumer) in [
        (sighting("s-a", Some(11), &[21, 22], early), None),
        (sighting("s-a", Some(11), &[21], late), None),
        (sighting("s-b", None, &[23], early), Some("reader-b")),
        (sighting("s-c", Some(12), &[24], old), None),
    ] {
        store
            .record_usage(&report, consumer, &[], None)
            .await
            .expect("record");
    }
    let mut elsewhere = sighting("s-a", Some(13), &[25], late);
    elsewhere.subject = "another-value".to_string();
    store
        .record_usage(&elsewhere, None, &[], None)
        .await
        .expect("record");

    let seen = store
        .schema_sightings(subject, T0 + 5 * DAY)
        .await
        .expect("sightings");
    assert_eq!(
        seen.by_schema_id,
        BTreeMap::from([(11, late), (21, late), (22, early), (23, early)]),
        "reader 12 and writer 24 are older than `from`; 13 and 25 are another subject's"
    );
    assert_eq!(seen.by_version, BTreeMap::from([(7, late)]));

    let all = store.schema_sightings(subject, 0).await.expect("sightings");
    assert_eq!(all.by_schema_id.get(&12), Some(&old));
    assert_eq!(all.by_schema_id.get(&24), Some(&old));
    assert!(
        store
            .schema_sightings("nobody-value", 0)
            .await
            .expect("sightings")
            .by_schema_id
            .is_empty()
    );
}

/// Fetches recorded in batches add up per hour bucket and are summed per reader and version
/// when read back, from a time on.
pub async fn schema_reads_add_up_per_reader_and_version(store: &dyn GovernanceStore) {
    let hour = 3_600_000;
    let base = 1_000 * hour;
    let read = |reader: &str, version: i64, reads: u64, at: i64| SchemaRead {
        subject: "reads-s".into(),
        version,
        schema_id: 10 + version,
        reader: reader.into(),
        reads,
        first_at: at,
        last_at: at + 10,
    };
    store
        .record_reads(&[read("alice", 1, 3, base), read("bob", 1, 1, base + 5)])
        .await
        .expect("first batch");
    store
        .record_reads(&[
            read("alice", 1, 2, base + 20),
            read("alice", 1, 4, base + hour),
        ])
        .await
        .expect("second batch");
    store
        .record_reads(&[read("alice", 2, 1, base + 2 * hour)])
        .await
        .expect("third batch");
    let all = store.schema_reads("reads-s", 0).await.expect("reads");
    let summary: Vec<(&str, i64, i64, u64, i64, i64)> = all
        .iter()
        .map(|r| {
            (
                r.reader.as_str(),
                r.version,
                r.schema_id,
                r.reads,
                r.first_at,
                r.last_at,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("alice", 1, 11, 9, base, base + hour + 10),
            ("alice", 2, 12, 1, base + 2 * hour, base + 2 * hour + 10),
            ("bob", 1, 11, 1, base + 5, base + 15),
        ]
    );
    let recent = store
        .schema_reads("reads-s", base + hour)
        .await
        .expect("recent reads");
    assert_eq!(recent.len(), 2, "{recent:?}");

    // One batch of many entries, some of one bucket, version and reader: written by several
    // statements, each entry counted once.
    let many_at = base + 5 * hour;
    let many: Vec<SchemaRead> = (0..150)
        .map(|i| SchemaRead {
            subject: "reads-many".into(),
            reader: format!("reader-{:03}", i % 50),
            ..read("", 1, 1 + (i % 3), many_at + i as i64)
        })
        .collect();
    store.record_reads(&many).await.expect("many");
    let back = store
        .schema_reads("reads-many", 0)
        .await
        .expect("many back");
    assert_eq!(back.len(), 50);
    for r in &back {
        let n: usize = r.reader["reader-".len()..].parse().expect("reader number");
        let mine: Vec<&SchemaRead> = many.iter().filter(|m| m.reader == r.reader).collect();
        let total: u64 = mine.iter().map(|m| m.reads).sum();
        assert_eq!(r.reads, total, "{}", r.reader);
        assert_eq!(r.first_at, many_at + n as i64, "{}", r.reader);
        let last = mine.iter().map(|m| m.last_at).max().expect("an entry");
        assert_eq!(r.last_at, last, "{}", r.reader);
    }
    assert!(
        store
            .schema_reads("other", 0)
            .await
            .expect("none")
            .is_empty()
    );
}

/// A snapshot of a filled store restores row for row into an empty one (same snapshot, same
/// query answers), and restoring it again, or into its own store, changes nothing.
pub async fn snapshot_restores(source: &dyn GovernanceStore, target: &dyn GovernanceStore) {
    let snapshot = source.snapshot().await.expect("snapshot");
    assert!(!snapshot.consumers.is_empty() && !snapshot.deprecations.is_empty());
    assert!(!snapshot.usage_readers.is_empty() && !snapshot.usage_counts.is_empty());
    assert!(!snapshot.usage_fields.is_empty() && !snapshot.schema_reads.is_empty());
    assert!(!snapshot.approvals.is_empty());
    let rows = snapshot.usage_readers.len()
        + snapshot.usage_fields.len()
        + snapshot.usage_counts.len()
        + snapshot.schema_reads.len();
    let first = target.restore(&snapshot).await.expect("restore");
    assert_eq!(
        (
            first.consumers,
            first.deprecations,
            first.approvals,
            first.findings,
            first.usage_rows,
            first.present
        ),
        (
            snapshot.consumers.len(),
            snapshot.deprecations.len(),
            snapshot.approvals.len(),
            snapshot.findings.len(),
            rows,
            0
        )
    );
    assert_eq!(target.snapshot().await.expect("snapshot"), snapshot);
    let query = UsageQuery {
        subject: Some("billing-value".to_string()),
        from: T0 - 400 * DAY,
        to: T0 + 400 * DAY,
        ..UsageQuery::default()
    };
    assert_eq!(
        target.field_usage(&query).await.expect("usage"),
        source.field_usage(&query).await.expect("usage")
    );
    assert_eq!(
        target.usage_counts(&query).await.expect("counts"),
        source.usage_counts(&query).await.expect("counts")
    );
    for client in snapshot
        .consumers
        .iter()
        .filter(|c| c.is_active())
        .flat_map(|c| &c.clients)
    {
        assert_eq!(
            target.consumer_for_client(client).await.expect("client"),
            source.consumer_for_client(client).await.expect("client"),
            "client ids are bound again"
        );
    }
    for store in [target, source] {
        let again = store.restore(&snapshot).await.expect("restore again");
        assert_eq!(
            (
                again.consumers,
                again.deprecations,
                again.approvals,
                again.findings,
                again.usage_rows
            ),
            (0, 0, 0, 0, 0)
        );
        assert!(again.conflicts.is_empty(), "{:?}", again.conflicts);
        assert_eq!(
            store.snapshot().await.expect("snapshot"),
            snapshot,
            "one copy"
        );
    }
    let mut other = snapshot.clone();
    other.deprecations[0].old_promise = "something else".to_string();
    let clash = target.restore(&other).await.expect("restore");
    assert_eq!(clash.conflicts.len(), 1, "{:?}", clash.conflicts);
    assert_eq!(
        target.snapshot().await.expect("snapshot"),
        snapshot,
        "left as it was"
    );
}

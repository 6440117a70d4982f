//! What the compatibility path reads from governance: which live consumers declare a field,
//! and when each schema of a subject was last reported in use.

use crate::{Governance, GovernanceResult, SchemaSightings};
use std::collections::{BTreeMap, BTreeSet};

impl Governance {
    /// Field path (normalized dotted form, e.g. `customer.id`) to the live consumers that
    /// declare reading it from `subject`, names sorted.
    pub async fn consumers_by_field(
        &self,
        subject: &str,
    ) -> GovernanceResult<BTreeMap<String, Vec<String>>> {
        let mut by_field: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let consumers = self.consumers(false).await?;
        let whole = self.whole_version_fields(subject, &consumers).await;
        for consumer in consumers {
            let Some(read) = consumer.read_of(subject) else {
                continue;
            };
            // A whole version (`S@N`) declares each of its fields.
            let fields = match (read.fields.is_empty(), read.reader_version) {
                (true, Some(v)) => whole.get(&v).unwrap_or(&read.fields),
                _ => &read.fields,
            };
            for field in fields {
                by_field
                    .entry(field.clone())
                    .or_default()
                    .insert(consumer.name.clone());
            }
        }
        Ok(by_field
            .into_iter()
            .map(|(field, names)| (field, names.into_iter().collect()))
            .collect())
    }

    /// The schemas of `subject` reported in use within the usage retention, and when last.
    pub async fn schema_sightings(&self, subject: &str) -> GovernanceResult<SchemaSightings> {
        let from = self.now().saturating_sub(self.config().retention_ms);
        self.store().schema_sightings(subject, from).await
    }
}

#[cfg(test)]
mod tests {
    use crate::{
        Cadence, Criticality, Governance, GovernanceConfig, ManualClock, NewConsumer, SubjectRead,
        UsageReport,
    };
    use covenant_store::SqliteGovernanceStore;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    const DAY: i64 = 86_400_000;
    const T0: i64 = 1_767_225_600_000;

    fn consumer(name: &str, subject: &str, fields: &[&str]) -> NewConsumer {
        NewConsumer {
            name: name.to_string(),
            owner: "case-team".to_string(),
            purpose: "case dashboards".to_string(),
            cadence: Cadence::Daily,
            criticality: Criticality::Medium,
            contact: "cases@example.com".to_string(),
            clients: vec![format!("{name}-client")],
            reads: vec![SubjectRead {
                subject: subject.to_string(),
                reader_version: Some(1),
                fields: fields.iter().map(|f| f.to_string()).collect(),
            }],
            environment: Default::default(),
        }
    }

    fn governance(dir: &tempfile::TempDir, clock: Arc<ManualClock>) -> Governance {
        let store = SqliteGovernanceStore::open(dir.path()).expect("store");
        Governance::new(Arc::new(store), clock).with_config(GovernanceConfig {
            retention_ms: 30 * DAY,
            unattributed_lookback_ms: 7 * DAY,
        })
    }

    #[tokio::test]
    async fn live_declarations_name_consumers_by_normalized_field() {
        let dir = tempfile::tempdir().expect("dir");
        let gov = governance(&dir, Arc::new(ManualClock::new(T0)));
        gov.create_consumer(
            consumer(
                "dashboard",
                "case-value",
                &["status", "/fields/owner/fields/id"],
            ),
            None,
        )
        .await
        .expect("dashboard");
        gov.create_consumer(consumer("export", "case-value", &["status"]), None)
            .await
            .expect("export");
        gov.create_consumer(consumer("elsewhere", "other-value", &["status"]), None)
            .await
            .expect("elsewhere");
        gov.create_consumer(consumer("gone", "case-value", &["status"]), None)
            .await
            .expect("gone");
        gov.retire_consumer("gone", None).await.expect("retire");

        let by_field = gov.consumers_by_field("case-value").await.expect("fields");
        assert_eq!(
            by_field,
            BTreeMap::from([
                ("owner.id".to_string(), vec!["dashboard".to_string()]),
                (
                    "status".to_string(),
                    vec!["dashboard".to_string(), "export".to_string()]
                ),
            ])
        );
        assert!(
            gov.consumers_by_field("nobody-value")
                .await
                .expect("none")
                .is_empty()
        );
    }

    #[tokio::test]
    async fn sightings_stop_at_the_retention() {
        let dir = tempfile::tempdir().expect("dir");
        let clock = Arc::new(ManualClock::new(T0));
        let gov = governance(&dir, clock.clone());
        let report = |reader: i64, writer: i64, at: i64| UsageReport {
            subject: "case-value".to_string(),
            client_id: "reader-1".to_string(),
            reader_schema_id: Some(reader),
            writer_schema_ids: vec![writer],
            interval_start: at,
            interval_end: at,
            ..UsageReport::default()
        };
        gov.report_usage(report(1, 2, T0), None)
            .await
            .expect("report");
        gov.report_usage(report(3, 3, T0 + 20 * DAY), None)
            .await
            .expect("report");

        clock.set(T0 + 25 * DAY);
        let seen = gov.schema_sightings("case-value").await.expect("sightings");
        assert_eq!(
            seen.by_schema_id,
            BTreeMap::from([(1, T0), (2, T0), (3, T0 + 20 * DAY)])
        );

        clock.set(T0 + 40 * DAY);
        let seen = gov.schema_sightings("case-value").await.expect("sightings");
        assert_eq!(seen.by_schema_id, BTreeMap::from([(3, T0 + 20 * DAY)]));
    }
}

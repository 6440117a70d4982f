//! A column the table is partitioned by was dropped or changed type.

use super::{Change, Pair, type_change};
use covenant_engine::{Finding, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "ICEBERG_PARTITION_SOURCE_CHANGED",
    format: "iceberg",
    category: "key",
    default_severity: Severity::Error,
    summary: "A source column of the table's partition spec (given by table metadata) was dropped, changed type, or was promoted under a transform whose result would change; Iceberg refuses to drop a partition source, and the partition values already written would no longer match.",
    bad_example: "partition-spec: [{\"source-id\": 2, \"transform\": \"identity\", \"name\": \"exchange\"}]; v2 drops id 2",
    good_example: "evolve the partition spec first (ALTER TABLE t DROP PARTITION FIELD exchange), then drop the column",
    hint: "Change the partition spec first (ALTER TABLE ... DROP PARTITION FIELD / REPLACE PARTITION FIELD), then change or drop the column.",
    peers: &["iceberg:UpdateSchema.deleteColumn"],
};

/// Transforms whose result does not change when the source is promoted: an int and a long of
/// the same value hash, truncate and compare alike, and so do decimals of the same scale.
const PROMOTION_SAFE: [&str; 3] = ["identity", "void", "bucket"];

pub(crate) fn check(pair: &Pair<'_>, out: &mut Vec<Finding>) {
    let Some(spec) = &pair.old_schema.partition else {
        return;
    };
    for pf in spec {
        let Some(old) = pair.old.get(pf.source_id) else {
            continue;
        };
        let Some(new) = pair.new.get(pf.source_id) else {
            out.push(Finding::new(
                &RULE,
                old.pointer.clone(),
                format!("Column '{}' (id {}) is the source of partition field '{}' ({}) and was dropped.", old.names.join("."), pf.source_id, pf.name, pf.transform),
            ));
            continue;
        };
        let safe = PROMOTION_SAFE.iter().any(|t| pf.transform.starts_with(t))
            || pf.transform.starts_with("truncate");
        let why = match type_change(old.ty, new.ty) {
            Some(Change::Incompatible(_)) => "changed type",
            Some(Change::Promoted) if !safe => "was promoted, which changes the transform's result",
            _ => continue,
        };
        out.push(Finding::new(
            &RULE,
            new.pointer.clone(),
            format!("Column '{}' (id {}) is the source of partition field '{}' ({}) and {why} from {} to {}.", new.names.join("."), pf.source_id, pf.name, pf.transform, old.ty, new.ty),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::*;

    fn metadata(fields: &str) -> String {
        format!(
            r#"{{"format-version":2,"last-column-id":3,"current-schema-id":0,"schemas":[{{"type":"struct","schema-id":0,"fields":{fields}}}],"default-spec-id":0,"partition-specs":[{{"spec-id":0,"fields":[{{"source-id":2,"field-id":1000,"name":"exchange","transform":"identity"}}]}}]}}"#
        )
    }

    #[test]
    fn dropping_a_partition_source_is_refused() {
        let old = metadata(
            r#"[{"id":1,"name":"symbol","required":true,"type":"string"},{"id":2,"name":"exchange","required":true,"type":"string"}]"#,
        );
        let new = schema(&[(1, "symbol", true, "string")]);
        let f = fires(&RULE, &old, &new);
        assert_eq!(f.path, "/fields/exchange");
        assert!(
            f.message
                .contains("partition field 'exchange' (identity) and was dropped"),
            "{}",
            f.message
        );
        let renamed = schema(&[(1, "symbol", true, "string"), (2, "venue", true, "string")]);
        silent(&RULE, &old, &renamed);
    }
}

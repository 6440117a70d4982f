//! A table's partition spec changed: Iceberg applies it as metadata (old files keep their
//! layout, new writes use the new spec), so nothing fails, and yet file layout, partition
//! pruning, compaction, job performance and cost all change. An operational change.

use crate::pair::Pair;
use covenant_engine::{Finding, RuleSpec, Severity};

/// Root annotations the Iceberg field tree carries (`covenant_iceberg::PARTITION_SPEC`).
const SPEC: &str = "iceberg:partition-spec";
const SPEC_TEXT: &str = "iceberg:partition-spec-text";

pub static RULE: RuleSpec = RuleSpec {
    id: "ICEBERG_PARTITION_CHANGED",
    format: "iceberg",
    category: "semantic",
    // An error under the `covenant` preset: "table format capabilities are not the same as
    // data product compatibility", and a partition key change is reviewed as breaking unless
    // proven otherwise. Source: schema-evolution-rules §12, Rule 10.
    default_severity: Severity::Error,
    summary: "The table's default partition spec changed (given by table metadata): Iceberg evolves it as metadata only, so old files keep their layout while new writes use the new one; partition pruning, file layout, compaction, job performance and cost change for every query and job that relies on the old partitioning. Source: schema-evolution-rules §12, Rule 10.",
    bad_example: "v1 partition-spec: identity(exchange)\nv2 partition-spec: day(valid_from)",
    good_example: "ALTER TABLE refdata.silver_instruments REPLACE PARTITION FIELD exchange WITH day(valid_from) AS valid_from_day;\nplanned with the owners of the queries and jobs that filter on exchange, compaction scheduled, scan cost watched",
    hint: "Treat it as an operational change: list the queries and jobs that filter on the old partition columns, plan the `ALTER TABLE ... REPLACE / ADD / DROP PARTITION FIELD` statements (`covenant plan` prints them), schedule compaction or a rewrite of recent data, and watch scan cost and job times after it; or keep the current spec.",
    peers: &[],
};

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    if pair.format() != "iceberg" {
        return Vec::new();
    }
    let (old, new) = (&pair.old.root, &pair.new.root);
    let (Some(before), Some(after)) = (old.annotations.get(SPEC), new.annotations.get(SPEC)) else {
        return Vec::new();
    };
    if before == after {
        return Vec::new();
    }
    let text = |n: &covenant_engine::Node, key: &String| {
        n.annotations.get(SPEC_TEXT).cloned().unwrap_or(key.clone())
    };
    vec![Finding::new(
        &RULE,
        "/partition-spec",
        format!(
            "The table's partition spec changed from '{}' to '{}'. Iceberg applies it to new writes only: files already written keep the old layout, queries that filter on the old partition columns prune only those files, planning is split per spec, compaction must rewrite data into the new layout, and job times and scan cost change.",
            text(old, before),
            text(new, after)
        ),
    )]
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;
    use covenant_engine::FieldTree;

    fn table(spec: &str, text: &str) -> FieldTree {
        let mut tree = avro("t", vec![field("exchange", "string")]);
        tree.format = "ICEBERG".into();
        tree.root
            .annotations
            .insert("iceberg:partition-spec".into(), spec.into());
        tree.root
            .annotations
            .insert("iceberg:partition-spec-text".into(), text.into());
        tree
    }

    #[test]
    fn identity_exchange_to_day_valid_from() {
        let old = table("identity(2)", "identity(exchange)");
        let new = table("day(3)", "day(valid_from)");
        let findings = run("ICEBERG_PARTITION_CHANGED", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/partition-spec");
        assert!(
            findings[0]
                .message
                .contains("from 'identity(exchange)' to 'day(valid_from)'")
        );
        assert!(findings[0].message.contains("compaction"));
        assert!(findings[0].is_error());
        // A renamed source column is not a partition change.
        let renamed = table("identity(2)", "identity(venue)");
        assert!(run("ICEBERG_PARTITION_CHANGED", &old, &renamed, &none()).is_empty());
        // The other semantic rules do not read the annotations as a changed meaning.
        assert!(run("MEANING_CHANGED", &old, &new, &none()).is_empty());
    }
}

//! Columns reordered within their struct: Iceberg binds by id, so order is presentation.

use super::{Pair, describe};
use covenant_engine::{Finding, RuleSpec, Severity};
use std::collections::{BTreeSet, HashMap};

pub static RULE: RuleSpec = RuleSpec {
    id: "ICEBERG_COLUMN_MOVED",
    format: "iceberg",
    category: "structural",
    default_severity: Severity::Info,
    summary: "A column moved to another position within its struct; Iceberg reads by id, but `SELECT *` and positional consumers (CSV exports, INSERT without a column list) see the new order.",
    bad_example: "v1: [symbol, status, tick_size]\nv2: [symbol, tick_size, status]",
    good_example: "ALTER TABLE t ALTER COLUMN tick_size AFTER symbol, with positional consumers told",
    hint: "Make sure no consumer depends on column positions (INSERT without a column list, SELECT * into a fixed layout).",
    peers: &["iceberg:UpdateSchema.moveAfter"],
};

pub(crate) fn check(pair: &Pair<'_>, out: &mut Vec<Finding>) {
    let parents: BTreeSet<Option<i32>> = pair.new.iter().map(|c| c.parent).collect();
    for parent in parents {
        if parent.is_some_and(|p| pair.old.get(p).is_none()) {
            continue;
        }
        let new_order = pair.new.children_of(parent);
        let old_order: Vec<i32> = pair
            .old
            .children_of(parent)
            .into_iter()
            .filter(|id| pair.new.get(*id).is_some_and(|c| c.parent == parent))
            .collect();
        let new_common: Vec<i32> = new_order
            .into_iter()
            .filter(|id| pair.old.get(*id).is_some_and(|c| c.parent == parent))
            .collect();
        for id in moved(&old_order, &new_common) {
            if let Some(c) = pair.new.get(id) {
                out.push(Finding::new(
                    &RULE,
                    c.pointer.clone(),
                    format!(
                        "Column {} moved to another position among its siblings.",
                        describe(c)
                    ),
                ));
            }
        }
    }
}

/// The ids that moved: those outside a longest run kept in the same relative order, so
/// moving one column to the front reports that column, not every column it passed.
pub(crate) fn moved(old: &[i32], new: &[i32]) -> Vec<i32> {
    let at: HashMap<i32, usize> = new.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let seq: Vec<usize> = old.iter().filter_map(|id| at.get(id).copied()).collect();
    // Longest increasing subsequence with predecessor links, O(n log n).
    let mut tails: Vec<usize> = Vec::new();
    let mut prev = vec![usize::MAX; seq.len()];
    for i in 0..seq.len() {
        let k = tails.partition_point(|&t| seq[t] < seq[i]);
        if k > 0 {
            prev[i] = tails[k - 1];
        }
        if k == tails.len() {
            tails.push(i);
        } else {
            tails[k] = i;
        }
    }
    let mut keep = vec![false; seq.len()];
    let mut i = tails.last().copied().unwrap_or(usize::MAX);
    while i != usize::MAX {
        keep[i] = true;
        i = prev[i];
    }
    let mut out: Vec<i32> = seq
        .iter()
        .zip(keep)
        .filter(|(_, k)| !k)
        .map(|(p, _)| new[*p])
        .collect();
    out.sort_by_key(|id| at[id]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::*;

    #[test]
    fn moving_one_column_reports_only_that_column() {
        let old = schema(&[
            (1, "a", true, "int"),
            (2, "b", true, "int"),
            (3, "c", true, "int"),
        ]);
        let new = schema(&[
            (3, "c", true, "int"),
            (1, "a", true, "int"),
            (2, "b", true, "int"),
        ]);
        assert_eq!(fires(&RULE, &old, &new).path, "/fields/c");
        assert!(backward(&old, &new).iter().all(|f| !f.is_error()));
        silent(&RULE, &old, &old);
        assert_eq!(moved(&[1, 2, 3, 4], &[2, 1, 4, 3]).len(), 2);
    }
}

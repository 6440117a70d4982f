//! What consumers' declarations say about a subject's fields, wherever it counts: a read of a
//! whole version (`S@1`, no field list) declares every field of that version (in the removal
//! gate, the entry to `enforcing` and the consumers named in findings, as in the freeze), and
//! a declared field must exist in some version of the subject (the nearest names are
//! suggested when it does not).

use crate::{Governance, GovernanceError, GovernanceResult, SubjectRead};
use covenant_store::governance::{Consumer, normalize_field_path};
use std::collections::{BTreeMap, BTreeSet};

impl Governance {
    /// The fields of every version some live consumer reads as a whole (`S@N`), by version.
    pub(crate) async fn whole_version_fields(
        &self,
        subject: &str,
        consumers: &[Consumer],
    ) -> BTreeMap<i64, Vec<String>> {
        let versions: BTreeSet<i64> = consumers
            .iter()
            .filter(|c| c.is_active())
            .filter_map(|c| c.read_of(subject))
            .filter(|r| r.fields.is_empty())
            .filter_map(|r| r.reader_version)
            .collect();
        let mut out = BTreeMap::new();
        for version in versions {
            if let Some(fields) = self.schema_fields.version_fields(subject, version).await {
                out.insert(
                    version,
                    fields.iter().map(|f| normalize_field_path(f)).collect(),
                );
            }
        }
        out
    }

    /// Refuses a declaration naming a field no version of its subject has, with the nearest
    /// names the subject does have. Subjects without versions (or without schema knowledge)
    /// are not checked: nothing says which fields they will have.
    pub(crate) async fn check_declared_fields(
        &self,
        consumer: &str,
        reads: &[SubjectRead],
    ) -> GovernanceResult<()> {
        let mut problems = Vec::new();
        for read in reads.iter().filter(|r| !r.fields.is_empty()) {
            let Some(known) = self.schema_fields.subject_fields(&read.subject).await else {
                continue;
            };
            let known: BTreeSet<String> = known.iter().map(|f| normalize_field_path(f)).collect();
            if known.is_empty() {
                continue;
            }
            for field in read.fields.iter().filter(|f| !known.contains(*f)) {
                let near = nearest(field, &known);
                let hint = if near.is_empty() {
                    let some: Vec<&str> = known.iter().take(10).map(String::as_str).collect();
                    format!("its fields include: {}", some.join(", "))
                } else {
                    format!("did you mean {}?", quoted(&near))
                };
                problems.push(format!(
                    "Consumer '{consumer}' declares field '{field}' of subject '{}', which no version of the subject has; {hint}",
                    read.subject
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(GovernanceError::Invalid(problems.join("\n")))
        }
    }
}

fn quoted(names: &[&str]) -> String {
    let names: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    match names.as_slice() {
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
        [] => String::new(),
    }
}

/// Up to three known names closest to `field` by edit distance (at most a third of its
/// length, and at least 2), nearest first; the last path segment is compared too, so a
/// nested field's bare name finds it.
pub(crate) fn nearest<'a>(field: &str, known: &'a BTreeSet<String>) -> Vec<&'a str> {
    let bound = (field.chars().count() / 3).max(2);
    let last = |p: &str| p.rsplit('.').next().unwrap_or(p).to_string();
    let mut scored: Vec<(usize, &str)> = known
        .iter()
        .map(|k| {
            let whole = distance(&field.to_lowercase(), &k.to_lowercase());
            let tail = distance(&last(field).to_lowercase(), &last(k).to_lowercase());
            (whole.min(tail), k.as_str())
        })
        .filter(|(d, _)| *d <= bound)
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, k)| k).collect()
}

/// Levenshtein distance, transpositions counting one (`nmae` and `name` are one apart).
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn a_misspelt_field_finds_its_nearest_names() {
        let fields = known(&[
            "subscription_id",
            "plan_name",
            "billing_plan_id",
            "plan.code",
        ]);
        assert_eq!(nearest("plan_nmae", &fields), vec!["plan_name"]);
        assert_eq!(nearest("plan_nam", &fields), vec!["plan_name"]);
        assert_eq!(nearest("cod", &fields), vec!["plan.code"]);
        assert!(nearest("revenue", &fields).is_empty());
        assert_eq!(distance("nmae", "name"), 1);
        assert_eq!(quoted(&["a", "b", "c"]), "'a', 'b' or 'c'");
    }
}

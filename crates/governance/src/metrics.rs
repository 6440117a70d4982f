//! Counters from usage reports, as plain data. The HTTP layer exports them under the seed's
//! metric names (dots become underscores for Prometheus); this crate depends on no metrics
//! library.

use crate::limits::{Limit, Unit};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;

/// Distinct label sets each family exports. Label values come from usage reports (subjects,
/// fields, client ids, versions), so without a cap every invented value would be a new series
/// kept for the life of the process and written out on every scrape.
pub const LABEL_SETS: Limit = Limit {
    name: "metrics.label_sets",
    unit: Unit::Items,
    max: 1_000,
    bounds: "label sets one governance counter family exports; later ones are counted under the label value 'other'",
};
/// The longest label value exported; longer ones are cut (at a character boundary) and end
/// with `...`.
pub const LABEL_VALUE: Limit = Limit {
    name: "metrics.label_value",
    unit: Unit::Length,
    max: 128,
    bounds: "one exported label value; longer values are cut",
};
/// The label value of every series past a family's [`LABEL_SETS`].
pub const OTHER: &str = "other";

/// A counter family: its exported name, the seed's dotted name and a help line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct MetricFamily {
    pub name: &'static str,
    pub seed_name: &'static str,
    pub help: &'static str,
}

pub const RECORDS_BY_SCHEMA_VERSION: MetricFamily = MetricFamily {
    name: "pipeline_records_by_schema_version",
    seed_name: "pipeline.records.by_schema_version",
    help: "Records consumers reported decoding, by subject and writer schema version.",
};
pub const ENUM_UNKNOWN: MetricFamily = MetricFamily {
    name: "contract_enum_unknown",
    seed_name: "contract.enum.unknown",
    help: "Enum symbols consumers did not know, by subject and field.",
};
pub const DEPRECATED_FIELD_USED: MetricFamily = MetricFamily {
    name: "contract_deprecated_field_used",
    seed_name: "contract.deprecated_field.used",
    help: "Reads of deprecated fields, by subject, field and consumer.",
};
pub const DESERIALIZATION_FAILURE: MetricFamily = MetricFamily {
    name: "consumer_deserialization_failure",
    seed_name: "consumer.deserialization.failure",
    help: "Records consumers failed to decode, by subject and consumer.",
};

/// Not one of the seed's names: reads of a frozen field by a reader that did not read it
/// before the freeze (each is also a `new_use_after_freeze` finding).
pub const NEW_USE_AFTER_FREEZE: MetricFamily = MetricFamily {
    name: "contract_deprecated_field_new_use",
    seed_name: "contract.deprecated_field.new_use",
    help: "Reports that started reading a frozen deprecated field, by subject, field and consumer.",
};

pub const FAMILIES: [MetricFamily; 5] = [
    RECORDS_BY_SCHEMA_VERSION,
    ENUM_UNKNOWN,
    DEPRECATED_FIELD_USED,
    DESERIALIZATION_FAILURE,
    NEW_USE_AFTER_FREEZE,
];

/// One counter value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MetricSample {
    pub family: MetricFamily,
    pub labels: Vec<(&'static str, String)>,
    pub value: u64,
}

/// Receives every counter increment as it happens, for a metrics library (the server's
/// Prometheus recorder) to export.
pub trait CounterSink: Send + Sync {
    fn add(&self, family: MetricFamily, labels: &[(&'static str, String)], by: u64);
}

type Key = (MetricFamily, Vec<(&'static str, String)>);
type Labels = Vec<(&'static str, String)>;

/// `value` cut to [`LABEL_VALUE`] bytes.
pub fn capped_value(value: String) -> String {
    if value.len() <= LABEL_VALUE.max {
        return value;
    }
    let mut end = LABEL_VALUE.max - 3;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &value[..end])
}

/// Which label sets each family exports: the first [`LABEL_SETS`] distinct ones; every later
/// one is counted under a set whose values are all [`OTHER`].
#[derive(Debug, Default)]
pub struct LabelCaps {
    seen: Mutex<HashMap<MetricFamily, HashSet<Labels>>>,
}

impl LabelCaps {
    /// The labels an increment is exported under.
    pub fn admit(&self, family: MetricFamily, labels: Labels) -> Labels {
        let labels: Labels = labels
            .into_iter()
            .map(|(k, v)| (k, capped_value(v)))
            .collect();
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let sets = seen.entry(family).or_default();
        if sets.contains(&labels) {
            return labels;
        }
        if sets.len() < LABEL_SETS.max {
            sets.insert(labels.clone());
            return labels;
        }
        labels
            .into_iter()
            .map(|(k, _)| (k, OTHER.to_string()))
            .collect()
    }
}

/// Monotonic counters since the process started (Prometheus counter semantics).
#[derive(Debug, Default)]
pub struct Counters {
    values: Mutex<BTreeMap<Key, u64>>,
}

impl Counters {
    pub fn add(&self, family: MetricFamily, labels: Vec<(&'static str, String)>, by: u64) {
        if by == 0 {
            return;
        }
        // A poisoned lock only means another thread panicked mid-increment; counts stay usable.
        let mut values = self
            .values
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Counts reported by clients may be as large as they like: a counter saturates.
        let value = values.entry((family, labels)).or_default();
        *value = value.saturating_add(by);
    }

    pub fn snapshot(&self) -> Vec<MetricSample> {
        let values = self
            .values
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        values
            .iter()
            .map(|((family, labels), value)| MetricSample {
                family: *family,
                labels: labels.clone(),
                value: *value,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_sets_past_the_cap_are_counted_under_other() {
        let caps = LabelCaps::default();
        let counters = Counters::default();
        for i in 0..LABEL_SETS.max + 500 {
            let labels = caps.admit(ENUM_UNKNOWN, vec![("field", format!("f{i}"))]);
            counters.add(ENUM_UNKNOWN, labels, 1);
        }
        let again = caps.admit(ENUM_UNKNOWN, vec![("field", "f0".to_string())]);
        assert_eq!(
            again,
            vec![("field", "f0".to_string())],
            "admitted sets stay"
        );
        let samples = counters.snapshot();
        assert_eq!(samples.len(), LABEL_SETS.max + 1);
        let other = samples
            .iter()
            .find(|s| s.labels[0].1 == OTHER)
            .expect("an 'other' series");
        assert_eq!(other.value, 500);
        // Another family has its own budget.
        let own = caps.admit(DESERIALIZATION_FAILURE, vec![("field", "new".to_string())]);
        assert_eq!(own[0].1, "new");
    }

    #[test]
    fn long_label_values_are_cut() {
        let caps = LabelCaps::default();
        let labels = caps.admit(ENUM_UNKNOWN, vec![("consumer", "é".repeat(4_000))]);
        assert!(
            labels[0].1.len() <= LABEL_VALUE.max,
            "{}",
            labels[0].1.len()
        );
        assert!(labels[0].1.ends_with("..."));
        assert_eq!(capped_value("short".into()), "short");
    }
}

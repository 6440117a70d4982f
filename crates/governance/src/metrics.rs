//! Counters from usage reports, as plain data. The HTTP layer exports them under the seed's
//! metric names (dots become underscores for Prometheus); this crate depends on no metrics
//! library.

use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Mutex;

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
        *values.entry((family, labels)).or_default() += by;
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

//! Every JSON Schema rule as data. Confluent's difference types are the rows of one table
//! (`table.rs`): each row makes the rule's spec (and so its entry in `docs/rules.md`) and says
//! under which policy the difference is compatible. `diff.rs` reports the rows; the bounds
//! (`BOUNDS`) are reported by one generic comparison. A rule that is not a difference type
//! has a module of its own (`dialect_undeclared`, a lint).

use covenant_engine::{JsonPolicy, RuleSpec, Severity};
use std::sync::LazyLock;

/// When a difference leaves the new schema able to read every document the old one allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compatible {
    /// Under every policy.
    Always,
    /// Only under the lenient policy (Confluent's `LENIENT` list).
    WhenLenient,
    /// Under no policy.
    Never,
}

impl Compatible {
    pub fn under(self, policy: JsonPolicy) -> bool {
        match self {
            Compatible::Always => true,
            Compatible::WhenLenient => policy == JsonPolicy::Lenient,
            Compatible::Never => false,
        }
    }

    /// The level the catalog gives: under the default (strict) policy.
    const fn default_severity(self) -> Severity {
        match self {
            Compatible::Always => Severity::Info,
            Compatible::WhenLenient | Compatible::Never => Severity::Error,
        }
    }
}

/// One of Confluent's difference types: the rule's spec and when the difference is compatible.
#[derive(Debug)]
pub struct Difference {
    pub spec: RuleSpec,
    pub compatible: Compatible,
}

impl Difference {
    /// Whether the difference is compatible under `policy`.
    pub fn is_compatible(&self, policy: JsonPolicy) -> bool {
        self.compatible.under(policy)
    }

    /// A finding's severity under `policy`: information when compatible, an error otherwise.
    pub fn severity(&self, policy: JsonPolicy) -> Severity {
        if self.is_compatible(policy) {
            Severity::Info
        } else {
            Severity::Error
        }
    }
}

/// A keyword compared by its value alone, reported by `diff.rs`'s one comparison of bounds.
/// The differences are, in order: added, removed, increased, decreased.
#[derive(Debug)]
pub enum Bound {
    /// A maximum (`maxLength`): adding or lowering it rejects documents that were valid.
    Upper(&'static str, [&'static Difference; 4]),
    /// A minimum (`minLength`): adding or raising it rejects documents that were valid.
    Lower(&'static str, [&'static Difference; 4]),
    /// A flag (`uniqueItems`): setting it rejects documents that were valid; added, removed.
    Flag(&'static str, [&'static Difference; 2]),
}

impl Bound {
    pub fn keyword(&self) -> &'static str {
        match self {
            Bound::Upper(keyword, _) | Bound::Lower(keyword, _) | Bound::Flag(keyword, _) => {
                keyword
            }
        }
    }
}

/// Makes a [`Difference`] of each row (id, category, compatibility, summary, the triggering
/// change `writer => reader`, the same intent made safely, hint) and lists them all in
/// `DIFFERENCES`, in catalog order. Every row names Confluent's type as its peer.
macro_rules! differences {
    ($($id:ident, $category:literal, $compatible:ident, $summary:literal,
        $bad_writer:literal => $bad_reader:literal, $good_writer:literal => $good_reader:literal,
        $hint:expr;)*) => {
        $(pub static $id: Difference = Difference {
            spec: RuleSpec {
                id: stringify!($id),
                format: "json",
                category: $category,
                default_severity: Compatible::$compatible.default_severity(),
                summary: $summary,
                bad_example: concat!("writer: ", $bad_writer, "\nreader: ", $bad_reader),
                good_example: concat!("writer: ", $good_writer, "\nreader: ", $good_reader),
                hint: $hint,
                peers: &[concat!("confluent:", stringify!($id))],
            },
            compatible: Compatible::$compatible,
        };)*

        /// Every difference type, in catalog order.
        pub static DIFFERENCES: &[&Difference] = &[$(&$id),*];
    };
}

pub mod dialect_undeclared;
mod table;
pub use table::*;

/// Every JSON Schema rule, in catalog order: the difference types, then the lint.
pub fn rules() -> &'static [&'static RuleSpec] {
    static ALL: LazyLock<Vec<&'static RuleSpec>> = LazyLock::new(|| {
        DIFFERENCES
            .iter()
            .map(|d| &d.spec)
            .chain([&dialect_undeclared::DIALECT_UNDECLARED])
            .collect()
    });
    &ALL
}

#[cfg(test)]
mod tests;

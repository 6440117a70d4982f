//! A change is a rollout, not a diff: which producer and consumer versions may coexist, and in
//! which order to deploy them.
//!
//! Directions follow Confluent's (and the engine's) vocabulary: *backward* means the new
//! schema reads data written with the old one (an old producer feeding a new consumer), and
//! *forward* means the old schema reads data written with the new one (a new producer feeding
//! an old consumer). Some prose uses the two words the other way round; the four combinations
//! below are unambiguous whichever words a reader is used to.

use covenant_engine::{Finding, Report, Severity};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// Which version of a producer or consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Old,
    New,
}

impl Side {
    fn as_str(self) -> &'static str {
        match self {
            Side::Old => "old",
            Side::New => "new",
        }
    }
}

/// Why a combination is unsafe, or what to review before it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reason {
    pub rule: String,
    pub severity: Severity,
    pub path: String,
    pub message: String,
}

impl From<&Finding> for Reason {
    fn from(f: &Finding) -> Reason {
        Reason {
            rule: f.rule.to_string(),
            severity: f.severity,
            path: f.path.clone(),
            message: f.message.clone(),
        }
    }
}

/// One producer/consumer pairing that can exist during a rollout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Combination {
    pub producer: Side,
    pub consumer: Side,
    pub safe: bool,
    /// What the combination means, in one sentence.
    pub explanation: String,
    /// The error findings that make it unsafe.
    pub reasons: Vec<Reason>,
    /// Non-blocking findings to review before this combination runs.
    pub review: Vec<Reason>,
}

/// The safe deployment order, if there is one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeploymentOrder {
    /// Both directions hold: old and new versions can coexist in any order.
    EitherOrder,
    /// Only backward holds: upgrade consumers, then producers.
    ReadersFirst,
    /// Only forward holds: upgrade producers, then consumers.
    WritersFirst,
    /// Neither holds: no order is safe; a new subject or major contract version is needed.
    Neither,
}

impl DeploymentOrder {
    pub fn as_str(self) -> &'static str {
        match self {
            DeploymentOrder::EitherOrder => "either order",
            DeploymentOrder::ReadersFirst => "readers first",
            DeploymentOrder::WritersFirst => "writers first",
            DeploymentOrder::Neither => "neither: a new subject or major version is needed",
        }
    }
}

/// The four combinations, the safe order and the steps to follow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutPlan {
    pub order: DeploymentOrder,
    /// Old/old, old/new, new/old, new/new (producer/consumer), in that order.
    pub combinations: Vec<Combination>,
    pub steps: Vec<String>,
}

fn split(findings: &[Finding]) -> (Vec<Reason>, Vec<Reason>) {
    let reasons = findings
        .iter()
        .filter(|f| f.is_error())
        .map(Reason::from)
        .collect();
    let review = findings
        .iter()
        .filter(|f| !f.is_error())
        .map(Reason::from)
        .collect();
    (reasons, review)
}

/// Plans a rollout from the two directions: `backward` is the new schema reading old data,
/// `forward` the old schema reading new data, each with any semantic findings already added
/// (see [`plan_with_semantics`]).
pub fn plan(backward: &Report, forward: &Report) -> RolloutPlan {
    let (back_reasons, back_review) = split(&backward.findings);
    let (fwd_reasons, fwd_review) = split(&forward.findings);
    let backward_ok = back_reasons.is_empty();
    let forward_ok = fwd_reasons.is_empty();
    let combinations = vec![
        Combination {
            producer: Side::Old,
            consumer: Side::Old,
            safe: true,
            explanation: "Today's behaviour, including any misuse the migration must expose."
                .into(),
            reasons: Vec::new(),
            review: Vec::new(),
        },
        Combination {
            producer: Side::Old,
            consumer: Side::New,
            safe: backward_ok,
            explanation: if backward_ok {
                "New consumers read old records, including replayed, delayed and restored ones (backward compatible).".into()
            } else {
                "New consumers cannot correctly read old records: replay, backfill, delayed messages and old producer instances break them.".into()
            },
            reasons: back_reasons,
            review: back_review,
        },
        Combination {
            producer: Side::New,
            consumer: Side::Old,
            safe: forward_ok,
            explanation: if forward_ok {
                "Old consumers read records from new producers while they lag behind (forward compatible).".into()
            } else {
                "Old consumers cannot correctly read records from new producers.".into()
            },
            reasons: fwd_reasons,
            review: fwd_review,
        },
        Combination {
            producer: Side::New,
            consumer: Side::New,
            safe: true,
            explanation:
                "Both sides use the new schema; they must still agree on what each field means."
                    .into(),
            reasons: Vec::new(),
            review: Vec::new(),
        },
    ];
    let order = match (backward_ok, forward_ok) {
        (true, true) => DeploymentOrder::EitherOrder,
        (true, false) => DeploymentOrder::ReadersFirst,
        (false, true) => DeploymentOrder::WritersFirst,
        (false, false) => DeploymentOrder::Neither,
    };
    RolloutPlan {
        order,
        combinations,
        steps: steps(order),
    }
}

/// Semantic rules whose warnings already make a mixed combination wrong: a renamed field
/// leaves the other side with its default, a changed meaning or reading gives it wrong values.
/// No deployment order fixes that; only a new field (or event type) does.
const RENAME_RULES: [&str; 1] = ["LIKELY_RENAME"];
const MEANING_RULES: [&str; 2] = ["MEANING_CHANGED", "VALUE_REINTERPRETED"];

/// [`plan`] with direction-free semantic findings (from [`crate::evaluate`]) counted against
/// both mixed combinations: a changed meaning misleads an old consumer of new data and a new
/// consumer of old data alike. Renames and meaning changes at warning or above block both
/// mixes, and the steps become the seed's rename rollout (§19.2) or breaking semantic change
/// rollout (§19.4).
pub fn plan_with_semantics(
    backward: &Report,
    forward: &Report,
    semantic: &[Finding],
) -> RolloutPlan {
    let reshaping = |f: &Finding, rules: &[&str]| {
        f.severity >= Severity::Warning && rules.contains(&f.rule.as_ref())
    };
    let blocking: Vec<Finding> = semantic
        .iter()
        .map(|f| {
            let mut f = f.clone();
            if reshaping(&f, &RENAME_RULES) || reshaping(&f, &MEANING_RULES) {
                f.severity = Severity::Error;
            }
            f
        })
        .collect();
    let with = |report: &Report| {
        let mut findings = report.findings.clone();
        findings.extend(blocking.iter().cloned());
        Report::from_findings(findings)
    };
    let mut out = plan(&with(backward), &with(forward));
    let renamed = semantic.iter().any(|f| reshaping(f, &RENAME_RULES));
    let meaning = semantic.iter().any(|f| reshaping(f, &MEANING_RULES));
    if renamed || meaning {
        out.steps = semantic_steps(renamed, meaning);
    }
    out
}

/// The seed's rollouts for a rename (§19.2) and a breaking semantic change (§19.4).
fn semantic_steps(renamed: bool, meaning: bool) -> Vec<String> {
    let mut steps = vec![
        "No deployment order makes this change safe as written: old and new versions disagree on what a field holds. Only a new field (or a new event type) makes it safe.".to_string(),
    ];
    if renamed {
        steps.extend(
            [
                "Rename rollout: add the new field and keep the old one.",
                "Dual-write old and new fields.",
                "Migrate consumers to the new field.",
                "Monitor old field usage.",
                "Mark the old field deprecated.",
                "Remove the old field after the retention or deprecation window.",
            ]
            .map(String::from),
        );
    }
    if meaning {
        steps.extend(
            [
                "Breaking semantic change rollout: create a new field, event type or major contract version for the new meaning.",
                "Dual-publish old and new if necessary.",
                "Migrate consumers gradually.",
                "Backfill or bridge historical data.",
                "Retire the old field or stream after an explicit sunset.",
            ]
            .map(String::from),
        );
    }
    steps
}

fn steps(order: DeploymentOrder) -> Vec<String> {
    let steps: &[&str] = match order {
        DeploymentOrder::EitherOrder => &[
            "Deploy producers and consumers in any order; old and new versions can coexist during rolling releases, retries, replay and restore.",
            "Monitor records by schema version, unknown enum values and null rates while both versions run.",
            "Document the semantic meaning of new fields.",
        ],
        DeploymentOrder::ReadersFirst => &[
            "Make readers tolerant: deploy the new consumers first; they can read old records.",
            "Start writing the new shape: deploy the new producers only after every consumer is upgraded, because old consumers cannot read new records.",
            "Keep old consumers, restored snapshots and rollbacks away from new records until the compatibility and deprecation window has passed.",
        ],
        DeploymentOrder::WritersFirst => &[
            "Deploy the new producers first; old consumers can keep reading their records while they lag behind.",
            "Upgrade consumers afterwards, and only once no old records remain to be read: new consumers cannot read old data.",
            "Check replay, backfill and restore paths: they feed old records to new consumers, which this change does not support.",
        ],
        DeploymentOrder::Neither => &[
            "No deployment order is safe: old and new versions cannot coexist.",
            "Create a new event type, subject or major contract version instead of changing this one.",
            "Dual-publish old and new if necessary, migrate consumers gradually, and backfill or bridge historical data.",
            "Retire the old stream only after an explicit sunset.",
        ],
    };
    steps.iter().map(|s| s.to_string()).collect()
}

impl RolloutPlan {
    /// The plan as text in the vocabulary of a review: the four combinations, then the order.
    pub fn render_text(&self) -> String {
        let mut out = format!("Rollout: {}\n", self.order.as_str());
        for c in &self.combinations {
            let _ = writeln!(
                out,
                "\n{} producer -> {} consumer: {}\n  {}",
                c.producer.as_str(),
                c.consumer.as_str(),
                if c.safe { "safe" } else { "UNSAFE" },
                c.explanation
            );
            for r in &c.reasons {
                let _ = writeln!(
                    out,
                    "  - {} at {}: {}",
                    r.rule,
                    display_path(&r.path),
                    r.message
                );
            }
            for r in &c.review {
                let _ = writeln!(
                    out,
                    "  - review ({}) {} at {}: {}",
                    r.severity,
                    r.rule,
                    display_path(&r.path),
                    r.message
                );
            }
        }
        out.push_str("\nSteps:\n");
        for (i, step) in self.steps.iter().enumerate() {
            let _ = writeln!(out, "  {}. {step}", i + 1);
        }
        out
    }
}

fn display_path(path: &str) -> &str {
    if path.is_empty() { "/" } else { path }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(rule: &str, severity: Severity, message: &str) -> Finding {
        Finding {
            rule: rule.to_string().into(),
            severity,
            path: "/fields/x".into(),
            message: message.into(),
            hint: "".into(),
            version: None,
        }
    }

    fn ok() -> Report {
        Report::from_findings(Vec::new())
    }

    fn broken(rule: &str) -> Report {
        Report::from_findings(vec![finding(rule, Severity::Error, "It broke.")])
    }

    fn safety(plan: &RolloutPlan) -> Vec<bool> {
        plan.combinations.iter().map(|c| c.safe).collect()
    }

    #[test]
    fn both_directions_hold_either_order() {
        let p = plan(&ok(), &ok());
        assert_eq!(p.order, DeploymentOrder::EitherOrder);
        assert_eq!(safety(&p), [true, true, true, true]);
    }

    #[test]
    fn only_backward_holds_readers_first() {
        let p = plan(&ok(), &broken("READER_FIELD_MISSING_DEFAULT_VALUE"));
        assert_eq!(p.order, DeploymentOrder::ReadersFirst);
        assert_eq!(safety(&p), [true, true, false, true]);
        let unsafe_one = &p.combinations[2];
        assert_eq!(
            (unsafe_one.producer, unsafe_one.consumer),
            (Side::New, Side::Old)
        );
        assert_eq!(
            unsafe_one.reasons[0].rule,
            "READER_FIELD_MISSING_DEFAULT_VALUE"
        );
        assert!(p.steps[0].starts_with("Make readers tolerant"));
    }

    #[test]
    fn only_forward_holds_writers_first() {
        let p = plan(&broken("TYPE_MISMATCH"), &ok());
        assert_eq!(p.order, DeploymentOrder::WritersFirst);
        assert_eq!(safety(&p), [true, false, true, true]);
        assert_eq!(p.combinations[1].reasons[0].message, "It broke.");
    }

    #[test]
    fn neither_holds_needs_a_new_subject() {
        let p = plan(&broken("TYPE_MISMATCH"), &broken("TYPE_MISMATCH"));
        assert_eq!(p.order, DeploymentOrder::Neither);
        assert_eq!(safety(&p), [true, false, false, true]);
        assert!(p.steps.iter().any(|s| s.contains("major contract version")));
    }

    #[test]
    fn warnings_are_reviewed_not_blocking_and_semantic_errors_block_both_mixes() {
        let warn = Report::from_findings(vec![finding(
            "ENUM_VALUE_ADDED",
            Severity::Warning,
            "New value.",
        )]);
        let p = plan(&ok(), &warn);
        assert_eq!(p.order, DeploymentOrder::EitherOrder);
        assert_eq!(p.combinations[2].review[0].rule, "ENUM_VALUE_ADDED");

        let key = finding(
            "KEY_FIELD_CHANGED",
            Severity::Error,
            "The partition key changed.",
        );
        let p = plan_with_semantics(&ok(), &ok(), &[key]);
        assert_eq!(p.order, DeploymentOrder::Neither);
    }

    #[test]
    fn renames_and_meaning_changes_need_a_new_field_and_the_seed_steps() {
        let rename = finding("LIKELY_RENAME", Severity::Warning, "Looks renamed.");
        let p = plan_with_semantics(&ok(), &ok(), std::slice::from_ref(&rename));
        assert_eq!(p.order, DeploymentOrder::Neither);
        assert_eq!(safety(&p), [true, false, false, true]);
        assert_eq!(p.combinations[1].reasons[0].rule, "LIKELY_RENAME");
        assert!(p.steps[1].starts_with("Rename rollout: add the new field"));
        assert!(!p.steps.iter().any(|s| s.starts_with("Breaking semantic")));

        let meaning = finding("MEANING_CHANGED", Severity::Warning, "New meaning.");
        let p = plan_with_semantics(&ok(), &ok(), &[meaning]);
        assert_eq!(p.order, DeploymentOrder::Neither);
        assert!(p.steps[1].starts_with("Breaking semantic change rollout"));

        let quiet = finding("LIKELY_RENAME", Severity::Info, "Looks renamed.");
        let p = plan_with_semantics(&ok(), &ok(), &[quiet]);
        assert_eq!(p.order, DeploymentOrder::EitherOrder);
        assert_eq!(p.combinations[1].review[0].rule, "LIKELY_RENAME");
    }

    #[test]
    fn text_and_json_shapes() {
        let p = plan(&ok(), &broken("READER_FIELD_MISSING_DEFAULT_VALUE"));
        let text = p.render_text();
        assert!(text.starts_with("Rollout: readers first\n"), "{text}");
        assert!(text.contains(
            "new producer -> old consumer: UNSAFE\n  Old consumers cannot correctly read records from new producers.\n  - READER_FIELD_MISSING_DEFAULT_VALUE at /fields/x: It broke."
        ));
        assert!(text.contains("old producer -> new consumer: safe"));
        assert!(text.contains("\nSteps:\n  1. Make readers tolerant"));
        let json = serde_json::to_value(&p).expect("serializable");
        assert_eq!(json["order"], "readers_first");
        assert_eq!(json["combinations"][2]["producer"], "new");
        assert_eq!(json["combinations"][2]["consumer"], "old");
        assert_eq!(json["combinations"][2]["safe"], false);
        assert_eq!(json["combinations"][2]["reasons"][0]["severity"], "error");
        let back: RolloutPlan = serde_json::from_value(json).expect("round trip");
        assert_eq!(back, p);
    }
}

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
    /// The metrics to watch while old and new versions run side by side, in the seed's
    /// naming (§21): `contract.enum.unknown{field="caseStatus"}` for an enum expansion.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub watch: Vec<String>,
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
        watch: Vec::new(),
    }
}

/// Semantic rules whose warnings already make a mixed combination wrong: a renamed field
/// leaves the other side with its default, a changed meaning or reading gives it wrong values.
/// No deployment order fixes that; only a new field (or event type) does.
const RENAME_RULES: [&str; 1] = ["LIKELY_RENAME"];
const MEANING_RULES: [&str; 2] = ["MEANING_CHANGED", "VALUE_REINTERPRETED"];
/// A new enum value: old consumers may reject, drop or misclassify it, so a new producer
/// must not reach an old consumer (the seed's enum expansion rollout, §19.3).
const ENUM_RULE: &str = "ENUM_VALUE_ADDED";

/// One enum that gained values, as an `ENUM_VALUE_ADDED` finding names it.
struct Expansion {
    /// `Enum 'CaseStatus'` or `Field 'status'`.
    what: String,
    /// The name the unknown-value metric is tagged with.
    field: String,
    /// `value 'SUSPENDED'`, or `values 'A' and 'B'`.
    listed: String,
    /// `'SUSPENDED'`, or `'A' and 'B'`.
    values: String,
    /// `consumers known to read it: 'billing'`, when the finding names them.
    consumers: Option<String>,
}

impl Expansion {
    /// Read from the finding's message: `Enum 'CaseStatus' gained enum value 'SUSPENDED';
    /// old consumers may ... (consumers known to read it: 'billing').`
    fn of(f: &Finding) -> Expansion {
        let message = f.message.as_str();
        let (what, rest) = message
            .split_once(" gained enum ")
            .unwrap_or(("The enum", message));
        // `value 'SUSPENDED'` or `values 'A' and 'B'`, up to the end of the sentence.
        let listed = rest.split(';').next().unwrap_or("").to_string();
        let values = listed
            .split_once(' ')
            .map(|(_, v)| v.to_string())
            .unwrap_or_else(|| listed.clone());
        let field = what
            .split('\'')
            .nth(1)
            .map(str::to_string)
            .or_else(|| {
                f.path
                    .rsplit('/')
                    .find(|s| !s.is_empty())
                    .map(str::to_string)
            })
            .unwrap_or_else(|| "enum".to_string());
        let consumers = message
            .split_once("(consumers known to read it: ")
            .map(|(_, c)| {
                format!(
                    "consumers known to read it: {}",
                    c.trim_end_matches(").").trim_end_matches(')')
                )
            });
        Expansion {
            what: what.to_string(),
            field,
            listed,
            values,
            consumers,
        }
    }

    fn metric(&self) -> String {
        format!("contract.enum.unknown{{field=\"{}\"}}", self.field)
    }
}

/// Whether a `MEANING_CHANGED` finding is about a record (an event type) rather than a field:
/// its doc changed what one event stands for, its grain.
fn grain_change(f: &Finding) -> bool {
    f.rule == "MEANING_CHANGED" && f.message.starts_with("Record '")
}

/// The record a grain change names (`CaseAssigned`).
fn record_name(f: &Finding) -> &str {
    f.message.split('\'').nth(1).unwrap_or("the event")
}

/// [`plan`] with direction-free semantic findings (from [`crate::evaluate`]) counted against
/// both mixed combinations: a changed meaning misleads an old consumer of new data and a new
/// consumer of old data alike. Renames and meaning changes at warning or above block both
/// mixes, and the steps become the seed's rename rollout (§19.2) or breaking semantic change
/// rollout (§19.4); a record whose meaning changed (its event grain) plans a new event type
/// (Rule 4). An enum value added at warning or above blocks the new producer reaching an
/// old consumer, and the steps become the seed's enum expansion rollout (§19.3), with the
/// unknown-value metric to watch.
pub fn plan_with_semantics(
    backward: &Report,
    forward: &Report,
    semantic: &[Finding],
) -> RolloutPlan {
    let reshaping = |f: &Finding, rules: &[&str]| {
        f.severity >= Severity::Warning && rules.contains(&f.rule.as_ref())
    };
    let expanding = |f: &Finding| f.severity >= Severity::Warning && f.rule == ENUM_RULE;
    let blocking: Vec<Finding> = semantic
        .iter()
        .filter(|f| !expanding(f))
        .map(|f| {
            let mut f = f.clone();
            if reshaping(&f, &RENAME_RULES) || reshaping(&f, &MEANING_RULES) {
                f.severity = Severity::Error;
            }
            f
        })
        .collect();
    let expansions: Vec<&Finding> = semantic.iter().filter(|f| expanding(f)).collect();
    let with = |report: &Report, extra: &[Finding]| {
        let mut findings = report.findings.clone();
        findings.extend(blocking.iter().cloned());
        findings.extend(extra.iter().cloned());
        Report::from_findings(findings)
    };
    // An old consumer meets the new value only from a new producer; a new consumer reading
    // old records never sees it, so that combination keeps it for review.
    let blocked: Vec<Finding> = expansions
        .iter()
        .map(|f| (*f).clone().with_severity(Severity::Error))
        .collect();
    let reviewed: Vec<Finding> = expansions
        .iter()
        .map(|f| (*f).clone().with_severity(Severity::Warning))
        .collect();
    let mut out = plan(&with(backward, &reviewed), &with(forward, &blocked));
    let renamed = semantic.iter().any(|f| reshaping(f, &RENAME_RULES));
    let grains: Vec<&Finding> = semantic
        .iter()
        .filter(|f| reshaping(f, &MEANING_RULES) && grain_change(f))
        .collect();
    let meaning = semantic
        .iter()
        .any(|f| reshaping(f, &MEANING_RULES) && !grain_change(f));
    if renamed || meaning || !grains.is_empty() {
        out.steps = semantic_steps(renamed, meaning, &grains);
    } else if !expansions.is_empty() && out.order == DeploymentOrder::Neither {
        // Another change leaves no safe order; the enum's own steps follow that rollout.
        out.steps.extend(enum_steps(&expansions));
    } else if !expansions.is_empty() {
        out.steps = enum_steps(&expansions);
    }
    if (renamed || meaning || !grains.is_empty()) && !expansions.is_empty() {
        out.steps.extend(enum_steps(&expansions));
    }
    out.watch = expansions
        .iter()
        .map(|f| Expansion::of(f).metric())
        .collect();
    out.watch.dedup();
    out
}

/// The seed's enum expansion rollout (§19.3), for the enums that gained values: handling
/// first, then consumers, the contract, classifications, producers, and the metric.
fn enum_steps(expansions: &[&Finding]) -> Vec<String> {
    let expansions: Vec<Expansion> = expansions.iter().map(|f| Expansion::of(f)).collect();
    let mut steps = Vec::new();
    for e in &expansions {
        let who = match &e.consumers {
            Some(consumers) => format!(" ({consumers})"),
            None => String::new(),
        };
        steps.push(format!(
            "Enum expansion rollout for {}, new {}: add unknown/default handling in every consumer{who} (a default symbol or an UNKNOWN branch that counts and routes the value, never a failing switch, a dropped record or a silent OPEN).",
            e.what, e.listed
        ));
    }
    steps.extend([
        "Deploy the consumers with that handling; no producer may emit a new value before every consumer runs it.".to_string(),
        "Add the value to the contract: register this schema version.".to_string(),
    ]);
    for e in &expansions {
        steps.push(format!(
            "Update reporting classifications for {}: decide how {} is classified in reports, dashboard filters and regulated paths, and have its meaning approved where a regulated path reads it.",
            e.what, e.values
        ));
    }
    steps.push("Deploy the producers that emit the new value.".to_string());
    for e in &expansions {
        steps.push(format!(
            "Monitor unknown value metrics: {} counts records whose {} value a consumer did not know; it should stay at zero, and a non-zero count names a consumer still on old handling. Consumers report it with their usage (`unknown_enum_values`, `covenant usage report --unknown-enum {}=SYMBOL`) and /metrics serves it as contract_enum_unknown{{subject,field}}.",
            e.metric(),
            e.field,
            e.field
        ));
    }
    steps
}

/// The seed's rollouts for a rename (§19.2), a breaking semantic change (§19.4) and an event
/// grain change (Rule 4: a new event type, not a new version of the same one).
fn semantic_steps(renamed: bool, meaning: bool, grains: &[&Finding]) -> Vec<String> {
    let mut steps = vec![if renamed || meaning {
        "No deployment order makes this change safe as written: old and new versions disagree on what a field holds. Only a new field (or a new event type) makes it safe."
    } else {
        "No deployment order makes this change safe as written: old and new versions disagree on what one event stands for. Only a new event type makes it safe."
    }
    .to_string()];
    for grain in grains {
        let record = record_name(grain);
        steps.extend([
            format!(
                "Event grain change: '{record}' must keep its grain. Create a new event type for the new grain (a new record name and subject, or a major contract version) instead of registering this version of '{record}'."
            ),
            format!(
                "Dual-publish '{record}' and the new event type while consumers migrate."
            ),
            "Migrate consumers gradually: rebuild counts, dedupe keys, state stores and reports on the new event type, one grain at a time.".to_string(),
            format!("Backfill or bridge historical '{record}' data into the new event type."),
            format!("Retire '{record}' only after an explicit sunset."),
        ]);
    }
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
        if !self.watch.is_empty() {
            out.push_str("\nWatch:\n");
            for metric in &self.watch {
                let _ = writeln!(out, "  - {metric}");
            }
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

    fn expansion() -> Finding {
        Finding {
            path: "/fields/caseStatus".into(),
            ..finding(
                "ENUM_VALUE_ADDED",
                Severity::Warning,
                "Field 'caseStatus' gained enum value 'SUSPENDED'; old consumers may reject, drop or misclassify it (consumers known to read it: 'case-reports').",
            )
        }
    }

    /// The seed's §19.3: handling, consumers, contract, classifications, producers, metric.
    #[test]
    fn an_enum_expansion_plans_the_seed_steps_and_the_metric_to_watch() {
        let p = plan_with_semantics(&ok(), &ok(), &[expansion()]);
        assert_eq!(p.order, DeploymentOrder::ReadersFirst);
        assert_eq!(safety(&p), [true, true, false, true]);
        assert_eq!(p.combinations[2].reasons[0].rule, "ENUM_VALUE_ADDED");
        assert_eq!(p.combinations[1].review[0].rule, "ENUM_VALUE_ADDED");
        assert_eq!(
            p.steps,
            [
                "Enum expansion rollout for Field 'caseStatus', new value 'SUSPENDED': add unknown/default handling in every consumer (consumers known to read it: 'case-reports') (a default symbol or an UNKNOWN branch that counts and routes the value, never a failing switch, a dropped record or a silent OPEN).",
                "Deploy the consumers with that handling; no producer may emit a new value before every consumer runs it.",
                "Add the value to the contract: register this schema version.",
                "Update reporting classifications for Field 'caseStatus': decide how 'SUSPENDED' is classified in reports, dashboard filters and regulated paths, and have its meaning approved where a regulated path reads it.",
                "Deploy the producers that emit the new value.",
                "Monitor unknown value metrics: contract.enum.unknown{field=\"caseStatus\"} counts records whose caseStatus value a consumer did not know; it should stay at zero, and a non-zero count names a consumer still on old handling. Consumers report it with their usage (`unknown_enum_values`, `covenant usage report --unknown-enum caseStatus=SYMBOL`) and /metrics serves it as contract_enum_unknown{subject,field}.",
            ]
        );
        assert_eq!(p.watch, ["contract.enum.unknown{field=\"caseStatus\"}"]);
        let text = p.render_text();
        assert!(
            text.ends_with("\nWatch:\n  - contract.enum.unknown{field=\"caseStatus\"}\n"),
            "{text}"
        );
        // Structurally unreadable as well: the enum's steps follow the new-subject ones.
        let p = plan_with_semantics(&broken("TYPE_MISMATCH"), &ok(), &[expansion()]);
        assert_eq!(p.order, DeploymentOrder::Neither);
        assert!(p.steps[0].starts_with("No deployment order is safe"));
        assert!(
            p.steps
                .iter()
                .any(|s| s.starts_with("Enum expansion rollout"))
        );
        // Turned off (or info), the value is only reviewed and the plan is the generic one.
        let quiet = Finding {
            severity: Severity::Info,
            ..expansion()
        };
        let p = plan_with_semantics(&ok(), &ok(), &[quiet]);
        assert_eq!(p.order, DeploymentOrder::EitherOrder);
        assert!(p.watch.is_empty());
    }

    /// Rule 4: an event's grain does not change under the same event type.
    #[test]
    fn a_grain_change_plans_a_new_event_type() {
        let grain = Finding {
            path: "".into(),
            ..finding(
                "MEANING_CHANGED",
                Severity::Warning,
                "Record 'CaseAssigned' keeps its name and type 'record:CaseAssigned' but its doc changed from 'One event per case assignment.' to 'One event per assignee role.'; a changed event meaning or grain (one event per assignment becoming one per assignee) breaks counts, dedupe, state stores and reports.",
            )
        };
        let p = plan_with_semantics(&ok(), &ok(), &[grain]);
        assert_eq!(p.order, DeploymentOrder::Neither);
        assert_eq!(
            p.steps[1..],
            [
                "Event grain change: 'CaseAssigned' must keep its grain. Create a new event type for the new grain (a new record name and subject, or a major contract version) instead of registering this version of 'CaseAssigned'.",
                "Dual-publish 'CaseAssigned' and the new event type while consumers migrate.",
                "Migrate consumers gradually: rebuild counts, dedupe keys, state stores and reports on the new event type, one grain at a time.",
                "Backfill or bridge historical 'CaseAssigned' data into the new event type.",
                "Retire 'CaseAssigned' only after an explicit sunset.",
            ]
        );
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

//! Evolution policy beyond structure.
//!
//! Compatibility is not only about whether a parser succeeds: a renamed field, a new enum
//! value, a money field whose type changed, a timestamp whose clock changed or a dropped PII
//! tag all pass structural checks and still break consumers, reports or governance. This
//! crate judges those changes.
//!
//! It works on the format-neutral [`FieldTree`] each format crate produces, so every rule is
//! written once for Avro, JSON Schema and Protobuf. [`evaluate`] runs the semantic rules
//! under per-subject [`PolicySettings`] (a rule set to `error` blocks registration like an
//! incompatibility); [`plan`] turns the two compatibility directions into a rollout plan for
//! mixed producer and consumer versions.

mod context;
mod judge;
mod pair;
pub mod presets;
pub mod replay;
mod rollout;
mod rules;
mod schemas;
pub mod scope;
mod settings;

pub use context::{
    Encryption, IDEMPOTENCY_KEY, IDENTITY_FIELDS, KEY_PROPERTIES, ORDERING_FIELDS, PARTITION_KEY,
    PII_FIELDS, PII_TAGS, PolicyContext, SUBJECT_ROLE, SubjectMetadata,
};
pub use judge::{Judgement, all_rule_groups, judge, rollout, rules_markdown};
pub use presets::Preset;
pub use replay::replay_rules;
pub use rollout::{
    Combination, DeploymentOrder, Reason, RolloutPlan, Side, plan, plan_with_semantics,
};
pub use rules::rules;
pub use schemas::{
    evaluate_first_schema, evaluate_schemas, evaluate_schemas_in_history, field_tree,
};
pub use scope::{CompatibilityScope, VersionFacts};
pub use settings::{PolicySettings, RuleLevel, SettingsError};

use covenant_engine::budget::Metered;
use covenant_engine::{FieldTree, Finding, NodeKind, Numbering, Report};

/// The semantic findings for replacing `old` with `new`, at the levels `settings` give.
///
/// For a subject's first version pass [`FieldTree::empty`] as `old`: everything counts as
/// added. Trees of different formats are not compared (the structural check already rejects
/// a schema type change), except that an empty `old` tree is always accepted.
///
/// The rules draw on the budget `_m` proves installed, and stop when it is spent.
pub fn evaluate(
    _m: Metered<'_>,
    old: &FieldTree,
    new: &FieldTree,
    context: &PolicyContext,
    settings: &PolicySettings,
) -> Vec<Finding> {
    evaluate_pair(old, new, &[], context, settings)
}

/// [`evaluate`] knowing every earlier version of the subject (`lineage`, oldest first, the
/// last one the version being replaced): most rules describe the change from the last one,
/// while rules about what history makes unusable (Protobuf numbers and names) look at all.
pub fn evaluate_in_history(
    m: Metered<'_>,
    lineage: &[(i64, &FieldTree)],
    new: &FieldTree,
    context: &PolicyContext,
    settings: &PolicySettings,
) -> Vec<Finding> {
    let numberings: Vec<(i64, Numbering)> = lineage
        .iter()
        .map(|(v, tree)| (*v, Numbering::of(tree)))
        .collect();
    let numbered: Vec<(i64, &Numbering)> = numberings.iter().map(|(v, n)| (*v, n)).collect();
    match lineage.last() {
        Some((_, old)) => evaluate_against_lineage(m, old, &numbered, new, context, settings),
        None => evaluate(
            m,
            &FieldTree::empty(new.format.clone()),
            new,
            context,
            settings,
        ),
    }
}

/// [`evaluate_in_history`] with the earlier versions given by what they numbered and named
/// (`lineage`, oldest first, `old`'s among them): all the rules about history read, and what
/// a registry keeps per schema instead of lowering every earlier version again.
pub fn evaluate_against_lineage(
    _m: Metered<'_>,
    old: &FieldTree,
    lineage: &[(i64, &Numbering)],
    new: &FieldTree,
    context: &PolicyContext,
    settings: &PolicySettings,
) -> Vec<Finding> {
    evaluate_pair(old, new, lineage, context, settings)
}

fn evaluate_pair(
    old: &FieldTree,
    new: &FieldTree,
    lineage: &[(i64, &Numbering)],
    context: &PolicyContext,
    settings: &PolicySettings,
) -> Vec<Finding> {
    let old_is_empty = old.root.kind == NodeKind::Schema && old.root.children.is_empty();
    if !old_is_empty && !old.format.eq_ignore_ascii_case(&new.format) {
        return Vec::new();
    }
    let mut pair = pair::Pair::new(old, new, context);
    pair.lineage = lineage;
    let format = pair.format();
    let mut findings = Vec::new();
    for entry in rules::ENTRIES {
        // Every rule draws on the check's budget: once it is spent the verdict is discarded,
        // so the remaining rules are not run.
        if covenant_engine::budget::spent() {
            break;
        }
        if entry.spec.format != "any" && entry.spec.format != format {
            continue;
        }
        let Some(severity) = settings.level(entry.spec).severity() else {
            continue;
        };
        // A level the settings name applies to every finding; otherwise the preset sets it
        // from the severity its rule gave the finding (the spec's default, or one a rule
        // raised or lowered with cause).
        let listed = settings.semantic_rules.contains_key(entry.spec.id);
        let preset = settings.preset();
        findings.extend(
            (entry.check)(&pair)
                .into_iter()
                .map(|f| name_consumers(&pair, f))
                .map(|f| {
                    let severity = if listed {
                        severity
                    } else {
                        preset.severity(entry.spec, f.severity)
                    };
                    f.with_severity(severity)
                }),
        );
    }
    findings
}

/// Every finding names the consumers known to read what it is about, whichever rule found
/// it: the people who must act are part of the finding.
fn name_consumers(pair: &pair::Pair<'_>, mut finding: Finding) -> Finding {
    if finding.path.is_empty() {
        return finding;
    }
    let consumers = pair.consumers_at(&finding.path);
    let named = |c: &String| finding.message.contains(&format!("'{c}'"));
    if !consumers.is_empty() && !consumers.iter().all(named) {
        finding.message = format!(
            "{} Consumers reading it: {}.",
            finding.message.trim_end(),
            pair::quoted_list(&consumers)
        );
    }
    finding
}

/// [`evaluate`] as a report: incompatible when a rule set to `error` fired.
pub fn evaluate_report(
    m: Metered<'_>,
    old: &FieldTree,
    new: &FieldTree,
    context: &PolicyContext,
    settings: &PolicySettings,
) -> Report {
    Report::from_findings(evaluate(m, old, new, context, settings))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testkit::*;

    #[test]
    fn settings_change_severity_and_turn_rules_off() {
        let old = avro("Case", vec![field("caseOwner", "string")]);
        let new = avro("Case", vec![field("assignedOfficer", "string")]);
        let context = PolicyContext::default();
        // Only the rename is looked at here; the removal has its own rule. Under the
        // confluent preset a rename is a warning; under covenant, the default, an error.
        assert!(
            !covenant_engine::budget::unlimited(|m| evaluate_report(
                m,
                &old,
                &new,
                &PolicyContext::default(),
                &PolicySettings::default()
            ))
            .compatible
        );
        let base = PolicySettings::default()
            .with_preset(Preset::Confluent)
            .with("FIELD_REMOVED_WITHOUT_DEPRECATION", RuleLevel::Off);
        let default =
            covenant_engine::budget::unlimited(|m| evaluate(m, &old, &new, &context, &base));
        assert_eq!(default.len(), 1);
        assert_eq!(default[0].severity, covenant_engine::Severity::Warning);
        assert!(
            covenant_engine::budget::unlimited(|m| evaluate_report(m, &old, &new, &context, &base))
                .compatible
        );

        let strict = base.clone().with("LIKELY_RENAME", RuleLevel::Error);
        let report = covenant_engine::budget::unlimited(|m| {
            evaluate_report(m, &old, &new, &context, &strict)
        });
        assert!(!report.compatible);
        assert_eq!(report.findings[0].rule, "LIKELY_RENAME");

        let off = base.with("LIKELY_RENAME", RuleLevel::Off);
        assert!(
            covenant_engine::budget::unlimited(|m| evaluate(m, &old, &new, &context, &off))
                .is_empty()
        );
    }

    #[test]
    fn every_finding_names_the_consumers_of_its_field() {
        let old = avro(
            "Case",
            vec![field("updatedAt", "string").doc("Database update time.")],
        );
        let new = avro(
            "Case",
            vec![field("updatedAt", "string").doc("Business event time.")],
        );
        let mut context = PolicyContext::default();
        context.consumers.insert(
            "updatedAt".into(),
            vec!["sla-monitor".into(), "warehouse".into(), "audit".into()],
        );
        let findings = covenant_engine::budget::unlimited(|m| {
            evaluate(m, &old, &new, &context, &PolicySettings::default())
        });
        assert_eq!(findings[0].rule, "MEANING_CHANGED");
        assert!(
            findings[0]
                .message
                .ends_with("Consumers reading it: 'audit', 'sla-monitor' and 'warehouse'."),
            "{}",
            findings[0].message
        );
        let quiet = covenant_engine::budget::unlimited(|m| {
            evaluate(
                m,
                &old,
                &new,
                &PolicyContext::default(),
                &PolicySettings::default(),
            )
        });
        assert!(!quiet[0].message.contains("Consumers reading it"));
    }

    #[test]
    fn format_specific_rules_only_run_on_their_format() {
        let mut new = avro("Case", vec![]);
        new.root.additional_properties = None;
        let findings = covenant_engine::budget::unlimited(|m| {
            evaluate(
                m,
                &covenant_engine::FieldTree::empty("AVRO"),
                &new,
                &PolicyContext::default(),
                &PolicySettings::default(),
            )
        });
        assert!(findings.is_empty(), "{findings:?}");
    }

    #[test]
    fn different_formats_are_not_compared() {
        let old = avro("Case", vec![field("caseOwner", "string")]);
        let new = json(vec![property("assignedOfficer", "string")]);
        assert!(
            covenant_engine::budget::unlimited(|m| evaluate(
                m,
                &old,
                &new,
                &PolicyContext::default(),
                &PolicySettings::default()
            ))
            .is_empty()
        );
    }

    #[test]
    fn identical_trees_have_no_findings() {
        let tree = avro(
            "Case",
            vec![
                field("caseId", "string"),
                field("status", "enum:acme.Status").symbols(&["OPEN", "CLOSED"]),
                field("email", "string").tag("PII").nullable(),
            ],
        );
        assert!(
            covenant_engine::budget::unlimited(|m| evaluate(
                m,
                &tree,
                &tree,
                &PolicyContext::default(),
                &PolicySettings::default()
            ))
            .is_empty()
        );
    }
}

/// A field that carries personal data (by its tags, the subject metadata's tags or
/// `covenant.pii.fields`) or that an `ENCRYPT` rule encrypts.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProtectedField {
    pub path: String,
    pub name: String,
    /// The tags that mark it as personal data.
    pub pii_tags: Vec<String>,
    /// Every tag it carries, personal-data tags first.
    pub tags: Vec<String>,
    /// The KEK of the rule that encrypts it; `None` when it travels in clear text.
    pub kek: Option<String>,
}

/// The fields of `tree` that carry personal data or are encrypted, in tree order, each with
/// the KEK `context.encryption` names for it (what the console shows per subject, and what
/// `PII_NOT_ENCRYPTED` reports on).
pub fn protected_fields(tree: &FieldTree, context: &PolicyContext) -> Vec<ProtectedField> {
    rules::pii_not_encrypted::protected(&pair::Pair::new(tree, tree, context))
}

//! One verdict for a candidate version, whoever asks (the registry or the command line):
//! the structural check at the subject's level plus the semantic rules against the version
//! it replaces.

use crate::schemas::LoweredLineage;
use crate::{
    PolicyContext, PolicySettings, RolloutPlan, evaluate_first_schema, evaluate_schemas_in_history,
    field_tree, plan_with_semantics,
};
use covenant_engine::budget::Metered;
use covenant_engine::{CheckOptions, Finding, Level, Report, RuleSpec};
use covenant_schema::ParsedSchema;

/// Judges `candidate` against `history` (oldest first, the versions in scope) and `lineage`
/// (every earlier version of the subject, whatever the level and scope; may be empty when it
/// is `history`).
///
/// Structural findings come from every version the level covers; semantic findings compare
/// the candidate with the latest version, because they describe the change being made, except
/// the rules about what history makes unusable, which see the whole lineage. At level `NONE`
/// only the semantic rules run.
///
/// All of it runs under the budget `m` proves installed.
// The budget's token and the seven parts of a [`Judgement`].
#[allow(clippy::too_many_arguments)]
pub fn judge(
    m: Metered<'_>,
    level: Level,
    candidate: &ParsedSchema,
    history: &[(i64, &ParsedSchema)],
    lineage: &[(i64, &ParsedSchema)],
    options: &CheckOptions,
    context: &PolicyContext,
    settings: &PolicySettings,
) -> Report {
    Judgement {
        level,
        candidate,
        history,
        lineage,
        options,
        context,
        settings,
    }
    .judge(m)
}

/// What one judgement is about, as [`judge`] takes it.
pub struct Judgement<'a> {
    pub level: Level,
    pub candidate: &'a ParsedSchema,
    pub history: &'a [(i64, &'a ParsedSchema)],
    pub lineage: &'a [(i64, &'a ParsedSchema)],
    pub options: &'a CheckOptions,
    pub context: &'a PolicyContext,
    pub settings: &'a PolicySettings,
}

impl Judgement<'_> {
    /// The verdict [`judge`] gives.
    pub fn judge(&self, m: Metered<'_>) -> Report {
        let mut findings = self.structural(m);
        findings.extend(self.semantic(m));
        Report::from_findings(findings)
    }

    /// [`Judgement::judge`] on more than one thread, under the caller's budget: for a process
    /// that has the machine to itself (the command line), where a large pair's parts each take
    /// milliseconds. The structural check runs beside the semantic side, whose new field tree
    /// is made while the lineage is lowered. The server judges many requests at once and uses
    /// one thread per request.
    pub fn in_parallel(&self, m: Metered<'_>) -> Report {
        let Some((&latest, earlier)) = self.lineage().split_last() else {
            return self.judge(m);
        };
        let budget = &covenant_engine::budget::inherit(m);
        let (mut findings, semantic) = std::thread::scope(|scope| {
            use covenant_engine::parallel::spawn_beside;
            let structural = spawn_beside(scope, || budget.run(|m| self.structural(m)));
            let candidate_tree =
                spawn_beside(scope, || budget.run(|m| field_tree(m, self.candidate)));
            let lowered = LoweredLineage::of(m, latest, earlier, self.candidate);
            let candidate_tree = joined(candidate_tree);
            let semantic = lowered.evaluate(m, &candidate_tree, self.context, self.settings);
            // Freed while the structural check may still run, not after it.
            drop((candidate_tree, lowered));
            (joined(structural), semantic)
        });
        findings.extend(self.stamped(semantic));
        Report::from_findings(findings)
    }

    fn structural(&self, m: Metered<'_>) -> Vec<Finding> {
        covenant_schema::check(m, self.level, self.candidate, self.history, self.options).findings
    }

    /// The lineage the semantic rules read: every earlier version when given, else the
    /// history in scope.
    fn lineage(&self) -> &[(i64, &ParsedSchema)] {
        if self.lineage.is_empty() {
            self.history
        } else {
            self.lineage
        }
    }

    fn semantic(&self, m: Metered<'_>) -> Vec<Finding> {
        let lineage = self.lineage();
        if lineage.is_empty() {
            return evaluate_first_schema(m, self.candidate, self.context, self.settings);
        }
        self.stamped(evaluate_schemas_in_history(
            m,
            lineage,
            self.candidate,
            self.context,
            self.settings,
        ))
    }

    /// Semantic findings name the version the candidate replaces.
    fn stamped(&self, findings: Vec<Finding>) -> Vec<Finding> {
        let version = self.lineage().last().map(|(v, _)| *v);
        findings
            .into_iter()
            .map(|mut f| {
                f.version = version;
                f
            })
            .collect()
    }
}

fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// The rollout plan for `candidate` replacing the last of `history` (oldest first, every
/// version whose producers, consumers or data may still meet the new one): the new schema must
/// read every one of them and each of them must read it, structurally and semantically, under
/// the budget `m` proves installed.
pub fn rollout(
    m: Metered<'_>,
    candidate: &ParsedSchema,
    history: &[(i64, &ParsedSchema)],
    options: &CheckOptions,
    context: &PolicyContext,
    settings: &PolicySettings,
) -> RolloutPlan {
    let backward =
        covenant_schema::check(m, Level::BackwardTransitive, candidate, history, options);
    let forward = covenant_schema::check(m, Level::ForwardTransitive, candidate, history, options);
    let semantic = match history.last() {
        Some(_) => evaluate_schemas_in_history(m, history, candidate, context, settings),
        None => evaluate_first_schema(m, candidate, context, settings),
    };
    plan_with_semantics(&backward, &forward, &semantic)
}

/// The rule catalog as Markdown (`docs/rules.md`), with each rule's level under each policy
/// preset: structural, replay and profile rules are the same under both; semantic rules take
/// their level from [`crate::presets::LEVELS`].
pub fn rules_markdown() -> String {
    let groups = all_rule_groups();
    let columns: Vec<&str> = crate::Preset::ALL.iter().map(|p| p.as_str()).collect();
    covenant_engine::rules_markdown_with(&groups, PRESETS_INTRO, &columns, &|rule| {
        crate::Preset::ALL
            .iter()
            .map(|p| match p.level(rule).severity() {
                Some(s) => s.to_string(),
                None => "off".to_string(),
            })
            .collect()
    })
}

const PRESETS_INTRO: &str = "The **covenant** and **confluent** columns give each rule's level under the two policy presets, chosen in config like `compatibility` (`{\"policyPreset\": \"confluent\"}` on `PUT /config`, a context's `PUT /config/:.ctx:` or `PUT /config/{subject}`; `covenant check --preset`). `covenant`, the default, refuses the changes the seeds call dangerous; `confluent` gives Confluent's structural verdicts, and its semantic findings are reported but never refuse a change. A level named in the subject's `semanticRules` overrides either preset. An `error` refuses the change; the refusal names the change that needs no approval (the hint) and that a principal holding the `Approve` operation on the subject may accept the risk. Imports (IMPORT mode, `covenant import`, `covenant migrate`) never judge history.\n";

/// Every rule Covenant can report, structural and semantic, in catalog order.
pub fn all_rule_groups() -> Vec<(&'static str, &'static [&'static RuleSpec])> {
    let mut groups = covenant_schema::rule_groups();
    groups.push(("Semantic", crate::rules()));
    groups.push(("Sample replay", crate::replay_rules()));
    groups.push(("Data profile", covenant_profile::rules()));
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use covenant_schema::SchemaType;

    fn avro(text: &str) -> ParsedSchema {
        ParsedSchema::parse(SchemaType::Avro, text, &[]).expect("valid Avro")
    }

    /// `new` judged over version 1, `old`, at `level` under `settings`, without limits.
    fn judged(
        level: Level,
        new: &ParsedSchema,
        old: &ParsedSchema,
        settings: &PolicySettings,
    ) -> Report {
        covenant_engine::budget::unlimited(|m| {
            let (options, context) = (CheckOptions::default(), PolicyContext::default());
            judge(
                m,
                level,
                new,
                &[(1, old)],
                &[],
                &options,
                &context,
                settings,
            )
        })
    }

    #[test]
    fn structural_and_semantic_findings_share_one_report() {
        let v1 = avro(
            r#"{"type":"record","name":"Case","fields":[{"name":"caseOwner","type":"string"}]}"#,
        );
        let v2 = avro(
            r#"{"type":"record","name":"Case","fields":[{"name":"assignedOfficer","type":"string"}]}"#,
        );
        let report = judged(Level::Backward, &v2, &v1, &PolicySettings::default());
        let rules: Vec<&str> = report.findings.iter().map(|f| f.rule.as_ref()).collect();
        assert!(
            rules.contains(&"READER_FIELD_MISSING_DEFAULT_VALUE"),
            "{rules:?}"
        );
        assert!(rules.contains(&"LIKELY_RENAME"), "{rules:?}");
        assert!(!report.compatible);
        assert!(report.findings.iter().all(|f| f.version == Some(1)));
    }

    #[test]
    fn a_semantic_rule_set_to_error_blocks_an_otherwise_compatible_change() {
        let v1 = avro(
            r#"{"type":"record","name":"Case","fields":[{"name":"status","type":{"type":"enum","name":"S","symbols":["OPEN","CLOSED"],"default":"OPEN"}}]}"#,
        );
        let v2 = avro(
            r#"{"type":"record","name":"Case","fields":[{"name":"status","type":{"type":"enum","name":"S","symbols":["OPEN","CLOSED","SUSPENDED"],"default":"OPEN"}}]}"#,
        );
        let lenient = judged(Level::Full, &v2, &v1, &PolicySettings::default());
        assert!(lenient.compatible, "{:?}", lenient.findings);
        assert!(
            lenient
                .findings
                .iter()
                .any(|f| f.rule == "ENUM_VALUE_ADDED")
        );
        let strict = PolicySettings::default().with("ENUM_VALUE_ADDED", crate::RuleLevel::Error);
        let blocked = judged(Level::Full, &v2, &v1, &strict);
        assert!(!blocked.compatible);
    }

    /// Both ways of judging give the same report, semantic findings stamped with the version
    /// replaced, for a first version, a pair and a lineage whose numbers were reused.
    #[test]
    fn two_threads_judge_as_one_does() {
        let proto = |text: &str| ParsedSchema::parse(SchemaType::Protobuf, text, &[]).unwrap();
        let v1 = proto("syntax = \"proto3\";\nmessage Case { string id = 1; string owner = 2; }\n");
        let v2 = proto("syntax = \"proto3\";\nmessage Case { string id = 1; }\n");
        let v3 = proto(
            "syntax = \"proto3\";\nmessage Case { string id = 1; int64 ownerId = 2; string note = 3; }\n",
        );
        let options = CheckOptions::default();
        let (context, settings) = (PolicyContext::default(), PolicySettings::default());
        let cases: [(&ParsedSchema, Vec<(i64, &ParsedSchema)>); 3] = [
            (&v1, vec![]),
            (&v2, vec![(1, &v1)]),
            (&v3, vec![(1, &v1), (2, &v2)]),
        ];
        let mut last = None;
        for (candidate, history) in &cases {
            let judgement = Judgement {
                level: Level::FullTransitive,
                candidate,
                history,
                lineage: &[],
                options: &options,
                context: &context,
                settings: &settings,
            };
            let (one, two) = covenant_engine::budget::unlimited(|m| {
                (judgement.judge(m), judgement.in_parallel(m))
            });
            assert_eq!(format!("{:?}", one.findings), format!("{:?}", two.findings));
            assert_eq!(one.compatible, two.compatible);
            last = Some(two);
        }
        let v3_report = last.unwrap();
        let reused: Vec<_> = v3_report
            .findings
            .iter()
            .filter(|f| f.rule == "PROTOBUF_HISTORY_REUSED")
            .collect();
        assert!(!reused.is_empty(), "{:?}", v3_report.findings);
        assert!(reused.iter().all(|f| f.version == Some(2)), "{reused:?}");
    }

    #[test]
    fn the_catalog_lists_semantic_rules_after_the_formats() {
        let groups = all_rule_groups();
        let titles: Vec<&str> = groups.iter().map(|g| g.0).collect();
        assert_eq!(
            titles[titles.len() - 3..],
            ["Semantic", "Sample replay", "Data profile"]
        );
        assert!(
            groups
                .iter()
                .find(|g| g.0 == "Semantic")
                .is_some_and(|g| g.1.iter().any(|r| r.id == "LIKELY_RENAME"))
        );
    }
}

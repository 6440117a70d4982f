use crate::Severity;

/// A compatibility or evolution rule: its stable id, what it means, and how to change safely.
///
/// Each rule lives in one small module beside the check that emits it and its tests; the
/// catalog in `docs/rules.md` is generated from these specs so the two cannot drift.
#[derive(Debug, Clone, Copy)]
pub struct RuleSpec {
    /// Stable, upper-snake-case id; Confluent's difference-type name where one exists.
    pub id: &'static str,
    /// `avro`, `json`, `protobuf`, or `any`.
    pub format: &'static str,
    /// Grouping for the catalog, e.g. `structural`, `wire`, `semantic`.
    pub category: &'static str,
    pub default_severity: Severity,
    /// One sentence: what the rule detects.
    pub summary: &'static str,
    /// A schema change that triggers the rule.
    pub bad_example: &'static str,
    /// The same intent, made safely.
    pub good_example: &'static str,
    /// How to make the change safely; copied into each finding.
    pub hint: &'static str,
    /// The peer rule ids this rule corresponds to, e.g. `confluent:TYPE_MISMATCH`, `buf:FIELD_NO_DELETE`.
    pub peers: &'static [&'static str],
}

/// The rules of one format, in catalog order.
pub trait RuleCatalog {
    fn rules() -> &'static [&'static RuleSpec];
}

/// Renders the rule catalog as Markdown, grouped by format then category.
pub fn rules_markdown(groups: &[(&str, &[&RuleSpec])]) -> String {
    rules_markdown_with(groups, "", &["severity"], &|r| {
        vec![r.default_severity.to_string()]
    })
}

/// [`rules_markdown`] with `intro` after the opening paragraph and one level column per name
/// in `columns`, filled by `levels` (for example a rule's level under each policy preset).
pub fn rules_markdown_with(
    groups: &[(&str, &[&RuleSpec])],
    intro: &str,
    columns: &[&str],
    levels: &dyn Fn(&RuleSpec) -> Vec<String>,
) -> String {
    let mut out = String::from(
        "# Rule catalog\n\n\
         Generated from the rule specs in the code (`cargo run -p covenant-cli -- rules --markdown > docs/rules.md`); \
         a test fails when this file is out of date.\n\n\
         Every finding Covenant reports carries one of these ids, a path into the schema, a plain-language message \
         and a hint for making the change safely.\n",
    );
    if !intro.is_empty() {
        out.push('\n');
        out.push_str(intro.trim_end());
        out.push('\n');
    }
    let header: String = columns.iter().map(|c| format!(" {c} |")).collect();
    let rule_line: String = columns.iter().map(|_| "---|").collect();
    for (title, rules) in groups {
        out.push_str(&format!("\n## {title}\n\n"));
        out.push_str(&format!(
            "| id |{header} category | summary | peers |\n|---|{rule_line}---|---|---|\n"
        ));
        for r in rules.iter() {
            let cells: String = levels(r).iter().map(|l| format!(" {l} |")).collect();
            out.push_str(&format!(
                "| [`{}`](#{}) |{cells} {} | {} | {} |\n",
                r.id,
                r.id.to_ascii_lowercase(),
                r.category,
                r.summary.replace('|', "\\|"),
                r.peers.join(", ")
            ));
        }
        for r in rules.iter() {
            // An info rule explains a compatible change, so its "bad" example is only the
            // change that triggers it.
            let (bad, good) = match r.default_severity {
                Severity::Info => ("Triggered by", "Also fine"),
                _ => ("Bad", "Good"),
            };
            out.push_str(&format!(
                "\n### {}\n\n{}\n\n**{bad}:**\n\n```\n{}\n```\n\n**{good}:**\n\n```\n{}\n```\n\n**How to change safely:** {}\n",
                r.id, r.summary, r.bad_example, r.good_example, r.hint
            ));
        }
    }
    out
}

use crate::model::{Arena, Kind};
use covenant_engine::{Finding, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "UNION_DEFAULT_NOT_FIRST_BRANCH",
    format: "avro",
    category: "lint",
    default_severity: Severity::Warning,
    summary: "A union field's default matches a later branch, not the first one as the Avro specification requires; Java (and Confluent) accept it, but other implementations reject the schema or misread the default.",
    bad_example: "{\"name\":\"reason\",\"type\":[\"null\",\"string\"],\"default\":\"none\"}",
    good_example: "{\"name\":\"reason\",\"type\":[\"string\",\"null\"],\"default\":\"none\"}",
    hint: "Put the branch the default belongs to first in the union (for a null default, \"null\" first).",
    peers: &[],
};

/// Walks every record field once.
pub fn lint(arena: &Arena) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    walk(arena, arena.root, "", &mut seen, &mut out, 0);
    out
}

fn walk(
    arena: &Arena,
    id: usize,
    path: &str,
    seen: &mut std::collections::HashSet<usize>,
    out: &mut Vec<Finding>,
    depth: usize,
) {
    if depth > crate::parse::MAX_DEPTH * 2 {
        return;
    }
    match arena.kind(id) {
        Kind::Record(r) => {
            if !seen.insert(id) {
                return;
            }
            for f in &r.fields {
                let fpath = format!("{path}/fields/{}", f.name);
                if let Some(d) = &f.default
                    && !crate::default::matches_first_branch(arena, f.ty, d)
                {
                    out.push(Finding::new(
                        &RULE,
                        format!("{fpath}/default"),
                        format!(
                            "Default {d} of field '{}' does not match the first branch of its union {}.",
                            f.name,
                            arena.describe(f.ty)
                        ),
                    ));
                }
                walk(arena, f.ty, &format!("{fpath}/type"), seen, out, depth + 1);
            }
        }
        Kind::Array(i) => walk(arena, *i, &format!("{path}/items"), seen, out, depth + 1),
        Kind::Map(v) => walk(arena, *v, &format!("{path}/values"), seen, out, depth + 1),
        Kind::Union(bs) => {
            for b in bs {
                walk(
                    arena,
                    *b,
                    &format!("{path}/{}", arena.branch_label(*b)),
                    seen,
                    out,
                    depth + 1,
                );
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use crate::AvroFormat;
    use covenant_engine::{CheckOptions, Format};

    #[test]
    fn later_branch_default_is_accepted_but_flagged() {
        let s = AvroFormat::parse(
            r#"{"type":"record","name":"R","fields":[{"name":"r","type":["null","string"],"default":"x"}]}"#,
            &[],
        )
        .expect("Java accepts a default of any branch");
        let lint = AvroFormat::lint(&s, &CheckOptions::default());
        assert_eq!(lint.len(), 1);
        assert_eq!(lint[0].path, "/fields/r/default");
        let ok = AvroFormat::parse(
            r#"{"type":"record","name":"R","fields":[{"name":"r","type":["null","string"],"default":null}]}"#,
            &[],
        )
        .expect("parses");
        assert!(AvroFormat::lint(&ok, &CheckOptions::default()).is_empty());
    }
}

//! A union that keeps growing is a schema-less field in disguise: every reader must handle
//! every branch, and each new branch is a breaking change for some of them.

use crate::pair::Pair;
use covenant_engine::{Finding, NodeKind, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "WIDE_UNION",
    format: "avro",
    category: "semantic",
    // A warning: wide unions are legal, but past a few branches they usually hide several
    // event types in one field. Source: schema-evolution-rules §8.4.
    default_severity: Severity::Warning,
    summary: "A union grew past four branches besides null; every consumer must handle every branch, and each new branch breaks the ones that do not. Source: schema-evolution-rules §8.4.",
    bad_example: "{\"name\": \"payload\", \"type\": [\"null\", \"string\", \"long\", \"double\", \"boolean\", \"bytes\"]}",
    good_example: "one field per meaning, or separate event types (subjects) for the different payloads",
    hint: "Keep unions to a few branches (typically null plus one type); model different payloads as separate fields or event types.",
    peers: &[],
};

/// Branches a union may have besides null before it is reported.
const MAX_BRANCHES: usize = 4;

/// The number of top-level branches of a `union<...>` type name (null excluded by the tree).
fn branches(type_name: &str) -> usize {
    let Some(inner) = type_name
        .strip_prefix("union<")
        .and_then(|t| t.strip_suffix('>'))
    else {
        return 0;
    };
    let mut depth = 0usize;
    let mut count = 1;
    for c in inner.chars() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => count += 1,
            _ => {}
        }
    }
    count
}

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for new in pair.new_nodes() {
        let now = branches(&new.node.type_name);
        if new.node.kind != NodeKind::Field || now <= MAX_BRANCHES {
            continue;
        }
        let before = pair
            .old_at(&new.node.path)
            .map(|o| branches(&o.node.type_name))
            .unwrap_or(0);
        if before >= now {
            continue;
        }
        findings.push(Finding::new(
            &RULE,
            new.node.path.clone(),
            format!(
                "The union of field '{}' has {now} branches besides null (more than {MAX_BRANCHES}); every consumer must handle each of them.",
                new.node.name
            ),
        ));
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::branches;
    use crate::rules::testkit::*;

    #[test]
    fn counts_top_level_branches() {
        assert_eq!(branches("union<string,long>"), 2);
        assert_eq!(branches("union<map<union<a,b>>,long,double>"), 3);
        assert_eq!(branches("string"), 0);
    }

    #[test]
    fn a_union_grown_to_five_branches() {
        let old = avro("E", vec![field("payload", "union<string,long>")]);
        let new = avro(
            "E",
            vec![field("payload", "union<string,long,double,boolean,bytes>")],
        );
        assert_eq!(run("WIDE_UNION", &old, &new, &none()).len(), 1);
        assert!(run("WIDE_UNION", &new, &new, &none()).is_empty());
    }
}

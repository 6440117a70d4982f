use crate::compat::Issue;
use crate::model::{Logical, Node};
use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "LOGICAL_TYPE_CHANGED",
    format: "avro",
    category: "semantic",
    default_severity: Severity::Warning,
    summary: "The logical type on the same underlying type changed (for example a decimal's precision or scale); the bytes still decode but their meaning changes. Java's checker, and so Confluent, ignores logical types, so this never fails a check.",
    bad_example: "writer: {\"type\":\"bytes\",\"logicalType\":\"decimal\",\"precision\":10,\"scale\":2}\nreader: {\"type\":\"bytes\",\"logicalType\":\"decimal\",\"precision\":10,\"scale\":4}",
    good_example: "reader: {\"type\":\"bytes\",\"logicalType\":\"decimal\",\"precision\":12,\"scale\":2}",
    hint: "Keep the scale of a decimal (values are unscaled integers, so a new scale silently rescales them); for other logical types, add a new field instead of reinterpreting the old one.",
    peers: &[],
};

fn describe(l: Option<&Logical>) -> String {
    match l {
        Some(Logical::Decimal { precision, scale }) => format!("decimal({precision},{scale})"),
        Some(l) => l.name().to_string(),
        None => "no logical type".to_string(),
    }
}

/// A warning when the logical types of two nodes of the same kind differ in meaning. Widening
/// a decimal's precision at the same scale is safe and passes silently.
pub fn check(reader: &Node, writer: &Node) -> Option<Issue> {
    let (r, w) = (reader.logical.as_ref(), writer.logical.as_ref());
    let changed = match (r, w) {
        (
            Some(Logical::Decimal {
                precision: rp,
                scale: rs,
            }),
            Some(Logical::Decimal {
                precision: wp,
                scale: ws,
            }),
        ) => rs != ws || rp < wp,
        (a, b) => a != b,
    };
    if !changed {
        return None;
    }
    Some(Issue::new(
        &RULE,
        "",
        format!(
            "Logical type changed from {} in the writer to {} in the reader.",
            describe(w),
            describe(r)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use crate::rules::test_support::{findings, pair};

    fn dec(p: u32, s: u32) -> String {
        format!(
            r#"{{"type":"record","name":"R","fields":[{{"name":"d","type":{{"type":"bytes","logicalType":"decimal","precision":{p},"scale":{s}}}}}]}}"#
        )
    }

    #[test]
    fn scale_change_warns_and_wider_precision_does_not() {
        assert_eq!(
            findings(&dec(10, 4), &dec(10, 2)),
            vec![pair("LOGICAL_TYPE_CHANGED", "/fields/d/type")]
        );
        assert!(findings(&dec(12, 2), &dec(10, 2)).is_empty());
        assert_eq!(
            findings(&dec(8, 2), &dec(10, 2)),
            vec![pair("LOGICAL_TYPE_CHANGED", "/fields/d/type")]
        );
    }
}

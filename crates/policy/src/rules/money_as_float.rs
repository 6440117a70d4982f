//! Binary floating point cannot hold 0.10: money in a `double` or `float` rounds on every
//! sum, and reports stop reconciling.

use crate::pair::{Pair, Sensitivity, sensitivity};
use covenant_engine::{Finding, NodeKind, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "MONEY_AS_FLOAT",
    format: "any",
    category: "semantic",
    // A warning: a money-like name is a guess, but a new money field is the one moment the
    // representation is cheap to choose. Source: schema-evolution-rules §23.2.
    default_severity: Severity::Warning,
    summary: "A new field that holds money (by its name, currency annotation or logical type) is a binary floating-point `double` or `float`, which cannot represent most decimal amounts exactly. Source: schema-evolution-rules §23.2.",
    bad_example: "{\"name\": \"amount\", \"type\": \"double\"}",
    good_example: "{\"name\": \"amountMinorUnits\", \"type\": \"long\"}, {\"name\": \"currency\", \"type\": \"string\", \"doc\": \"ISO-4217 code.\"}",
    hint: "Use integer minor units with an ISO-4217 currency (amountMinorUnits: long, currency: string), or a decimal logical type with an explicit scale.",
    peers: &[],
};

const FLOATS: [&str; 4] = ["double", "float", "array<double>", "array<float>"];

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    pair.added()
        .into_iter()
        .filter(|l| l.node.kind == NodeKind::Field)
        .filter(|l| FLOATS.contains(&l.node.type_name.as_str()))
        .filter(|l| sensitivity(l.node) == Some(Sensitivity::Money))
        .map(|l| {
            Finding::new(
                &RULE,
                l.node.path.clone(),
                format!(
                    "Field '{}' holds money as '{}'; binary floating point rounds decimal amounts, so totals stop reconciling.",
                    l.node.name, l.node.type_name
                ),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;

    #[test]
    fn amount_as_double() {
        let old = avro("Payment", vec![field("id", "string")]);
        let new = avro(
            "Payment",
            vec![
                field("id", "string"),
                field("amount", "double"),
                field("ratio", "double"),
                field("amountMinorUnits", "long"),
            ],
        );
        let findings = run("MONEY_AS_FLOAT", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/fields/amount");
        let first = run(
            "MONEY_AS_FLOAT",
            &covenant_engine::FieldTree::empty("AVRO"),
            &new,
            &none(),
        );
        assert_eq!(first.len(), 1, "a first version is all new fields");
        assert!(run("MONEY_AS_FLOAT", &new, &new, &none()).is_empty());
    }
}

//! A type change on a field holding money, time or identity, even one the parser accepts.

use crate::pair::{Pair, sensitivity};
use covenant_engine::{Finding, NodeKind, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "SENSITIVE_TYPE_CHANGED",
    format: "any",
    category: "semantic",
    // An error under the `covenant` preset (seeds Rule 7, §23.2-23.3): a legal promotion
    // (money int to long or long to double, timestamp-millis to double) still changes
    // precision, rounding, parsing or leading zeros. Spotting money, time and identity
    // partly relies on field names, which is why the refusal names the way through.
    default_severity: Severity::Error,
    summary: "A field that holds money, a point in time or an identifier changed type, even by a promotion the parser accepts; precision, rounding, time zones or leading zeros change under the same name.",
    bad_example: "v1: {\"name\": \"amount\", \"type\": \"string\"}\nv2: {\"name\": \"amount\", \"type\": {\"type\": \"bytes\", \"logicalType\": \"decimal\", \"precision\": 18, \"scale\": 2}}",
    good_example: "v2: keep {\"name\": \"amount\", \"type\": \"string\", \"doc\": \"Deprecated: use amountMinorUnits and currency.\"}\n    add {\"name\": \"amountMinorUnits\", \"type\": [\"null\", \"long\"], \"default\": null}\n    add {\"name\": \"currency\", \"type\": [\"null\", \"string\"], \"default\": null, \"doc\": \"ISO-4217 code.\"}",
    hint: "Add a new field with the new type and a name that states the representation (amountMinorUnits with currency, businessEventTime), write both, reconcile consumers' results, then deprecate the old field.",
    peers: &[],
};

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (old, new) in pair.matched() {
        if new.node.kind != NodeKind::Field || old.node.type_name == new.node.type_name {
            continue;
        }
        // A decimal widened at the same scale keeps every amount exact, as Avro's bytes
        // decimal (whose type name does not carry the precision) already shows.
        if super::value_reinterpreted::decimal_widened(old.node, new.node) {
            continue;
        }
        let Some(kind) = sensitivity(old.node).or_else(|| sensitivity(new.node)) else {
            continue;
        };
        findings.push(
            Finding::new(
                &RULE,
                new.node.path.clone(),
                format!(
                    "Field '{}' holds {} and changed type from '{}' to '{}'; even a legal promotion changes how consumers parse, round or compare it.",
                    new.node.name,
                    kind.describe(),
                    old.node.display_type(),
                    new.node.display_type()
                ),
            )
            .with_hint(format!(
                "Keep '{}' as it is and add a new field of type '{}' whose name states the representation, write both, reconcile consumers' results, then deprecate '{}'.",
                old.node.name,
                new.node.display_type(),
                old.node.name
            )),
        );
    }
    findings
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;

    #[test]
    fn amount_string_to_decimal() {
        let old = avro("Payment", vec![field("amount", "string")]);
        let new = avro("Payment", vec![field("amount", "bytes").logical("decimal")]);
        let findings = run("SENSITIVE_TYPE_CHANGED", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/fields/amount");
        assert_eq!(
            findings[0].message,
            "Field 'amount' holds money or an exact amount and changed type from 'string' to 'bytes (decimal)'; even a legal promotion changes how consumers parse, round or compare it."
        );
    }

    #[test]
    fn an_iceberg_decimal_widened_at_the_same_scale_keeps_its_amounts() {
        let iceberg = |ty: &str| {
            let mut tree = avro("E", vec![field("price", ty)]);
            tree.format = "ICEBERG".into();
            tree
        };
        let widened = run(
            "SENSITIVE_TYPE_CHANGED",
            &iceberg("decimal(9, 2)"),
            &iceberg("decimal(18, 2)"),
            &none(),
        );
        assert!(widened.is_empty(), "{widened:?}");
        let rescaled = run(
            "SENSITIVE_TYPE_CHANGED",
            &iceberg("decimal(9, 2)"),
            &iceberg("decimal(18, 4)"),
            &none(),
        );
        assert_eq!(rescaled.len(), 1);
    }

    #[test]
    fn tick_size_string_to_decimal_is_caught_by_the_logical_type() {
        let old = json(vec![property("tick_size", "string")]);
        let new = json(vec![property("tick_size", "number").logical("decimal")]);
        let findings = run("SENSITIVE_TYPE_CHANGED", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "#/properties/tick_size");
    }

    #[test]
    fn legal_promotions_of_ids_and_times_are_reported() {
        let old = avro(
            "E",
            vec![field("caseId", "int"), field("updatedAt", "long")],
        );
        let new = avro(
            "E",
            vec![field("caseId", "long"), field("updatedAt", "string")],
        );
        let findings = run("SENSITIVE_TYPE_CHANGED", &old, &new, &none());
        let paths: Vec<&str> = findings.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["/fields/caseId", "/fields/updatedAt"]);
        assert!(findings[0].message.contains("holds an identifier"));
        assert!(findings[1].message.contains("holds a point in time"));
    }

    #[test]
    fn ordinary_fields_and_unchanged_types_are_left_to_structural_rules() {
        let old = avro("E", vec![field("count", "int"), field("amount", "string")]);
        let new = avro("E", vec![field("count", "long"), field("amount", "string")]);
        assert!(run("SENSITIVE_TYPE_CHANGED", &old, &new, &none()).is_empty());
    }
}

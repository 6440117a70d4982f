//! A promotion the parser accepts can still change what the stored bytes mean: the text
//! `"12.34"` read as `decimal(18,2)` is 2,112,952,860.68, a count of milliseconds read as
//! microseconds moves every event to 1970. Nothing fails; every value is quietly wrong.

use crate::pair::Pair;
use covenant_engine::{Finding, Node, NodeKind, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "VALUE_REINTERPRETED",
    format: "any",
    category: "semantic",
    // An error: old data decodes without complaint into different values (no parse error, no
    // structural finding), which is the worst kind of corruption to find later. Source:
    // schema-evolution-rules Rule 7, §23.2 and §23.3.
    default_severity: Severity::Error,
    summary: "A field kept its name but the way its stored value is read changed: text or bytes became a decimal, a decimal's scale changed or its precision narrowed, a time's unit or clock changed (millis, micros, nanos; date and timestamp; local and UTC), or an integer became an enum or back. Old records decode without error into different values. Source: schema-evolution-rules Rule 7, §23.2, §23.3.",
    bad_example: "v1: {\"name\": \"amount\", \"type\": \"string\"}\nv2: {\"name\": \"amount\", \"type\": {\"type\": \"bytes\", \"logicalType\": \"decimal\", \"precision\": 18, \"scale\": 2}}",
    good_example: "v2: keep {\"name\": \"amount\", \"type\": \"string\", \"doc\": \"Deprecated: use amountMinorUnits.\"}\n    add {\"name\": \"amountMinorUnits\", \"type\": [\"null\", \"long\"], \"default\": null}",
    hint: "Keep the field as it is and add a new field whose name states the new representation (amountMinorUnits, eventTimeMicros), write both, reconcile, then deprecate the old one.",
    peers: &[],
};

/// How a stored value is read, where a change silently changes the value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reading {
    /// `decimal(p,s)` or a bare `decimal` when the format states no precision.
    Decimal(String),
    /// A time logical type or format: `timestamp-millis`, `local-timestamp-micros`, `date`,
    /// `date-time`, `time-millis`.
    Time(String),
    Enum,
    Integer,
    /// Anything else (text, plain bytes, records): not a reading this rule compares.
    Plain,
}

const TIME_LOGICAL: [&str; 11] = [
    "timestamp-millis",
    "timestamp-micros",
    "timestamp-nanos",
    "local-timestamp-millis",
    "local-timestamp-micros",
    "local-timestamp-nanos",
    "date",
    "time-millis",
    "time-micros",
    "date-time",
    "time",
];

const INTEGERS: [&str; 12] = [
    "int", "long", "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64",
    "sfixed32", "sfixed64",
];

fn reading(node: &Node) -> Reading {
    let logical = node
        .logical_type
        .as_deref()
        .unwrap_or("")
        .to_ascii_lowercase();
    if logical.starts_with("decimal") || node.type_name.starts_with("decimal") {
        let shown = if logical.is_empty() {
            node.type_name.clone()
        } else {
            logical
        };
        return Reading::Decimal(shown);
    }
    if TIME_LOGICAL.contains(&logical.as_str()) {
        return Reading::Time(logical);
    }
    if node.type_name.starts_with("enum:") {
        Reading::Enum
    } else if INTEGERS.contains(&node.type_name.as_str()) {
        Reading::Integer
    } else {
        Reading::Plain
    }
}

/// The precision and scale of `decimal(p,s)` (whitespace allowed, as Iceberg's readers allow
/// it), or `None` for a decimal whose parameters are not stated.
fn decimal_parameters(shown: &str) -> Option<(u32, u32)> {
    let inner = shown
        .strip_prefix("decimal")?
        .trim()
        .strip_prefix('(')?
        .strip_suffix(')')?;
    let (precision, scale) = inner.split_once(',')?;
    Some((precision.trim().parse().ok()?, scale.trim().parse().ok()?))
}

/// A wider precision at the same scale keeps every stored value (Iceberg's and Avro's
/// decimal promotion): the unscaled integer and its scale are read as they were written.
fn widened(before: &str, after: &str) -> bool {
    match (decimal_parameters(before), decimal_parameters(after)) {
        (Some((p1, s1)), Some((p2, s2))) => s1 == s2 && p2 >= p1,
        _ => false,
    }
}

/// Whether `new` is `old`'s decimal with a wider (or equal) precision at the same scale,
/// whatever the format spells it: every stored value reads as it was written.
pub(crate) fn decimal_widened(old: &Node, new: &Node) -> bool {
    matches!(
        (reading(old), reading(new)),
        (Reading::Decimal(a), Reading::Decimal(b)) if widened(&a, &b)
    )
}

/// What changed, when the change reinterprets old values.
fn reinterpretation(old: &Node, new: &Node) -> Option<String> {
    let (before, after) = (reading(old), reading(new));
    let what = match (&before, &after) {
        (a, b) if a == b => return None,
        (Reading::Decimal(a), Reading::Decimal(b)) if widened(a, b) => return None,
        (_, Reading::Decimal(d)) => format!(
            "'{}' values are now read as {d}: stored text or bytes decode as a different number",
            old.display_type()
        ),
        (Reading::Decimal(d), _) => format!(
            "{d} values are now read as '{}': the decimal's unscaled bytes lose their scale",
            new.display_type()
        ),
        (Reading::Time(a), Reading::Time(b)) => format!(
            "its time reading changed from '{a}' to '{b}': every stored instant shifts by a unit or a time zone"
        ),
        (Reading::Enum, Reading::Integer) | (Reading::Integer, Reading::Enum) => format!(
            "it changed from '{}' to '{}': stored numbers now mean enum members (or the reverse)",
            old.display_type(),
            new.display_type()
        ),
        _ => return None,
    };
    Some(what)
}

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (old, new) in pair.matched() {
        if new.node.kind != NodeKind::Field || old.node.kind != NodeKind::Field {
            continue;
        }
        if let Some(what) = reinterpretation(old.node, new.node) {
            findings.push(Finding::new(
                &RULE,
                new.node.path.clone(),
                format!(
                    "Field '{}': {what}; old records decode without error into wrong values.",
                    new.node.name
                ),
            ));
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;

    #[test]
    fn amount_string_to_decimal_is_an_error() {
        let old = avro("Payment", vec![field("amount", "string")]);
        let new = avro(
            "Payment",
            vec![field("amount", "bytes").logical("decimal(18,2)")],
        );
        let findings = run("VALUE_REINTERPRETED", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert!(findings[0].is_error());
        assert_eq!(
            findings[0].message,
            "Field 'amount': 'string' values are now read as decimal(18,2): stored text or bytes decode as a different number; old records decode without error into wrong values."
        );
    }

    #[test]
    fn decimal_scale_time_unit_clock_and_enum_changes() {
        let cases = [
            ("decimal(18,2)", "decimal(18,4)", "long", "long"),
            ("timestamp-millis", "timestamp-micros", "long", "long"),
            ("timestamp-millis", "local-timestamp-millis", "long", "long"),
            ("date", "date-time", "string", "string"),
        ];
        for (a, b, ta, tb) in cases {
            let old = avro("E", vec![field("x", ta).logical(a)]);
            let new = avro("E", vec![field("x", tb).logical(b)]);
            assert_eq!(
                run("VALUE_REINTERPRETED", &old, &new, &none()).len(),
                1,
                "{a} -> {b}"
            );
        }
        let old = proto(vec![message("acme.E", vec![("level", "int32", 1)])]);
        let new = proto(vec![message(
            "acme.E",
            vec![("level", "enum:acme.Level", 1)],
        )]);
        assert_eq!(run("VALUE_REINTERPRETED", &old, &new, &none()).len(), 1);
    }

    /// Iceberg's and Avro's decimal promotion: a wider precision at the same scale reads
    /// every stored value as it was written. A narrower one, or another scale, does not.
    #[test]
    fn a_decimal_widened_at_the_same_scale_keeps_its_values() {
        let iceberg_decimal = |ty: &str| {
            let mut tree = avro("E", vec![field("c", ty)]);
            tree.format = "ICEBERG".into();
            tree
        };
        for (a, b) in [
            ("decimal(9, 2)", "decimal(18, 2)"),
            ("decimal(10, 2)", "decimal(20, 2)"),
            ("decimal(9,2)", "decimal( 38 , 2 )"),
        ] {
            let findings = run(
                "VALUE_REINTERPRETED",
                &iceberg_decimal(a),
                &iceberg_decimal(b),
                &none(),
            );
            assert!(findings.is_empty(), "{a} -> {b}: {findings:?}");
        }
        for (a, b) in [
            ("decimal(18, 2)", "decimal(9, 2)"),
            ("decimal(9, 2)", "decimal(18, 4)"),
        ] {
            let findings = run(
                "VALUE_REINTERPRETED",
                &iceberg_decimal(a),
                &iceberg_decimal(b),
                &none(),
            );
            assert_eq!(findings.len(), 1, "{a} -> {b}");
        }
        let old = avro("E", vec![field("x", "bytes").logical("decimal(9,2)")]);
        let new = avro("E", vec![field("x", "bytes").logical("decimal(18,2)")]);
        assert!(run("VALUE_REINTERPRETED", &old, &new, &none()).is_empty());
    }

    #[test]
    fn unchanged_readings_and_plain_promotions_are_left_to_other_rules() {
        let old = avro(
            "E",
            vec![
                field("count", "int"),
                field("at", "long").logical("timestamp-millis"),
                field("note", "string"),
            ],
        );
        let new = avro(
            "E",
            vec![
                field("count", "long"),
                field("at", "long").logical("timestamp-millis"),
                field("note", "bytes"),
            ],
        );
        assert!(run("VALUE_REINTERPRETED", &old, &new, &none()).is_empty());
    }
}

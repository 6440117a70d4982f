//! A type change the parser accepts that still loses digits or sign: Avro's promotions from
//! `long` to `float` or `double` and from `int` to `float` round large values, and Protobuf's
//! integer types share a wire encoding, so `int64` read as `int32` is truncated and a signed
//! value read as unsigned turns negative numbers into huge ones.

use crate::pair::Pair;
use covenant_engine::{Finding, NodeKind, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "PRECISION_LOSS",
    format: "any",
    category: "semantic",
    // An error under the `covenant` preset: the values change silently, and nothing in the
    // structural check sees it. Source: schema-evolution-rules Rule 7 ("numeric precision").
    default_severity: Severity::Error,
    summary: "A field changed to a numeric type that cannot hold every value of the old one, by a change the format accepts: Avro long to float or double and int to float (large values are rounded), Protobuf int64 to int32 (truncated), a signed type to an unsigned one or back (negative values misread), double to float. Source: schema-evolution-rules Rule 7.",
    bad_example: "v1: {\"name\": \"sequenceNumber\", \"type\": \"long\"}\nv2: {\"name\": \"sequenceNumber\", \"type\": \"double\"}",
    good_example: "v2: keep sequenceNumber as long; widen only without loss (int to long or double, float to double, int32 to int64)",
    hint: "Keep the field's type, or widen it only where every old value survives (int to long or double, float to double, int32 to int64, uint32 to uint64 or int64); for a new representation add a new field and write both.",
    peers: &["buf:FIELD_SAME_TYPE"],
};

/// Protobuf integer types: bits, and whether negative values are representable.
fn proto_integer(t: &str) -> Option<(u8, bool)> {
    Some(match t {
        "int32" | "sint32" | "sfixed32" => (32, true),
        "int64" | "sint64" | "sfixed64" => (64, true),
        "uint32" | "fixed32" => (32, false),
        "uint64" | "fixed64" => (64, false),
        "bool" => (1, false),
        _ => return None,
    })
}

/// Why reading `old` values as `new` loses them, if it does.
fn loss(old: &str, new: &str) -> Option<String> {
    let exact = |bits: u32| format!("holds integers exactly only up to 2^{bits}");
    match (old, new) {
        ("long", "double") => Some(format!(
            "a double {}, so larger values (ids, sequence numbers, counters) are rounded",
            exact(53)
        )),
        ("long" | "int", "float") => Some(format!(
            "a float {} (16,777,216), so larger values are rounded",
            exact(24)
        )),
        ("double", "float") => {
            Some("a float keeps about 7 significant digits of a double's 15".to_string())
        }
        _ => {
            let (old_bits, old_signed) = proto_integer(old)?;
            let (new_bits, new_signed) = proto_integer(new)?;
            if new_bits < old_bits {
                Some(format!(
                    "values outside the {new} range are truncated to their low {new_bits} bits"
                ))
            } else if old_signed && !new_signed {
                Some(format!(
                    "negative values are read as large positive {new} values"
                ))
            } else if !old_signed && new_signed && new_bits == old_bits {
                Some(format!(
                    "values above the {new} maximum are read as negative numbers"
                ))
            } else {
                None
            }
        }
    }
}

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (old, new) in pair.matched() {
        if new.node.kind != NodeKind::Field || old.node.type_name == new.node.type_name {
            continue;
        }
        let Some(why) = loss(&old.node.type_name, &new.node.type_name) else {
            continue;
        };
        findings.push(
            Finding::new(
                &RULE,
                new.node.path.clone(),
                format!(
                    "Field '{}' changed type from '{}' to '{}', which the format accepts but {why}.",
                    new.node.name,
                    old.node.display_type(),
                    new.node.display_type()
                ),
            )
            .with_hint(format!(
                "Keep '{}' as '{}' (or widen it without loss); if the new type is wanted, add a new field of type '{}' beside it, write both and migrate consumers.",
                old.node.name,
                old.node.display_type(),
                new.node.display_type()
            )),
        );
    }
    findings
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;

    #[test]
    fn avro_promotions_that_round_large_values() {
        let old = avro(
            "Stats",
            vec![
                field("viewCount", "int"),
                field("sequenceNumber", "long"),
                field("total", "long"),
                field("ratio", "int"),
            ],
        );
        let new = avro(
            "Stats",
            vec![
                field("viewCount", "float"),
                field("sequenceNumber", "double"),
                field("total", "float"),
                field("ratio", "double"),
            ],
        );
        let findings = run("PRECISION_LOSS", &old, &new, &none());
        let paths: Vec<&str> = findings.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "/fields/viewCount",
                "/fields/sequenceNumber",
                "/fields/total"
            ],
            "int to double is exact"
        );
        assert!(
            findings[1].message.contains("2^53"),
            "{}",
            findings[1].message
        );
        assert!(findings.iter().all(|f| f.is_error()));
    }

    #[test]
    fn protobuf_narrowing_and_sign_changes() {
        let old = proto(vec![message(
            "acme.E",
            vec![
                ("a", "int64", 1),
                ("b", "int64", 2),
                ("c", "uint32", 3),
                ("d", "int32", 4),
                ("e", "uint32", 5),
            ],
        )]);
        let new = proto(vec![message(
            "acme.E",
            vec![
                ("a", "int32", 1),
                ("b", "uint64", 2),
                ("c", "int32", 3),
                ("d", "int64", 4),
                ("e", "int64", 5),
            ],
        )]);
        let findings = run("PRECISION_LOSS", &old, &new, &none());
        let paths: Vec<&str> = findings.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            ["/acme.E/fields/a", "/acme.E/fields/b", "/acme.E/fields/c"]
        );
        assert!(findings[0].message.contains("truncated"));
        assert!(findings[1].message.contains("negative values"));
    }
}

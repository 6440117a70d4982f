//! Comparisons shared by twin rules (request/response type, client/server streaming, WIRE and
//! WIRE_JSON cardinality, enum/message JSON format, enum/message reservations). Each rule
//! keeps its own module with its spec and tests; only the comparison lives here, so the twins
//! cannot drift apart.

use crate::buf::{Cardinality, FieldView, missing_parts, ranges_text};
use covenant_engine::{Finding, RuleSpec};
use prost_reflect::{DynamicMessage, FileDescriptor, MethodDescriptor};

/// Reports `rule` when `property` (the text shown in the message) differs between the two
/// versions of an rpc.
pub(crate) fn rpc_property_changed(
    rule: &'static RuleSpec,
    what: &str,
    property: impl Fn(&MethodDescriptor) -> String,
    prev: &MethodDescriptor,
    cur: &MethodDescriptor,
    out: &mut Vec<Finding>,
) {
    let (before, after) = (property(prev), property(cur));
    if before != after {
        let service = cur.parent_service();
        out.push(Finding::new(
            rule,
            format!("/{}/methods/{}", service.full_name(), cur.name()),
            format!(
                "RPC '{}' on service '{}' changed {what} from {before} to {after}.",
                cur.name(),
                service.full_name(),
            ),
        ));
    }
}

/// Reports `rule` when a field moves between cardinality groups (singular, required,
/// repeated, map); `map_apart` keeps maps and repeated fields in different groups, as JSON
/// encodes them differently.
pub(crate) fn cardinality_changed(
    rule: &'static RuleSpec,
    map_apart: bool,
    prev: &FieldView,
    cur: &FieldView,
    out: &mut Vec<Finding>,
) {
    let group = |c: Cardinality| match c {
        Cardinality::OptionalExplicit | Cardinality::OptionalImplicit => 1,
        Cardinality::Required => 2,
        Cardinality::Repeated => 3,
        Cardinality::Map if map_apart => 4,
        Cardinality::Map => 3,
    };
    if prev.in_map_entry && cur.in_map_entry {
        return;
    }
    let (p, c) = (Cardinality::of(prev), Cardinality::of(cur));
    if group(p) != group(c) {
        out.push(Finding::new(
            rule,
            cur.path(),
            format!(
                "{} changed cardinality from '{}' to '{}'.",
                cur.describe(),
                p.text(),
                c.text()
            ),
        ));
    }
}

/// Reports `rule` when an enum or message (`kind`, capitalised) goes from JSON format `ALLOW`
/// to `LEGACY_BEST_EFFORT`.
pub(crate) fn json_format_lost(
    rule: &'static RuleSpec,
    kind: &str,
    full_name: &str,
    prev: (&FileDescriptor, &DynamicMessage),
    cur: (&FileDescriptor, &DynamicMessage),
    out: &mut Vec<Finding>,
) {
    let allowed = |(file, options): (&FileDescriptor, &DynamicMessage)| {
        crate::rules::json_format_allowed(
            file,
            options
                .get_field_by_name("deprecated_legacy_json_field_conflicts")
                .as_deref(),
        )
    };
    if allowed(prev) && !allowed(cur) {
        out.push(Finding::new(
            rule,
            format!("/{full_name}"),
            format!(
                "{kind} '{full_name}' JSON format support changed from ALLOW to LEGACY_BEST_EFFORT."
            ),
        ));
    }
}

/// The reservations of one enum or message: inclusive number ranges and names.
pub(crate) struct Reserved<'a> {
    pub(crate) ranges: Vec<(i64, i64)>,
    pub(crate) names: Vec<&'a str>,
}

/// Reports `rule` for every reserved number range or name of `prev` that `cur` dropped;
/// `kind` (lower case) and `full_name` name the enum or message.
pub(crate) fn reservations_deleted(
    rule: &'static RuleSpec,
    kind: &str,
    full_name: &str,
    prev: &Reserved<'_>,
    cur: &Reserved<'_>,
    out: &mut Vec<Finding>,
) {
    for &(start, end) in &prev.ranges {
        let missing = missing_parts(start, end, &cur.ranges);
        if !missing.is_empty() {
            out.push(Finding::new(
                rule,
                format!("/{full_name}/reserved"),
                format!(
                    "Reserved numbers {} on {kind} '{full_name}' are no longer reserved.",
                    ranges_text(&missing),
                ),
            ));
        }
    }
    for name in &prev.names {
        if !cur.names.contains(name) {
            out.push(Finding::new(
                rule,
                format!("/{full_name}/reserved"),
                format!("Reserved name '{name}' on {kind} '{full_name}' was deleted."),
            ));
        }
    }
}

//! buf's WIRE and WIRE_JSON breaking rules. Unlike Confluent's walk, buf matches messages,
//! enums and services by full name across all of a schema's own files, fields by number.

use crate::ProtobufSchema;
use crate::confluent::file_pairs;
use crate::rules::*;
use covenant_engine::Finding;
use prost_reflect::{
    DescriptorPool, EnumDescriptor, ExtensionDescriptor, FieldDescriptor, FileDescriptor, Kind,
    MessageDescriptor, ServiceDescriptor, Value,
};
use std::collections::BTreeMap;

/// What the field rules need to know about a field or an extension. The strings a finding
/// prints (its path, its description, a default) are made only when a rule reports, since
/// most of the thousands of fields compared have none.
pub(crate) struct FieldView<'a> {
    declared: Declared<'a>,
    /// The field name; for extensions the full name, as buf compares them.
    pub name: &'a str,
    pub kind: Kind,
    pub group: bool,
    pub list: bool,
    pub map: bool,
    pub required: bool,
    pub presence: bool,
    pub json_name: &'a str,
    pub in_map_entry: bool,
    pub extension: bool,
}

enum Declared<'a> {
    Field(&'a FieldDescriptor),
    Extension(&'a ExtensionDescriptor),
}

impl<'a> FieldView<'a> {
    fn of_field(f: &'a FieldDescriptor) -> FieldView<'a> {
        FieldView {
            declared: Declared::Field(f),
            name: f.name(),
            kind: f.kind(),
            group: f.is_group(),
            list: f.is_list(),
            map: f.is_map(),
            required: f.is_required(),
            presence: f.supports_presence(),
            json_name: f.json_name(),
            in_map_entry: f.parent_message().is_map_entry(),
            extension: false,
        }
    }

    fn of_extension(e: &'a ExtensionDescriptor) -> FieldView<'a> {
        FieldView {
            declared: Declared::Extension(e),
            name: e.full_name(),
            kind: e.kind(),
            group: e.is_group(),
            list: e.is_list(),
            map: e.is_map(),
            required: e.cardinality() == prost_reflect::Cardinality::Required,
            presence: e.supports_presence(),
            json_name: e.json_name(),
            in_map_entry: false,
            extension: true,
        }
    }

    pub(crate) fn path(&self) -> String {
        match self.declared {
            Declared::Field(f) => {
                format!("/{}/fields/{}", f.parent_message().full_name(), f.name())
            }
            Declared::Extension(e) => format!("/extensions/{}", e.full_name()),
        }
    }

    /// `Field 'amount' (2) on message 'acme.Order'`, for messages.
    pub(crate) fn describe(&self) -> String {
        match self.declared {
            Declared::Field(f) => format!(
                "Field '{}' ({}) on message '{}'",
                f.name(),
                f.number(),
                f.parent_message().full_name()
            ),
            Declared::Extension(e) => format!(
                "Extension '{}' ({}) of '{}'",
                e.full_name(),
                e.number(),
                e.containing_message().full_name()
            ),
        }
    }

    /// The oneof a field is declared in, synthetic oneofs of proto3 `optional` aside.
    pub(crate) fn oneof(&self) -> Option<String> {
        match self.declared {
            Declared::Field(f) => f
                .containing_oneof()
                .filter(|o| !o.is_synthetic())
                .map(|o| o.name().to_string()),
            Declared::Extension(_) => None,
        }
    }

    pub(crate) fn default(&self) -> Value {
        match self.declared {
            Declared::Field(f) => f.default_value(),
            Declared::Extension(e) => e.default_value(),
        }
    }

    /// The type as buf prints it.
    pub(crate) fn type_text(&self) -> String {
        if self.group {
            return "group".into();
        }
        crate::confluent::type_name(&self.kind)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cardinality {
    OptionalExplicit,
    OptionalImplicit,
    Required,
    Repeated,
    Map,
}

impl Cardinality {
    pub(crate) fn of(f: &FieldView) -> Cardinality {
        if f.map {
            Cardinality::Map
        } else if f.list {
            Cardinality::Repeated
        } else if f.required {
            Cardinality::Required
        } else if f.presence {
            Cardinality::OptionalExplicit
        } else {
            Cardinality::OptionalImplicit
        }
    }

    pub(crate) fn text(self) -> &'static str {
        match self {
            Cardinality::OptionalExplicit => "optional with explicit presence",
            Cardinality::OptionalImplicit => "optional with implicit presence",
            Cardinality::Required => "required",
            Cardinality::Repeated => "repeated",
            Cardinality::Map => "map",
        }
    }
}

/// The declarations of one kind in `files` (all of one pool), from the pool's own list:
/// walking each file's nesting looked every nested name up again by its joined name.
fn declared_in<'a, T, I>(
    files: &'a [FileDescriptor],
    all: impl FnOnce(&'a DescriptorPool) -> I,
    file_of: impl Fn(&T) -> FileDescriptor,
) -> impl Iterator<Item = T>
where
    I: Iterator<Item = T> + 'a,
{
    let all = files.first().map(|f| all(f.parent_pool()));
    all.into_iter()
        .flatten()
        .filter(move |d| files.contains(&file_of(d)))
}

fn all_messages(files: &[FileDescriptor]) -> BTreeMap<String, MessageDescriptor> {
    declared_in(
        files,
        DescriptorPool::all_messages,
        MessageDescriptor::parent_file,
    )
    .map(|m| (m.full_name().to_string(), m))
    .collect()
}

fn all_enums(files: &[FileDescriptor]) -> BTreeMap<String, EnumDescriptor> {
    declared_in(
        files,
        DescriptorPool::all_enums,
        EnumDescriptor::parent_file,
    )
    .map(|e| (e.full_name().to_string(), e))
    .collect()
}

fn all_extensions(files: &[FileDescriptor]) -> BTreeMap<(String, u32), ExtensionDescriptor> {
    declared_in(
        files,
        DescriptorPool::all_extensions,
        ExtensionDescriptor::parent_file,
    )
    .map(|e| {
        (
            (e.containing_message().full_name().to_string(), e.number()),
            e,
        )
    })
    .collect()
}

fn all_services(files: &[FileDescriptor]) -> BTreeMap<String, ServiceDescriptor> {
    files
        .iter()
        .flat_map(|f| f.services())
        .map(|s| (s.full_name().to_string(), s))
        .collect()
}

fn check_field_pair(prev: &FieldView, cur: &FieldView, json: bool, out: &mut Vec<Finding>) {
    if json {
        field_wire_json_compatible_type::check(prev, cur, out);
        field_wire_json_compatible_cardinality::check(prev, cur, out);
        field_same_name::check(prev, cur, out);
        field_same_json_name::check(prev, cur, out);
    } else {
        field_wire_compatible_type::check(prev, cur, out);
        field_wire_compatible_cardinality::check(prev, cur, out);
    }
    field_same_oneof::check(prev, cur, out);
    field_same_default::check(prev, cur, out);
}

/// What a buf rule is about, which decides the passes of a level it runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Concern {
    /// The history of the file (reservations kept, deletions reserved): it compares the
    /// earlier version with the later one, so it runs once per pair, in the direction of time.
    /// Under FULL the reverse pass would otherwise judge the old file as an edit of the new
    /// one and demand reservations that exist only in the new file.
    History,
    /// Whether a reader decodes a writer's data (wire and JSON types, names, cardinality,
    /// defaults, RPC shapes): it runs in every direction the level checks.
    Readability,
}

/// Every buf rule with its concern; a test keeps this list equal to the buf rules of the
/// catalog. `ProtobufFormat::check_pass` applies it to every finding.
pub const CONCERNS: &[(&str, Concern)] = &[
    ("FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED", Concern::History),
    ("FIELD_NO_DELETE_UNLESS_NAME_RESERVED", Concern::History),
    (
        "ENUM_VALUE_NO_DELETE_UNLESS_NUMBER_RESERVED",
        Concern::History,
    ),
    (
        "ENUM_VALUE_NO_DELETE_UNLESS_NAME_RESERVED",
        Concern::History,
    ),
    ("RESERVED_MESSAGE_NO_DELETE", Concern::History),
    ("RESERVED_ENUM_NO_DELETE", Concern::History),
    ("FIELD_WIRE_COMPATIBLE_TYPE", Concern::Readability),
    ("FIELD_WIRE_JSON_COMPATIBLE_TYPE", Concern::Readability),
    ("FIELD_WIRE_COMPATIBLE_CARDINALITY", Concern::Readability),
    (
        "FIELD_WIRE_JSON_COMPATIBLE_CARDINALITY",
        Concern::Readability,
    ),
    ("FIELD_SAME_ONEOF", Concern::Readability),
    ("FIELD_SAME_DEFAULT", Concern::Readability),
    ("FIELD_SAME_NAME", Concern::Readability),
    ("FIELD_SAME_JSON_NAME", Concern::Readability),
    ("MESSAGE_SAME_REQUIRED_FIELDS", Concern::Readability),
    ("MESSAGE_SAME_JSON_FORMAT", Concern::Readability),
    ("ENUM_VALUE_SAME_NAME", Concern::Readability),
    ("ENUM_SAME_JSON_FORMAT", Concern::Readability),
    ("FILE_SAME_PACKAGE", Concern::Readability),
    // Emitted by the walk over a file set for every strictness: a deleted file is history.
    ("FILE_NO_DELETE", Concern::History),
    ("RPC_SAME_CLIENT_STREAMING", Concern::Readability),
    ("RPC_SAME_SERVER_STREAMING", Concern::Readability),
    ("RPC_SAME_REQUEST_TYPE", Concern::Readability),
    ("RPC_SAME_RESPONSE_TYPE", Concern::Readability),
    ("RPC_SAME_IDEMPOTENCY_LEVEL", Concern::Readability),
];

/// The concern of a buf rule, `None` for rules that are not buf's.
pub fn concern(rule_id: &str) -> Option<Concern> {
    CONCERNS
        .iter()
        .find(|(id, _)| *id == rule_id)
        .map(|(_, c)| *c)
}

/// Runs the WIRE rules, or the WIRE_JSON rules when `json`, for reading `writer` data with
/// `reader` (buf's "previous" is the writer).
pub(crate) fn check(
    reader: &ProtobufSchema,
    writer: &ProtobufSchema,
    json: bool,
    out: &mut Vec<Finding>,
) {
    for (w, r, path) in file_pairs(reader, writer) {
        if let Some(r) = r {
            file_same_package::check(&w, &r, &path, out);
        }
    }
    let (prev_files, cur_files) = (writer.own_files(), reader.own_files());

    let (prev_msgs, cur_msgs) = (all_messages(&prev_files), all_messages(&cur_files));
    for (name, prev) in &prev_msgs {
        let Some(cur) = cur_msgs.get(name) else {
            continue;
        };
        field_no_delete_unless_number_reserved::check(prev, cur, out);
        if json {
            field_no_delete_unless_name_reserved::check(prev, cur, out);
            message_same_json_format::check(prev, cur, out);
        }
        reserved_message_no_delete::check(prev, cur, out);
        message_same_required_fields::check(prev, cur, out);
        for pf in prev.fields() {
            if let Some(cf) = cur.get_field(pf.number()) {
                check_field_pair(
                    &FieldView::of_field(&pf),
                    &FieldView::of_field(&cf),
                    json,
                    out,
                );
            }
        }
    }

    let (prev_ext, cur_ext) = (all_extensions(&prev_files), all_extensions(&cur_files));
    for (key, pe) in &prev_ext {
        if let Some(ce) = cur_ext.get(key) {
            check_field_pair(
                &FieldView::of_extension(pe),
                &FieldView::of_extension(ce),
                json,
                out,
            );
        }
    }

    let (prev_enums, cur_enums) = (all_enums(&prev_files), all_enums(&cur_files));
    for (name, prev) in &prev_enums {
        let Some(cur) = cur_enums.get(name) else {
            continue;
        };
        enum_value_no_delete_unless_number_reserved::check(prev, cur, out);
        if json {
            enum_value_no_delete_unless_name_reserved::check(prev, cur, out);
            enum_value_same_name::check(prev, cur, out);
            enum_same_json_format::check(prev, cur, out);
        }
        reserved_enum_no_delete::check(prev, cur, out);
    }

    let (prev_svcs, cur_svcs) = (all_services(&prev_files), all_services(&cur_files));
    for (name, prev) in &prev_svcs {
        let Some(cur) = cur_svcs.get(name) else {
            continue;
        };
        for pm in prev.methods() {
            if let Some(cm) = cur.methods().find(|m| m.name() == pm.name()) {
                rpc_same_client_streaming::check(&pm, &cm, out);
                rpc_same_server_streaming::check(&pm, &cm, out);
                rpc_same_request_type::check(&pm, &cm, out);
                rpc_same_response_type::check(&pm, &cm, out);
                rpc_same_idempotency_level::check(&pm, &cm, out);
            }
        }
    }
}

/// buf's wire compatibility groups of field kinds.
pub(crate) fn wire_group(f: &FieldView) -> u8 {
    if f.group {
        return 9;
    }
    match f.kind {
        Kind::Int32 | Kind::Int64 | Kind::Uint32 | Kind::Uint64 | Kind::Bool => 1,
        Kind::Sint32 | Kind::Sint64 => 2,
        Kind::String => 3,
        Kind::Bytes => 4,
        Kind::Fixed32 | Kind::Sfixed32 => 5,
        Kind::Fixed64 | Kind::Sfixed64 => 6,
        Kind::Double => 7,
        Kind::Float => 8,
        Kind::Message(_) => 10,
        Kind::Enum(_) => 11,
    }
}

/// buf's groups for kinds that are compatible on the wire and in proto3 JSON.
pub(crate) fn wire_json_group(f: &FieldView) -> u8 {
    if f.group {
        return 12;
    }
    match f.kind {
        Kind::Int32 | Kind::Uint32 => 1,
        Kind::Int64 | Kind::Uint64 => 2,
        Kind::Fixed32 | Kind::Sfixed32 => 3,
        Kind::Fixed64 | Kind::Sfixed64 => 4,
        Kind::Bool => 5,
        Kind::Sint32 => 6,
        Kind::Sint64 => 7,
        Kind::String => 8,
        Kind::Bytes => 9,
        Kind::Double => 10,
        Kind::Float => 11,
        Kind::Message(_) => 13,
        Kind::Enum(_) => 14,
    }
}

/// Within one group, enums and messages must still name the same type. An enum may be a
/// different full name if it has the same short name and keeps every earlier value.
pub(crate) fn same_named_type(prev: &FieldView, cur: &FieldView) -> bool {
    match (&prev.kind, &cur.kind) {
        (Kind::Enum(p), Kind::Enum(c)) => {
            if p.full_name() == c.full_name() {
                return true;
            }
            p.name() == c.name()
                && p.values().all(|pv| {
                    c.get_value_by_name(pv.name())
                        .is_some_and(|cv| cv.number() == pv.number())
                })
        }
        (Kind::Message(p), Kind::Message(c)) => p.full_name() == c.full_name(),
        _ => true,
    }
}

/// Whether `number` lies in one of the message's reserved ranges.
pub(crate) fn message_number_reserved(m: &MessageDescriptor, number: u32) -> bool {
    m.reserved_ranges().any(|r| r.contains(&number))
}

/// Collapses ranges (inclusive bounds) and returns the parts of `[start, end]` not covered.
pub(crate) fn missing_parts(start: i64, end: i64, ranges: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut sorted = ranges.to_vec();
    sorted.sort();
    let mut collapsed: Vec<(i64, i64)> = Vec::new();
    for (s, e) in sorted {
        match collapsed.last_mut() {
            Some(last) if s <= last.1 + 1 => last.1 = last.1.max(e),
            _ => collapsed.push((s, e)),
        }
    }
    let mut missing = Vec::new();
    let mut cursor = start;
    for (s, e) in collapsed {
        if e < cursor {
            continue;
        }
        if s > end {
            break;
        }
        if s > cursor {
            missing.push((cursor, s - 1));
        }
        cursor = e + 1;
        if cursor > end {
            break;
        }
    }
    if cursor <= end {
        missing.push((cursor, end));
    }
    missing
}

pub(crate) fn ranges_text(ranges: &[(i64, i64)]) -> String {
    ranges
        .iter()
        .map(|(s, e)| {
            if s == e {
                s.to_string()
            } else {
                format!("{s} to {e}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProtobufFormat;
    use covenant_engine::{CheckOptions, Format, Level, PriorVersion, ProtobufStrictness};

    const CASE_V1: &str = "syntax = \"proto3\";\npackage acme;\nmessage CaseEvent {\n  string event_id = 1;\n  string case_id = 2;\n  string legacy_owner = 7;\n}\n";
    /// The evolution rules' good practice (§9.2, §9.3): reserve what was removed, add with a
    /// new number.
    const CASE_V2: &str = "syntax = \"proto3\";\npackage acme;\nmessage CaseEvent {\n  string event_id = 1;\n  string case_id = 2;\n  string closure_reason_code = 5;\n  reserved 7;\n  reserved \"legacy_owner\";\n}\n";

    fn judged(level: Level, old: &str, new: &str) -> covenant_engine::Report {
        let old = ProtobufFormat::parse(old, &[]).expect("old parses");
        let new = ProtobufFormat::parse(new, &[]).expect("new parses");
        let options = CheckOptions {
            protobuf_strictness: ProtobufStrictness::WireJson,
            ..CheckOptions::default()
        };
        let prior = [PriorVersion {
            version: 1,
            schema: &old,
        }];
        covenant_engine::budget::unlimited(|m| {
            covenant_engine::check_history::<ProtobufFormat>(m, level, &new, &prior, &options)
        })
    }

    #[test]
    fn reserved_removal_and_new_number_are_compatible_under_full() {
        for level in [Level::Backward, Level::Forward, Level::Full] {
            let report = judged(level, CASE_V1, CASE_V2);
            assert!(report.compatible, "{level}: {:#?}", report.findings);
        }
    }

    #[test]
    fn an_unreserved_removal_is_still_reported_once_under_full() {
        let v2 = CASE_V2.replace("  reserved 7;\n  reserved \"legacy_owner\";\n", "");
        let report = judged(Level::Full, CASE_V1, &v2);
        let ids: Vec<&str> = report.findings.iter().map(|f| f.rule.as_ref()).collect();
        let count = |id: &str| ids.iter().filter(|i| **i == id).count();
        assert_eq!(
            count("FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED"),
            1,
            "{ids:?}"
        );
        assert_eq!(count("FIELD_NO_DELETE_UNLESS_NAME_RESERVED"), 1, "{ids:?}");
        assert!(!report.compatible);
    }

    #[test]
    fn missing_parts_of_ranges() {
        assert_eq!(missing_parts(1, 10, &[(1, 3), (4, 10)]), vec![]);
        assert_eq!(
            missing_parts(1, 10, &[(2, 3), (6, 7)]),
            vec![(1, 1), (4, 5), (8, 10)]
        );
        assert_eq!(missing_parts(5, 5, &[]), vec![(5, 5)]);
        assert_eq!(missing_parts(5, 9, &[(1, 20)]), vec![]);
    }
}

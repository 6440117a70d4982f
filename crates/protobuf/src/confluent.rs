//! Confluent Schema Registry's Protobuf `SchemaDiff`, over compiled descriptors.
//!
//! Messages and enums are matched by simple name level by level, fields by number. Compatible
//! differences become `Info` findings; the rest are errors. A field whose message type lives in
//! an imported file is compared by recursing into that message, as Confluent does for
//! referenced schemas.

use crate::ProtobufSchema;
use crate::rules::*;
use crate::shapes::{self, MessageShapes};
use covenant_engine::{CheckOptions, Finding, RuleSpec};
use prost_reflect::{
    EnumDescriptor, FieldDescriptor, FileDescriptor, Kind, MessageDescriptor, Syntax,
};
use prost_types::{FieldDescriptorProto, field_descriptor_proto};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};

pub(crate) fn check(
    reader: &ProtobufSchema,
    writer: &ProtobufSchema,
    options: &CheckOptions,
    out: &mut Vec<Finding>,
) {
    let mut ctx = Ctx {
        reader,
        writer,
        stack: Vec::new(),
        out,
        options,
    };
    for (w, r, prefix) in file_pairs(reader, writer) {
        match r {
            Some(r) => ctx.compare_files(&w, &r, &prefix),
            None => ctx.emit(
                &file_no_delete::RULE,
                prefix,
                format!("File '{}' was deleted.", w.name()),
            ),
        }
    }
}

/// Files to compare: the main files of two registry schemas, or files matched by path in sets.
pub(crate) fn file_pairs(
    reader: &ProtobufSchema,
    writer: &ProtobufSchema,
) -> Vec<(FileDescriptor, Option<FileDescriptor>, String)> {
    if !reader.is_set() && !writer.is_set() {
        return match (writer.main_file(), reader.main_file()) {
            (Some(w), Some(r)) => vec![(w, Some(r), "/".to_string())],
            _ => Vec::new(),
        };
    }
    writer
        .own_files()
        .into_iter()
        .map(|w| {
            let r = if reader.is_own_file(w.name()) {
                reader.pool().get_file_by_name(w.name())
            } else {
                None
            };
            let path = format!("/files/{}", w.name());
            (w, r, path)
        })
        .collect()
}

struct Ctx<'a> {
    reader: &'a ProtobufSchema,
    writer: &'a ProtobufSchema,
    /// Writer messages being compared, so recursive types terminate.
    stack: Vec<MessageDescriptor>,
    out: &'a mut Vec<Finding>,
    options: &'a CheckOptions,
}

/// Confluent's grouping of field types.
#[derive(Clone)]
enum CType {
    Scalar(Kind),
    Message(MessageDescriptor),
    Map(Box<CType>, Box<CType>),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Label {
    Optional,
    Required,
    Repeated,
}

/// Whether a message declares nested enums or messages other than map entries.
fn declares_types(m: &MessageDescriptor) -> bool {
    let proto = m.descriptor_proto();
    !proto.enum_type.is_empty()
        || proto
            .nested_type
            .iter()
            .any(|n| !n.options.as_ref().is_some_and(|o| o.map_entry()))
}

/// A scalar or enum field declared exactly alike (in files of the same syntax) cannot
/// differ; a field of a message type still needs that message compared. A named type whose
/// kind the declaration does not state counts as a message.
fn declared_alike(w: &FieldDescriptorProto, r: &FieldDescriptorProto) -> bool {
    let enum_type = w.r#type == Some(field_descriptor_proto::Type::Enum as i32);
    (w.type_name.is_none() || enum_type) && w == r
}

/// A message's field shapes, kept by its schema.
fn message_shapes<'s>(schema: &'s ProtobufSchema, m: &MessageDescriptor) -> Cow<'s, MessageShapes> {
    match schema.field_shapes().message(m) {
        Some(shapes) => Cow::Borrowed(shapes),
        // Every message of the pool has its shapes; this only keeps a lookup from failing.
        None => Cow::Owned(shapes::message_shapes(schema, m)),
    }
}

fn ctype_of_kind(kind: Kind) -> CType {
    match kind {
        Kind::Message(m) => CType::Message(m),
        other => CType::Scalar(other),
    }
}

fn ctype(f: &FieldDescriptor) -> CType {
    if f.is_map()
        && let Some(entry) = f.kind().as_message()
    {
        return CType::Map(
            Box::new(ctype_of_kind(entry.map_entry_key_field().kind())),
            Box::new(ctype_of_kind(entry.map_entry_value_field().kind())),
        );
    }
    ctype_of_kind(f.kind())
}

fn kind_name(t: &CType) -> &'static str {
    match t {
        CType::Scalar(_) => "scalar",
        CType::Message(_) => "message",
        CType::Map(..) => "map",
    }
}

/// Confluent's scalar groups; enums count as general numbers.
fn scalar_group(k: &Kind) -> &'static str {
    match k {
        Kind::Int32 | Kind::Int64 | Kind::Uint32 | Kind::Uint64 | Kind::Bool | Kind::Enum(_) => {
            "number"
        }
        Kind::Sint32 | Kind::Sint64 => "signed number",
        Kind::String | Kind::Bytes => "string or bytes",
        Kind::Fixed32 | Kind::Sfixed32 => "fixed32",
        Kind::Fixed64 | Kind::Sfixed64 => "fixed64",
        Kind::Float => "float",
        Kind::Double => "double",
        Kind::Message(_) => "message",
    }
}

pub(crate) fn type_name(k: &Kind) -> String {
    match k {
        Kind::Message(m) => m.full_name().to_string(),
        Kind::Enum(e) => e.full_name().to_string(),
        other => format!("{other:?}").to_ascii_lowercase(),
    }
}

/// The label as written in the source (Wire's view): oneof members and maps have none, and a
/// proto3 field only has one when marked `optional` or `repeated`.
fn label(f: &FieldDescriptor) -> Option<Label> {
    use prost_types::field_descriptor_proto::Label as Proto;
    // Read from the descriptor proto once: this runs for every field pair.
    let p = f.field_descriptor_proto();
    // A proto3 `optional` field sits in a synthetic oneof; any other oneof member has no label.
    if p.oneof_index.is_some() && !p.proto3_optional() {
        return None;
    }
    match p.label() {
        Proto::Repeated if f.is_map() => None,
        Proto::Repeated => Some(Label::Repeated),
        Proto::Required => Some(Label::Required),
        Proto::Optional => (p.proto3_optional() || f.parent_file().syntax() != Syntax::Proto3)
            .then_some(Label::Optional),
    }
}

fn oneof_name(f: &FieldDescriptor) -> Option<String> {
    f.containing_oneof()
        .filter(|o| !o.is_synthetic())
        .map(|o| o.name().to_string())
}

/// The name within the package (`Order.Line` for `acme.Order.Line`), borrowed: this runs
/// for every message-typed field pair.
fn local_name(m: &MessageDescriptor) -> &str {
    let pkg = m.package_name();
    let full = m.full_name();
    if pkg.is_empty() {
        return full;
    }
    full.strip_prefix(pkg)
        .and_then(|rest| rest.strip_prefix('.'))
        .unwrap_or(full)
}

fn field_path(m: &MessageDescriptor, name: &str) -> String {
    let full = m.full_name();
    let mut path = String::with_capacity(full.len() + name.len() + 9);
    path.push('/');
    path.push_str(full);
    path.push_str("/fields/");
    path.push_str(name);
    path
}

/// Where a field's findings go; the path is only built when there is something to report.
#[derive(Clone, Copy)]
struct Loc<'a> {
    message: &'a MessageDescriptor,
    field: &'a str,
}

impl Loc<'_> {
    fn path(&self) -> String {
        field_path(self.message, self.field)
    }
}

impl Ctx<'_> {
    fn emit(&mut self, rule: &RuleSpec, path: impl Into<String>, message: String) {
        self.out.push(Finding::new(rule, path, message));
    }

    /// Whether findings of `rule` are wanted: callers of the frequent info rules ask before
    /// building the path and message.
    fn wants(&self, rule: &RuleSpec) -> bool {
        self.options.wants(rule.default_severity)
    }

    fn compare_files(&mut self, w: &FileDescriptor, r: &FileDescriptor, path: &str) {
        if w.package_name() != r.package_name() {
            self.emit(
                &package_changed::RULE,
                path,
                format!(
                    "Package changed from '{}' to '{}'.",
                    w.package_name(),
                    r.package_name()
                ),
            );
        }
        if w.syntax() != r.syntax() {
            self.emit(
                &syntax_changed::RULE,
                path,
                format!(
                    "Syntax changed from '{:?}' to '{:?}'.",
                    w.syntax(),
                    r.syntax()
                )
                .to_ascii_lowercase()
                .replacen("syntax", "Syntax", 1),
            );
        }
        self.compare_types(
            w.messages().collect(),
            w.enums().collect(),
            r.messages().collect(),
            r.enums().collect(),
        );
    }

    fn compare_types(
        &mut self,
        w_msgs: Vec<MessageDescriptor>,
        w_enums: Vec<EnumDescriptor>,
        r_msgs: Vec<MessageDescriptor>,
        r_enums: Vec<EnumDescriptor>,
    ) {
        let w_msgs: Vec<MessageDescriptor> =
            w_msgs.into_iter().filter(|m| !m.is_map_entry()).collect();
        let r_msgs: Vec<MessageDescriptor> =
            r_msgs.into_iter().filter(|m| !m.is_map_entry()).collect();
        // Usually nothing was added, removed or reordered: pair by position, no name index.
        if w_msgs.len() == r_msgs.len()
            && w_msgs
                .iter()
                .zip(&r_msgs)
                .all(|(w, r)| w.name() == r.name())
        {
            // In name order, as the general path reports them.
            let mut order: Vec<usize> = (0..w_msgs.len()).collect();
            if !w_msgs.is_sorted_by(|a, b| a.name() <= b.name()) {
                order.sort_by(|&a, &b| w_msgs[a].name().cmp(w_msgs[b].name()));
            }
            for i in order {
                self.compare_message(&w_msgs[i], &r_msgs[i]);
            }
        } else {
            self.compare_messages_by_name(w_msgs, r_msgs);
        }
        self.compare_enums(w_enums, r_enums);
    }

    fn compare_messages_by_name(
        &mut self,
        w_msgs: Vec<MessageDescriptor>,
        r_msgs: Vec<MessageDescriptor>,
    ) {
        let index = |msgs: Vec<MessageDescriptor>| -> BTreeMap<String, (usize, MessageDescriptor)> {
            msgs.into_iter()
                .enumerate()
                .map(|(i, m)| (m.name().to_string(), (i, m)))
                .collect()
        };
        let w_by_name = index(w_msgs);
        let r_by_name = index(r_msgs);
        let names: BTreeSet<&String> = w_by_name.keys().chain(r_by_name.keys()).collect();
        for name in names {
            match (w_by_name.get(name), r_by_name.get(name)) {
                (Some((_, w)), None) => self.emit(
                    &message_removed::RULE,
                    format!("/{}", w.full_name()),
                    format!("Message '{}' was removed.", w.full_name()),
                ),
                (None, Some((_, r))) => self.emit(
                    &message_added::RULE,
                    format!("/{}", r.full_name()),
                    format!("Message '{}' was added.", r.full_name()),
                ),
                (Some((wi, w)), Some((ri, r))) => {
                    self.compare_message(w, r);
                    if wi != ri {
                        self.emit(
                            &message_moved::RULE,
                            format!("/{}", r.full_name()),
                            format!(
                                "Message '{}' moved from position {} to {}.",
                                r.full_name(),
                                wi,
                                ri
                            ),
                        );
                    }
                }
                (None, None) => {}
            }
        }
    }

    fn compare_enums(&mut self, w_enums: Vec<EnumDescriptor>, r_enums: Vec<EnumDescriptor>) {
        if w_enums.is_empty() && r_enums.is_empty() {
            return;
        }
        let w_enums: BTreeMap<String, EnumDescriptor> = w_enums
            .into_iter()
            .map(|e| (e.name().to_string(), e))
            .collect();
        let r_enums: BTreeMap<String, EnumDescriptor> = r_enums
            .into_iter()
            .map(|e| (e.name().to_string(), e))
            .collect();
        let names: BTreeSet<&String> = w_enums.keys().chain(r_enums.keys()).collect();
        for name in names {
            match (w_enums.get(name), r_enums.get(name)) {
                (Some(w), None) => self.emit(
                    &enum_removed::RULE,
                    format!("/{}", w.full_name()),
                    format!("Enum '{}' was removed.", w.full_name()),
                ),
                (None, Some(r)) => self.emit(
                    &enum_added::RULE,
                    format!("/{}", r.full_name()),
                    format!("Enum '{}' was added.", r.full_name()),
                ),
                (Some(w), Some(r)) => self.compare_enum(w, r),
                (None, None) => {}
            }
        }
    }

    fn compare_enum(&mut self, w: &EnumDescriptor, r: &EnumDescriptor) {
        if w.values().len() == r.values().len()
            && w.values()
                .zip(r.values())
                .all(|(a, b)| a.number() == b.number() && a.name() == b.name())
        {
            return;
        }
        let w_by: BTreeMap<i32, String> = w
            .values()
            .map(|v| (v.number(), v.name().to_string()))
            .collect();
        let r_by: BTreeMap<i32, String> = r
            .values()
            .map(|v| (v.number(), v.name().to_string()))
            .collect();
        let numbers: BTreeSet<&i32> = w_by.keys().chain(r_by.keys()).collect();
        for n in numbers {
            match (w_by.get(n), r_by.get(n)) {
                (Some(wn), None) => self.emit(
                    &enum_const_removed::RULE,
                    format!("/{}/values/{}", r.full_name(), wn),
                    format!(
                        "Enum value '{wn}' ({n}) was removed from '{}'.",
                        r.full_name()
                    ),
                ),
                (None, Some(rn)) => self.emit(
                    &enum_const_added::RULE,
                    format!("/{}/values/{}", r.full_name(), rn),
                    format!("Enum value '{rn}' ({n}) was added to '{}'.", r.full_name()),
                ),
                (Some(wn), Some(rn)) if wn != rn => self.emit(
                    &enum_const_changed::RULE,
                    format!("/{}/values/{}", r.full_name(), rn),
                    format!(
                        "Enum value {n} of '{}' was renamed from '{wn}' to '{rn}'.",
                        r.full_name()
                    ),
                ),
                _ => {}
            }
        }
    }

    fn compare_message(&mut self, w: &MessageDescriptor, r: &MessageDescriptor) {
        if !self.stack.iter().any(|s| s.full_name() == w.full_name()) {
            self.stack.push(w.clone());
            self.compare_fields(w, r);
            self.stack.pop();
        }
        // Looking nested types up is costly and map entries are not compared as types, so a
        // message whose only nested types are map entries has nothing to pair.
        if declares_types(w) || declares_types(r) {
            self.compare_types(
                w.child_messages().collect(),
                w.child_enums().collect(),
                r.child_messages().collect(),
                r.child_enums().collect(),
            );
        }
    }

    fn compare_fields(&mut self, w: &MessageDescriptor, r: &MessageDescriptor) {
        let same_syntax = w.parent_file().syntax() == r.parent_file().syntax();
        let has_oneofs = w.oneofs().chain(r.oneofs()).any(|o| !o.is_synthetic());
        let deleted_oneofs = if has_oneofs {
            self.compare_oneofs(w, r)
        } else {
            BTreeSet::new()
        };
        // Merged by number over the field shapes: most fields are declared alike on both
        // sides, and passing over them without building a descriptor for each (which clones
        // the pool's handle) is most of the walk's speed on large messages.
        let (writer, reader) = (self.writer, self.reader);
        let (ws, rs) = (message_shapes(writer, w), message_shapes(reader, r));
        let (w_proto, r_proto) = (w.descriptor_proto(), r.descriptor_proto());
        let field = |m: &MessageDescriptor, f: &FieldDescriptorProto| {
            u32::try_from(f.number()).ok().and_then(|n| m.get_field(n))
        };
        let (wants_removed, wants_added) = (
            self.wants(&field_removed::RULE),
            self.wants(&field_added::RULE),
        );
        let start = if same_syntax {
            ws.common_quiet_prefix(&rs)
        } else {
            0
        };
        let (mut wi, mut ri) = (start, start);
        loop {
            match (ws.fields.get(wi), rs.fields.get(ri)) {
                (Some(wf), Some(rf)) if wf.number == rf.number => {
                    wi += 1;
                    ri += 1;
                    if same_syntax && wf.quiet && rf.quiet && wf.shape == rf.shape {
                        continue;
                    }
                    let (wp, rp) = (
                        &w_proto.field[wf.declaration],
                        &r_proto.field[rf.declaration],
                    );
                    let alike = same_syntax && declared_alike(wp, rp);
                    if alike && !has_oneofs {
                        continue;
                    }
                    let (Some(wf), Some(rf)) = (field(w, wp), field(r, rp)) else {
                        continue;
                    };
                    if has_oneofs && let (Some(o), None) = (oneof_name(&wf), oneof_name(&rf)) {
                        self.emit(
                            &oneof_field_moved_to_top_level::RULE,
                            field_path(r, rf.name()),
                            format!(
                                "Field '{}' ({}) moved out of oneof '{o}' to the top level.",
                                rf.name(),
                                rf.number()
                            ),
                        );
                    }
                    if !alike {
                        self.compare_field(&wf, &rf, r);
                    }
                }
                (Some(wf), rf) if rf.is_none_or(|rf| wf.number < rf.number) => {
                    wi += 1;
                    if wf.plain && !wants_removed {
                        continue;
                    }
                    if let Some(wf) = field(w, &w_proto.field[wf.declaration]) {
                        self.field_removed(&wf, r, &deleted_oneofs);
                    }
                }
                (_, Some(rf)) => {
                    ri += 1;
                    if rf.plain && !wants_added {
                        continue;
                    }
                    if let Some(rf) = field(r, &r_proto.field[rf.declaration]) {
                        self.field_added(&rf, r);
                    }
                }
                _ => break,
            }
        }
    }

    fn field_removed(
        &mut self,
        wf: &FieldDescriptor,
        r: &MessageDescriptor,
        deleted_oneofs: &BTreeSet<String>,
    ) {
        let tag = wf.number();
        let path = field_path(r, wf.name());
        match oneof_name(wf) {
            Some(o) => {
                if !deleted_oneofs.contains(&o) {
                    self.emit(
                        &oneof_field_removed::RULE,
                        path,
                        format!(
                            "Field '{}' ({tag}) was removed from oneof '{o}'.",
                            wf.name()
                        ),
                    );
                }
            }
            None if wf.is_required() => self.emit(
                &required_field_removed::RULE,
                path,
                format!("Required field '{}' ({tag}) was removed.", wf.name()),
            ),
            None => self.emit(
                &field_removed::RULE,
                path,
                format!("Field '{}' ({tag}) was removed.", wf.name()),
            ),
        }
    }

    fn field_added(&mut self, rf: &FieldDescriptor, r: &MessageDescriptor) {
        if !self.wants(&field_added::RULE) && oneof_name(rf).is_none() && !rf.is_required() {
            return;
        }
        let tag = rf.number();
        let path = field_path(r, rf.name());
        match oneof_name(rf) {
            Some(o) => self.emit(
                &oneof_field_added::RULE,
                path,
                format!("Field '{}' ({tag}) was added to oneof '{o}'.", rf.name()),
            ),
            None if rf.is_required() => self.emit(
                &required_field_added::RULE,
                path,
                format!("Required field '{}' ({tag}) was added.", rf.name()),
            ),
            None => self.emit(
                &field_added::RULE,
                path,
                format!("Field '{}' ({tag}) was added.", rf.name()),
            ),
        }
    }

    /// Oneof-level differences; returns the oneofs deleted together with all their fields,
    /// whose fields are then not reported one by one.
    fn compare_oneofs(&mut self, w: &MessageDescriptor, r: &MessageDescriptor) -> BTreeSet<String> {
        let w_by: BTreeMap<u32, FieldDescriptor> = w.fields().map(|f| (f.number(), f)).collect();
        let r_by: BTreeMap<u32, FieldDescriptor> = r.fields().map(|f| (f.number(), f)).collect();
        let w_oneof: HashMap<u32, String> = w
            .fields()
            .filter_map(|f| oneof_name(&f).map(|o| (f.number(), o)))
            .collect();
        let w_oneofs: BTreeMap<String, Vec<u32>> = w
            .oneofs()
            .filter(|o| !o.is_synthetic())
            .map(|o| {
                (
                    o.name().to_string(),
                    o.fields().map(|f| f.number()).collect(),
                )
            })
            .collect();
        let r_oneofs: BTreeMap<String, Vec<u32>> = r
            .oneofs()
            .filter(|o| !o.is_synthetic())
            .map(|o| {
                (
                    o.name().to_string(),
                    o.fields().map(|f| f.number()).collect(),
                )
            })
            .collect();
        let deleted_oneofs: BTreeSet<String> = w_oneofs
            .iter()
            .filter(|(name, members)| {
                !r_oneofs.contains_key(*name) && !members.iter().any(|t| r_by.contains_key(t))
            })
            .map(|(name, _)| name.clone())
            .collect();

        // Previously independent fields that became mutually exclusive.
        for o in r.oneofs().filter(|o| !o.is_synthetic()) {
            let mut groups: BTreeSet<String> = BTreeSet::new();
            let mut moved_in = 0;
            for f in o.fields() {
                let tag = f.number();
                if let Some(prev) = w_oneof.get(&tag) {
                    groups.insert(format!("oneof:{prev}"));
                } else if w_by.contains_key(&tag) {
                    groups.insert(format!("field:{tag}"));
                    moved_in += 1;
                }
            }
            if groups.len() > 1 {
                let path = format!("/{}/oneofs/{}", r.full_name(), o.name());
                if moved_in > 1 {
                    self.emit(
                        &multiple_fields_moved_to_oneof::RULE,
                        path,
                        format!(
                            "Several existing fields were moved into oneof '{}' of '{}'.",
                            o.name(),
                            r.full_name()
                        ),
                    );
                } else {
                    self.emit(
                        &field_moved_to_existing_oneof::RULE,
                        path,
                        format!(
                            "An existing field was moved into oneof '{}' of '{}', which already had members.",
                            o.name(),
                            r.full_name()
                        ),
                    );
                }
            }
        }

        let oneof_names: BTreeSet<&String> = w_oneofs.keys().chain(r_oneofs.keys()).collect();
        for name in oneof_names {
            let path = format!("/{}/oneofs/{}", r.full_name(), name);
            if !r_oneofs.contains_key(name) {
                self.emit(
                    &oneof_removed::RULE,
                    path,
                    format!("Oneof '{name}' was removed from '{}'.", r.full_name()),
                );
            } else if !w_oneofs.contains_key(name) {
                self.emit(
                    &oneof_added::RULE,
                    path,
                    format!("Oneof '{name}' was added to '{}'.", r.full_name()),
                );
            }
        }

        deleted_oneofs
    }

    fn compare_field(
        &mut self,
        w: &FieldDescriptor,
        r: &FieldDescriptor,
        parent: &MessageDescriptor,
    ) {
        let loc = Loc {
            message: parent,
            field: r.name(),
        };
        if w.name() != r.name() {
            self.emit(
                &field_name_changed::RULE,
                loc.path(),
                format!(
                    "Field {} was renamed from '{}' to '{}'.",
                    r.number(),
                    w.name(),
                    r.name()
                ),
            );
        }
        self.compare_labels_and_types(Some((w, r)), &ctype(w), &ctype(r), loc);
    }

    fn compare_labels_and_types(
        &mut self,
        fields: Option<(&FieldDescriptor, &FieldDescriptor)>,
        wt: &CType,
        rt: &CType,
        loc: Loc<'_>,
    ) {
        let name = loc.field;
        match (wt, rt) {
            (CType::Scalar(wk), CType::Scalar(rk)) => {
                if scalar_group(wk) != scalar_group(rk) {
                    self.emit(
                        &field_scalar_kind_changed::RULE,
                        loc.path(),
                        format!(
                            "Field '{name}' changed type from '{}' to '{}'.",
                            type_name(wk),
                            type_name(rk)
                        ),
                    );
                } else if let Some((wf, rf)) = fields
                    && let (Some(a), Some(b)) = (label(wf), label(rf))
                    && a != b
                {
                    let rule = if scalar_group(wk) == "string or bytes" {
                        &field_string_or_bytes_label_changed::RULE
                    } else {
                        &field_numeric_label_changed::RULE
                    };
                    self.emit(
                        rule,
                        loc.path(),
                        format!("Field '{name}' changed label from '{a:?}' to '{b:?}'.")
                            .replace("'Optional'", "'optional'")
                            .replace("'Required'", "'required'")
                            .replace("'Repeated'", "'repeated'"),
                    );
                }
            }
            (CType::Message(wm), CType::Message(rm)) => self.compare_message_types(wm, rm, loc),
            (CType::Map(wk, wv), CType::Map(rk, rv)) => {
                self.compare_labels_and_types(None, wk, rk, loc);
                self.compare_labels_and_types(None, wv, rv, loc);
            }
            _ => self.emit(
                &field_kind_changed::RULE,
                loc.path(),
                format!(
                    "Field '{name}' changed from a {} to a {}.",
                    kind_name(wt),
                    kind_name(rt)
                ),
            ),
        }
    }

    fn compare_message_types(
        &mut self,
        w: &MessageDescriptor,
        r: &MessageDescriptor,
        loc: Loc<'_>,
    ) {
        let name = loc.field;
        if local_name(w) != local_name(r) {
            self.emit(
                &field_named_type_changed::RULE,
                loc.path(),
                format!(
                    "Field '{name}' changed type from '{}' to '{}'.",
                    w.full_name(),
                    r.full_name()
                ),
            );
            return;
        }
        let both_local = self.writer.is_own_file(w.parent_file().name())
            && self.reader.is_own_file(r.parent_file().name());
        if both_local || self.stack.iter().any(|s| s.full_name() == w.full_name()) {
            return;
        }
        let start = self.out.len();
        self.compare_message(w, r);
        if self.out[start..].iter().any(|f| f.is_error()) {
            self.emit(
                &field_named_type_changed::RULE,
                loc.path(),
                format!(
                    "Field '{name}' refers to '{}', which changed incompatibly.",
                    r.full_name()
                ),
            );
        }
    }
}

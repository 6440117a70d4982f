//! Prints a compiled file back as `.proto` text in the layout of Confluent's schema printer:
//! comment-free, two spaces of indentation per level (blank lines inside a block indented
//! too), type names fully qualified (`.pkg.Msg`), options sorted by name.
//!
//! A file is printed as: `syntax` (left out for proto2 when normalized), `package`, then each
//! after one blank line when present: imports (then public ones), options, all messages then
//! all enums, extends, services. A message's sections follow the same rule: reserved, options,
//! fields, oneofs, groups, extension ranges, extends, nested messages then nested enums.
//!
//! [`Order::Normalized`] is Confluent's normalized form: fields by number, oneofs by their first
//! number, enum values by number then name, reserved and extension ranges one per line, sorted,
//! imports sorted. [`Order::Declared`] keeps the declaration order of fields, oneofs, values,
//! ranges and imports: two files print alike in it when they declare the same thing the same
//! way, whatever their whitespace and comments, and whether they came as text or as a
//! descriptor. Messages are never reordered: Confluent's message indexes count them by position.

use prost_reflect::{
    DynamicMessage, EnumDescriptor, ExtensionDescriptor, FieldDescriptor, FileDescriptor, Kind,
    MapKey, MessageDescriptor, OneofDescriptor, ServiceDescriptor, Syntax, Value,
};
use prost_types::FieldDescriptorProto;
use std::fmt::Write;

/// How much of the declaration order a printed file keeps (see the module's documentation).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Order {
    Declared,
    Normalized,
}

/// The largest field number; a range that reaches it ends with `max`.
const MAX_TAG: u32 = 536_870_911;

pub(crate) fn print_file(file: &FileDescriptor, order: Order) -> String {
    let normalized = order == Order::Normalized;
    let mut out = String::new();
    let proto = file.file_descriptor_proto();
    match file.syntax() {
        Syntax::Proto3 => out.push_str("syntax = \"proto3\";\n"),
        _ if !normalized => out.push_str("syntax = \"proto2\";\n"),
        _ => {}
    }
    if !file.package_name().is_empty() {
        let _ = writeln!(out, "package {};", file.package_name());
    }
    let mut imports: Vec<String> = Vec::new();
    let mut public: Vec<String> = Vec::new();
    for (i, d) in proto.dependency.iter().enumerate() {
        let i = i as i32;
        if proto.public_dependency.contains(&i) {
            public.push(format!("import public \"{d}\";\n"));
        } else if proto.weak_dependency.contains(&i) {
            imports.push(format!("import weak \"{d}\";\n"));
        } else {
            imports.push(format!("import \"{d}\";\n"));
        }
    }
    if normalized {
        for list in [&mut imports, &mut public] {
            list.sort();
            list.dedup();
        }
    }
    if !imports.is_empty() || !public.is_empty() {
        out.push('\n');
        imports.iter().chain(&public).for_each(|i| out.push_str(i));
    }
    let options = option_lines(&file.options());
    if !options.is_empty() {
        out.push('\n');
        options.iter().for_each(|o| out.push_str(o));
    }
    let messages: Vec<MessageDescriptor> = file.messages().collect();
    let enums: Vec<EnumDescriptor> = file.enums().collect();
    if !messages.is_empty() || !enums.is_empty() {
        out.push('\n');
        for m in &messages {
            out.push_str(&message_text(m, order));
        }
        for e in &enums {
            out.push_str(&enum_text(e, order));
        }
    }
    let extends = extend_blocks(file.extensions(), order);
    if !extends.is_empty() {
        out.push('\n');
        extends.iter().for_each(|e| out.push_str(e));
    }
    let services: Vec<ServiceDescriptor> = file.services().collect();
    if !services.is_empty() {
        out.push('\n');
        for s in &services {
            out.push_str(&service_text(s));
        }
    }
    out
}

/// Appends `text` with every line indented one level, blank lines included; trailing empty
/// lines are dropped.
fn append_indented(out: &mut String, text: &str) {
    let mut lines: Vec<&str> = text.split('\n').collect();
    while lines.last() == Some(&"") {
        lines.pop();
    }
    for line in lines {
        out.push_str("  ");
        out.push_str(line);
        out.push('\n');
    }
}

/// A section of a block: after a line break (a blank line when a section came before), each
/// of `items` indented.
fn section(out: &mut String, items: &[String]) {
    if items.is_empty() {
        return;
    }
    out.push('\n');
    for item in items {
        append_indented(out, item);
    }
}

fn message_text(m: &MessageDescriptor, order: Order) -> String {
    let normalized = order == Order::Normalized;
    let mut out = format!("message {} {{", m.name());
    section(
        &mut out,
        &reserved_lines(
            m.reserved_ranges().map(|r| (r.start, r.end - 1)).collect(),
            m.reserved_names().map(str::to_string).collect(),
            order,
        ),
    );
    section(&mut out, &option_lines(&m.options()));
    let in_oneof = |f: &FieldDescriptor| f.containing_oneof().is_some_and(|o| !o.is_synthetic());
    let declared = declared_fields(m);
    let mut fields: Vec<FieldDescriptor> = declared
        .iter()
        .filter(|f| !in_oneof(f) && !f.is_group())
        .cloned()
        .collect();
    let mut groups: Vec<FieldDescriptor> = declared
        .into_iter()
        .filter(|f| !in_oneof(f) && f.is_group())
        .collect();
    if normalized {
        fields.sort_by_key(FieldDescriptor::number);
        groups.sort_by_key(FieldDescriptor::number);
    }
    let fields: Vec<String> = fields.iter().map(|f| field_text(f, true, order)).collect();
    section(&mut out, &fields);
    let mut oneofs: Vec<OneofDescriptor> = m
        .oneofs()
        .filter(|o| !o.is_synthetic() && o.fields().next().is_some())
        .collect();
    if normalized {
        oneofs.sort_by_key(|o| o.fields().map(|f| f.number()).min());
    }
    let oneofs: Vec<String> = oneofs.iter().map(|o| oneof_text(o, order)).collect();
    section(&mut out, &oneofs);
    let groups: Vec<String> = groups.iter().map(|g| group_text(g, true, order)).collect();
    section(&mut out, &groups);
    let extensions = range_lines(
        "extensions",
        m.extension_ranges().map(|r| (r.start, r.end - 1)).collect(),
        order,
    );
    section(&mut out, &extensions);
    section(&mut out, &extend_blocks(m.child_extensions(), order));
    let mut nested: Vec<String> = m
        .child_messages()
        .filter(|n| !n.is_map_entry() && !is_group_type(m, n))
        .map(|n| message_text(&n, order))
        .collect();
    nested.extend(m.child_enums().map(|e| enum_text(&e, order)));
    section(&mut out, &nested);
    out.push_str("}\n");
    out
}

/// A message's fields in declaration order (the descriptor's own iterator goes by number).
fn declared_fields(m: &MessageDescriptor) -> Vec<FieldDescriptor> {
    m.descriptor_proto()
        .field
        .iter()
        .filter_map(|f| m.get_field_by_name(f.name()))
        .collect()
}

fn oneof_text(o: &OneofDescriptor, order: Order) -> String {
    let mut out = format!("oneof {} {{", o.name());
    section(&mut out, &option_lines(&o.options()));
    let mut fields: Vec<FieldDescriptor> = o.fields().filter(|f| !f.is_group()).collect();
    let mut groups: Vec<FieldDescriptor> = o.fields().filter(FieldDescriptor::is_group).collect();
    if order == Order::Normalized {
        fields.sort_by_key(FieldDescriptor::number);
        groups.sort_by_key(FieldDescriptor::number);
    }
    let fields: Vec<String> = fields.iter().map(|f| field_text(f, false, order)).collect();
    section(&mut out, &fields);
    let groups: Vec<String> = groups.iter().map(|g| group_text(g, false, order)).collect();
    section(&mut out, &groups);
    out.push_str("}\n");
    out
}

fn group_text(f: &FieldDescriptor, with_label: bool, order: Order) -> String {
    let mut out = String::new();
    if with_label {
        out.push_str(&label_text(f, f.field_descriptor_proto()));
    }
    let Some(group) = f.kind().as_message().cloned() else {
        return out;
    };
    let _ = write!(out, "group {} = {} {{", group.name(), f.number());
    let mut fields: Vec<FieldDescriptor> = declared_fields(&group);
    if order == Order::Normalized {
        fields.sort_by_key(FieldDescriptor::number);
    }
    let fields: Vec<String> = fields.iter().map(|f| field_text(f, true, order)).collect();
    section(&mut out, &fields);
    out.push_str("}\n");
    out
}

fn is_group_type(parent: &MessageDescriptor, nested: &MessageDescriptor) -> bool {
    parent.fields().any(|f| {
        f.is_group()
            && f.kind()
                .as_message()
                .map(|t| t.full_name() == nested.full_name())
                == Some(true)
    })
}

fn range_text(start: u32, end: u32) -> String {
    if start == end {
        start.to_string()
    } else if end >= MAX_TAG {
        format!("{start} to max")
    } else {
        format!("{start} to {end}")
    }
}

/// `keyword` ranges: one line in declaration order, or one line per range sorted by start.
fn range_lines(keyword: &str, mut ranges: Vec<(u32, u32)>, order: Order) -> Vec<String> {
    if ranges.is_empty() {
        return Vec::new();
    }
    let texts = |ranges: &[(u32, u32)]| -> Vec<String> {
        ranges.iter().map(|&(s, e)| range_text(s, e)).collect()
    };
    match order {
        Order::Declared => vec![format!("{keyword} {};\n", texts(&ranges).join(", "))],
        Order::Normalized => {
            ranges.sort();
            texts(&ranges)
                .into_iter()
                .map(|r| format!("{keyword} {r};\n"))
                .collect()
        }
    }
}

fn reserved_lines(ranges: Vec<(u32, u32)>, mut names: Vec<String>, order: Order) -> Vec<String> {
    let mut out = range_lines("reserved", ranges, order);
    if names.is_empty() {
        return out;
    }
    let quoted = |n: &String| format!("\"{n}\"");
    match order {
        Order::Declared => {
            let names: Vec<String> = names.iter().map(quoted).collect();
            out.push(format!("reserved {};\n", names.join(", ")));
        }
        Order::Normalized => {
            names.sort_by_key(quoted);
            out.extend(names.iter().map(|n| format!("reserved {};\n", quoted(n))));
        }
    }
    out
}

fn scalar_name(kind: &Kind) -> String {
    match kind {
        Kind::Double => "double".into(),
        Kind::Float => "float".into(),
        Kind::Int32 => "int32".into(),
        Kind::Int64 => "int64".into(),
        Kind::Uint32 => "uint32".into(),
        Kind::Uint64 => "uint64".into(),
        Kind::Sint32 => "sint32".into(),
        Kind::Sint64 => "sint64".into(),
        Kind::Fixed32 => "fixed32".into(),
        Kind::Fixed64 => "fixed64".into(),
        Kind::Sfixed32 => "sfixed32".into(),
        Kind::Sfixed64 => "sfixed64".into(),
        Kind::Bool => "bool".into(),
        Kind::String => "string".into(),
        Kind::Bytes => "bytes".into(),
        Kind::Message(m) => format!(".{}", m.full_name()),
        Kind::Enum(e) => format!(".{}", e.full_name()),
    }
}

fn field_text(f: &FieldDescriptor, with_label: bool, order: Order) -> String {
    let proto = f.field_descriptor_proto();
    let mut out = String::new();
    if f.is_map() {
        if let Some(entry) = f.kind().as_message() {
            let key = scalar_name(&entry.map_entry_key_field().kind());
            let value = scalar_name(&entry.map_entry_value_field().kind());
            let _ = write!(out, "map<{key}, {value}> {} = {}", f.name(), f.number());
        }
    } else {
        if with_label {
            out.push_str(&label_text(f, proto));
        }
        let _ = write!(
            out,
            "{} {} = {}",
            scalar_name(&f.kind()),
            f.name(),
            f.number()
        );
    }
    let options = field_options(proto, f.name(), &f.options(), order);
    out.push_str(&bracketed(&options));
    out.push_str(";\n");
    out
}

fn label_text(f: &FieldDescriptor, proto: &FieldDescriptorProto) -> String {
    if f.is_list() {
        return "repeated ".into();
    }
    if f.is_required() {
        return "required ".into();
    }
    match f.parent_file().syntax() {
        Syntax::Proto3 => {
            if proto.proto3_optional() {
                "optional ".into()
            } else {
                String::new()
            }
        }
        _ => "optional ".into(),
    }
}

/// protoc's default JSON name: underscores dropped, the following letter upper-cased.
pub(crate) fn default_json_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// A field's options with `default` and `json_name`: these last when declared, sorted with the
/// others when normalized.
fn field_options(
    proto: &FieldDescriptorProto,
    name: &str,
    options: &DynamicMessage,
    order: Order,
) -> Vec<String> {
    let mut items: Vec<(String, String)> = option_items(options);
    if let Some(default) = &proto.default_value {
        let text = match proto.r#type() {
            prost_types::field_descriptor_proto::Type::String => quote(default),
            // A bytes default is kept C-escaped in the descriptor.
            prost_types::field_descriptor_proto::Type::Bytes => format!("\"{default}\""),
            _ => default.clone(),
        };
        items.push(("default".into(), format!("default = {text}")));
    }
    if let Some(json) = &proto.json_name
        && *json != default_json_name(name)
        && proto.extendee.is_none()
    {
        items.push(("json_name".into(), format!("json_name = {}", quote(json))));
    }
    if order == Order::Normalized {
        items.sort_by(|a, b| a.0.cmp(&b.0));
    }
    items.into_iter().map(|(_, text)| text).collect()
}

/// ` [a]` for one option, one per line for several; nothing for none.
fn bracketed(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => format!(" [{one}]"),
        many => {
            let mut out = String::from(" [\n");
            for (i, item) in many.iter().enumerate() {
                let comma = if i + 1 < many.len() { "," } else { "" };
                append_indented(&mut out, &format!("{item}{comma}"));
            }
            out.push(']');
            out
        }
    }
}

/// Extension fields grouped by the message they extend, in order of first appearance.
fn extend_blocks(
    extensions: impl Iterator<Item = ExtensionDescriptor>,
    order: Order,
) -> Vec<String> {
    let mut groups: Vec<(String, Vec<ExtensionDescriptor>)> = Vec::new();
    for ext in extensions {
        let extendee = ext.containing_message().full_name().to_string();
        match groups.iter_mut().find(|(name, _)| *name == extendee) {
            Some((_, list)) => list.push(ext),
            None => groups.push((extendee, vec![ext])),
        }
    }
    groups
        .into_iter()
        .map(|(extendee, mut fields)| {
            if order == Order::Normalized {
                fields.sort_by_key(ExtensionDescriptor::number);
            }
            let mut out = format!("extend .{extendee} {{");
            let lines: Vec<String> = fields.iter().map(|e| extension_text(e, order)).collect();
            section(&mut out, &lines);
            out.push_str("}\n");
            out
        })
        .collect()
}

fn extension_text(ext: &ExtensionDescriptor, order: Order) -> String {
    let proto = ext.field_descriptor_proto();
    let mut out = String::new();
    if ext.is_list() {
        out.push_str("repeated ");
    } else if ext.parent_file().syntax() != Syntax::Proto3 {
        out.push_str(
            if ext.cardinality() == prost_reflect::Cardinality::Required {
                "required "
            } else {
                "optional "
            },
        );
    }
    let _ = write!(
        out,
        "{} {} = {}",
        scalar_name(&ext.kind()),
        ext.name(),
        ext.number()
    );
    let options = field_options(proto, ext.name(), &ext.options(), order);
    out.push_str(&bracketed(&options));
    out.push_str(";\n");
    out
}

fn enum_text(e: &EnumDescriptor, order: Order) -> String {
    let mut out = format!("enum {} {{", e.name());
    let ranges: Vec<(u32, u32)> = e
        .reserved_ranges()
        .map(|r| {
            let end = if *r.end() == i32::MAX {
                MAX_TAG
            } else {
                *r.end() as u32
            };
            (*r.start() as u32, end)
        })
        .collect();
    let reserved = reserved_lines(
        ranges,
        e.reserved_names().map(str::to_string).collect(),
        order,
    );
    section(&mut out, &reserved);
    let options = option_lines(&e.options());
    // Declaration order from the descriptor: aliases of one number keep their order.
    let mut values: Vec<(String, i32, DynamicMessage)> = e
        .enum_descriptor_proto()
        .value
        .iter()
        .filter_map(|p| e.get_value_by_name(p.name()))
        .map(|v| (v.name().to_string(), v.number(), v.options()))
        .collect();
    if order == Order::Normalized {
        values.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    }
    if reserved.is_empty() && (!options.is_empty() || !values.is_empty()) {
        out.push('\n');
    }
    for o in &options {
        append_indented(&mut out, o);
    }
    for (name, number, value_options) in &values {
        let items: Vec<String> = option_items(value_options)
            .into_iter()
            .map(|(_, text)| text)
            .collect();
        append_indented(
            &mut out,
            &format!("{name} = {number}{};\n", bracketed(&items)),
        );
    }
    out.push_str("}\n");
    out
}

fn service_text(s: &ServiceDescriptor) -> String {
    let mut out = format!("service {} {{", s.name());
    section(&mut out, &option_lines(&s.options()));
    let rpcs: Vec<String> = s
        .methods()
        .map(|m| {
            let mut rpc = format!(
                "rpc {} ({}.{}) returns ({}.{})",
                m.name(),
                if m.is_client_streaming() {
                    "stream "
                } else {
                    ""
                },
                m.input().full_name(),
                if m.is_server_streaming() {
                    "stream "
                } else {
                    ""
                },
                m.output().full_name()
            );
            let options = option_lines(&m.options());
            if !options.is_empty() {
                rpc.push_str(" {\n");
                for o in &options {
                    append_indented(&mut rpc, o);
                }
                rpc.push('}');
            }
            rpc.push_str(";\n");
            rpc
        })
        .collect();
    section(&mut out, &rpcs);
    out.push_str("}\n");
    out
}

/// `(sort key, name = value)` for every option set on `options`, sorted by name (custom
/// options by their full name, without the parentheses).
fn option_items(options: &DynamicMessage) -> Vec<(String, String)> {
    let mut items: Vec<(String, String)> = Vec::new();
    for (field, value) in options.fields() {
        push_option(
            &mut items,
            field.name().to_string(),
            field.name(),
            &field.kind(),
            value,
        );
    }
    for (ext, value) in options.extensions() {
        push_option(
            &mut items,
            ext.full_name().to_string(),
            &format!("({})", ext.full_name()),
            &ext.kind(),
            value,
        );
    }
    items.sort_by(|a, b| a.0.cmp(&b.0));
    items
}

fn push_option(
    items: &mut Vec<(String, String)>,
    key: String,
    name: &str,
    kind: &Kind,
    value: &Value,
) {
    match value {
        Value::List(values) => {
            for v in values {
                items.push((key.clone(), format!("{name} = {}", value_text(kind, v))));
            }
        }
        other => items.push((key, format!("{name} = {}", value_text(kind, other)))),
    }
}

fn option_lines(options: &DynamicMessage) -> Vec<String> {
    option_items(options)
        .into_iter()
        .map(|(_, item)| format!("option {item};\n"))
        .collect()
}

/// A string as Confluent's printer quotes it: the usual escapes, other characters as they are.
fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Bytes: as a string when they are UTF-8 text, else with octal escapes.
fn quote_bytes(bytes: &[u8]) -> String {
    if let Ok(text) = std::str::from_utf8(bytes)
        && !text
            .chars()
            .any(|c| c.is_control() && !"\u{7}\u{8}\u{c}\n\r\t\u{b}".contains(c))
    {
        return quote(text);
    }
    let mut out = String::from("\"");
    for &b in bytes {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\'' => out.push_str("\\'"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\{b:03o}");
            }
        }
    }
    out.push('"');
    out
}

fn float_text(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf".into() } else { "-inf".into() }
    } else {
        format!("{v}")
    }
}

fn value_text(kind: &Kind, value: &Value) -> String {
    match value {
        Value::Bool(b) => b.to_string(),
        Value::I32(v) => v.to_string(),
        Value::I64(v) => v.to_string(),
        Value::U32(v) => v.to_string(),
        Value::U64(v) => v.to_string(),
        Value::F32(v) => float_text(f64::from(*v)),
        Value::F64(v) => float_text(*v),
        Value::String(s) => quote(s),
        Value::Bytes(b) => quote_bytes(b),
        Value::EnumNumber(n) => match kind.as_enum().and_then(|e| e.get_value(*n)) {
            Some(v) => v.name().to_string(),
            None => n.to_string(),
        },
        Value::Message(m) => message_value_text(m),
        Value::List(values) => list_text(values.iter().map(|v| value_text(kind, v)).collect()),
        Value::Map(map) => {
            let (key_kind, value_kind) = match kind.as_message() {
                Some(entry) => (
                    entry.map_entry_key_field().kind(),
                    entry.map_entry_value_field().kind(),
                ),
                None => (Kind::String, Kind::String),
            };
            let mut entries: Vec<(&MapKey, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let items: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| {
                    block_text(vec![
                        ("key".to_string(), value_text(&key_kind, &map_key_value(k))),
                        ("value".to_string(), value_text(&value_kind, v)),
                    ])
                })
                .collect();
            list_text(items)
        }
    }
}

/// A list value: its one element alone, several one per line.
fn list_text(items: Vec<String>) -> String {
    match items.len() {
        1 => items.into_iter().next().unwrap_or_default(),
        len => {
            let mut out = String::from("[\n");
            for (i, item) in items.iter().enumerate() {
                let comma = if i + 1 < len { "," } else { "" };
                append_indented(&mut out, &format!("{item}{comma}"));
            }
            out.push(']');
            out
        }
    }
}

/// `{ key: value, ... }` one entry per line, entries sorted by key.
fn block_text(mut entries: Vec<(String, String)>) -> String {
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = String::from("{\n");
    let len = entries.len();
    for (i, (key, value)) in entries.iter().enumerate() {
        let comma = if i + 1 < len { "," } else { "" };
        append_indented(&mut out, &format!("{key}: {value}{comma}"));
    }
    out.push('}');
    out
}

fn map_key_value(key: &MapKey) -> Value {
    match key {
        MapKey::Bool(b) => Value::Bool(*b),
        MapKey::I32(v) => Value::I32(*v),
        MapKey::I64(v) => Value::I64(*v),
        MapKey::U32(v) => Value::U32(*v),
        MapKey::U64(v) => Value::U64(*v),
        MapKey::String(s) => Value::String(s.clone()),
    }
}

/// A message value of an aggregate option, as Confluent prints an option map.
fn message_value_text(m: &DynamicMessage) -> String {
    let mut entries: Vec<(String, String)> = Vec::new();
    for (field, value) in m.fields() {
        entries.push((field.name().to_string(), value_text(&field.kind(), value)));
    }
    for (ext, value) in m.extensions() {
        entries.push((
            format!("[{}]", ext.full_name()),
            value_text(&ext.kind(), value),
        ));
    }
    block_text(entries)
}

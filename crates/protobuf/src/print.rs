//! Prints a compiled file back as `.proto` text: comment-free, fully qualified type names,
//! sorted imports and options, elements in declaration order (order carries meaning: Confluent's
//! message indexes count messages by position).

use prost_reflect::{
    DynamicMessage, EnumDescriptor, ExtensionDescriptor, FieldDescriptor, FileDescriptor, Kind,
    MapKey, MessageDescriptor, ServiceDescriptor, Syntax, Value,
};
use prost_types::FieldDescriptorProto;
use std::fmt::Write;

pub(crate) fn print_file(file: &FileDescriptor) -> String {
    let mut out = String::new();
    let proto = file.file_descriptor_proto();
    match file.syntax() {
        Syntax::Proto3 => out.push_str("syntax = \"proto3\";\n"),
        _ => out.push_str("syntax = \"proto2\";\n"),
    }
    if !file.package_name().is_empty() {
        let _ = writeln!(out, "package {};", file.package_name());
    }
    let mut imports: Vec<String> = proto
        .dependency
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let i = i as i32;
            if proto.public_dependency.contains(&i) {
                format!("import public \"{d}\";")
            } else if proto.weak_dependency.contains(&i) {
                format!("import weak \"{d}\";")
            } else {
                format!("import \"{d}\";")
            }
        })
        .collect();
    imports.sort();
    for i in imports {
        out.push_str(&i);
        out.push('\n');
    }
    print_option_lines(&mut out, &file.options(), 0);
    for m in file.messages() {
        print_message(&mut out, &m, 0);
    }
    for e in file.enums() {
        print_enum(&mut out, &e, 0);
    }
    print_extensions(&mut out, file.extensions(), 0);
    for s in file.services() {
        print_service(&mut out, &s);
    }
    out
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

fn print_message(out: &mut String, m: &MessageDescriptor, level: usize) {
    indent(out, level);
    let _ = writeln!(out, "message {} {{", m.name());
    print_message_body(out, m, level + 1);
    indent(out, level);
    out.push_str("}\n");
}

fn print_message_body(out: &mut String, m: &MessageDescriptor, level: usize) {
    print_option_lines(out, &m.options(), level);
    let mut printed_oneofs: Vec<String> = Vec::new();
    for f in m.fields() {
        match f.containing_oneof().filter(|o| !o.is_synthetic()) {
            Some(oneof) => {
                if printed_oneofs.iter().any(|n| n == oneof.name()) {
                    continue;
                }
                printed_oneofs.push(oneof.name().to_string());
                indent(out, level);
                let _ = writeln!(out, "oneof {} {{", oneof.name());
                print_option_lines(out, &oneof.options(), level + 1);
                for member in oneof.fields() {
                    print_field(out, &member, level + 1, false);
                }
                indent(out, level);
                out.push_str("}\n");
            }
            None => print_field(out, &f, level, true),
        }
    }
    let ranges: Vec<String> = m
        .reserved_ranges()
        .map(|r| range_text(r.start, r.end - 1))
        .collect();
    if !ranges.is_empty() {
        indent(out, level);
        let _ = writeln!(out, "reserved {};", ranges.join(", "));
    }
    let names: Vec<String> = m.reserved_names().map(|n| format!("\"{n}\"")).collect();
    if !names.is_empty() {
        indent(out, level);
        let _ = writeln!(out, "reserved {};", names.join(", "));
    }
    let ext: Vec<String> = m
        .extension_ranges()
        .map(|r| range_text(r.start, r.end - 1))
        .collect();
    if !ext.is_empty() {
        indent(out, level);
        let _ = writeln!(out, "extensions {};", ext.join(", "));
    }
    for nested in m.child_messages() {
        if nested.is_map_entry() || is_group_type(m, &nested) {
            continue;
        }
        print_message(out, &nested, level);
    }
    for e in m.child_enums() {
        print_enum(out, &e, level);
    }
    print_extensions(out, m.child_extensions(), level);
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
    } else if end >= 536_870_911 {
        format!("{start} to max")
    } else {
        format!("{start} to {end}")
    }
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

fn print_field(out: &mut String, f: &FieldDescriptor, level: usize, with_label: bool) {
    indent(out, level);
    let proto = f.field_descriptor_proto();
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
        if f.is_group()
            && let Some(group) = f.kind().as_message()
        {
            let _ = write!(out, "group {} = {}", group.name(), f.number());
            print_field_options(out, proto, f.name(), &f.options());
            out.push_str(" {\n");
            print_message_body(out, group, level + 1);
            indent(out, level);
            out.push_str("}\n");
            return;
        }
        let _ = write!(
            out,
            "{} {} = {}",
            scalar_name(&f.kind()),
            f.name(),
            f.number()
        );
    }
    print_field_options(out, proto, f.name(), &f.options());
    out.push_str(";\n");
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

fn print_field_options(
    out: &mut String,
    proto: &FieldDescriptorProto,
    name: &str,
    options: &DynamicMessage,
) {
    let mut items: Vec<String> = Vec::new();
    if let Some(default) = &proto.default_value {
        let text = match proto.r#type() {
            prost_types::field_descriptor_proto::Type::String => quote(default),
            prost_types::field_descriptor_proto::Type::Bytes => format!("\"{default}\""),
            _ => default.clone(),
        };
        items.push(format!("default = {text}"));
    }
    if let Some(json) = &proto.json_name
        && *json != default_json_name(name)
        && proto.extendee.is_none()
    {
        items.push(format!("json_name = {}", quote(json)));
    }
    items.extend(option_assignments(options));
    if !items.is_empty() {
        let _ = write!(out, " [{}]", items.join(", "));
    }
}

fn print_extensions(
    out: &mut String,
    extensions: impl Iterator<Item = ExtensionDescriptor>,
    level: usize,
) {
    let mut current: Option<String> = None;
    for ext in extensions {
        let extendee = ext.containing_message().full_name().to_string();
        if current.as_deref() != Some(extendee.as_str()) {
            if current.is_some() {
                indent(out, level);
                out.push_str("}\n");
            }
            indent(out, level);
            let _ = writeln!(out, "extend .{extendee} {{");
            current = Some(extendee);
        }
        indent(out, level + 1);
        let proto = ext.field_descriptor_proto();
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
        print_field_options(out, proto, ext.name(), &ext.options());
        out.push_str(";\n");
    }
    if current.is_some() {
        indent(out, level);
        out.push_str("}\n");
    }
}

fn print_enum(out: &mut String, e: &EnumDescriptor, level: usize) {
    indent(out, level);
    let _ = writeln!(out, "enum {} {{", e.name());
    print_option_lines(out, &e.options(), level + 1);
    // Declaration order from the descriptor: aliases of one number keep their order.
    for proto_value in &e.enum_descriptor_proto().value {
        let Some(v) = e.get_value_by_name(proto_value.name()) else {
            continue;
        };
        indent(out, level + 1);
        let _ = write!(out, "{} = {}", v.name(), v.number());
        let opts = option_assignments(&v.options());
        if !opts.is_empty() {
            let _ = write!(out, " [{}]", opts.join(", "));
        }
        out.push_str(";\n");
    }
    let ranges: Vec<String> = e
        .reserved_ranges()
        .map(|r| {
            let (s, end) = (*r.start(), *r.end());
            if s == end {
                s.to_string()
            } else if end == i32::MAX {
                format!("{s} to max")
            } else {
                format!("{s} to {end}")
            }
        })
        .collect();
    if !ranges.is_empty() {
        indent(out, level + 1);
        let _ = writeln!(out, "reserved {};", ranges.join(", "));
    }
    let names: Vec<String> = e.reserved_names().map(|n| format!("\"{n}\"")).collect();
    if !names.is_empty() {
        indent(out, level + 1);
        let _ = writeln!(out, "reserved {};", names.join(", "));
    }
    indent(out, level);
    out.push_str("}\n");
}

fn print_service(out: &mut String, s: &ServiceDescriptor) {
    let _ = writeln!(out, "service {} {{", s.name());
    print_option_lines(out, &s.options(), 1);
    for m in s.methods() {
        let _ = write!(
            out,
            "  rpc {}({}.{}) returns ({}.{})",
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
        let mut body = String::new();
        print_option_lines(&mut body, &m.options(), 2);
        if body.is_empty() {
            out.push_str(";\n");
        } else {
            out.push_str(" {\n");
            out.push_str(&body);
            out.push_str("  }\n");
        }
    }
    out.push_str("}\n");
}

/// `name = value` pairs for every option set on `options`, sorted by name.
fn option_assignments(options: &DynamicMessage) -> Vec<String> {
    let mut items: Vec<(String, String)> = Vec::new();
    for (field, value) in options.fields() {
        push_option(&mut items, field.name().to_string(), &field.kind(), value);
    }
    for (ext, value) in options.extensions() {
        push_option(
            &mut items,
            format!("({})", ext.full_name()),
            &ext.kind(),
            value,
        );
    }
    items.sort();
    items
        .into_iter()
        .map(|(n, v)| format!("{n} = {v}"))
        .collect()
}

fn push_option(items: &mut Vec<(String, String)>, name: String, kind: &Kind, value: &Value) {
    match value {
        Value::List(values) => {
            for v in values {
                items.push((name.clone(), value_text(kind, v)));
            }
        }
        other => items.push((name, value_text(kind, other))),
    }
}

fn print_option_lines(out: &mut String, options: &DynamicMessage, level: usize) {
    for item in option_assignments(options) {
        indent(out, level);
        let _ = writeln!(out, "option {item};");
    }
}

fn quote(s: &str) -> String {
    quote_bytes(s.as_bytes())
}

fn quote_bytes(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    for &b in bytes {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
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
        Value::Message(m) => message_text(m),
        Value::List(values) => {
            let items: Vec<String> = values.iter().map(|v| value_text(kind, v)).collect();
            format!("[{}]", items.join(", "))
        }
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
                    format!(
                        "{{ key: {} value: {} }}",
                        value_text(&key_kind, &map_key_value(k)),
                        value_text(&value_kind, v)
                    )
                })
                .collect();
            format!("[{}]", items.join(", "))
        }
    }
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

/// A message value in protobuf text format, for aggregate option values.
fn message_text(m: &DynamicMessage) -> String {
    let mut parts: Vec<String> = Vec::new();
    for (field, value) in m.fields() {
        parts.push(format!(
            "{}: {}",
            field.name(),
            value_text(&field.kind(), value)
        ));
    }
    for (ext, value) in m.extensions() {
        parts.push(format!(
            "[{}]: {}",
            ext.full_name(),
            value_text(&ext.kind(), value)
        ));
    }
    format!("{{ {} }}", parts.join(" "))
}

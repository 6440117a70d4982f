//! The Protobuf schema lowered into the engine's format-neutral field tree, for semantic rules.
//!
//! The root is the file (kind `Schema`); messages and enums are named by full name
//! (`/acme.Order`, nested ones as their own children), fields at `/acme.Order/fields/amount`,
//! the same paths the Protobuf findings use. Field numbers, reserved numbers and names come
//! from the descriptors; `(confluent.field_meta)` (and the message and enum variants) supply
//! doc, tags and params (as annotations); comments are the doc when the meta has none.
//! Fields that track presence (proto3 `optional`, oneof members, wrapper types) count as
//! nullable; well-known types set the logical type.

use crate::ProtobufSchema;
use covenant_engine::{EnumValue, FieldTree, Node, NodeKind, NumberRange};
use prost_reflect::{
    Cardinality, DescriptorPool, DynamicMessage, EnumDescriptor, ExtensionDescriptor,
    FieldDescriptor, Kind, MapKey, MessageDescriptor, Value,
};
use prost_types::source_code_info::Location;
use std::collections::HashMap;

/// The schema as a neutral field tree.
pub fn field_tree(schema: &ProtobufSchema) -> FieldTree {
    let mut root = Node::new(NodeKind::Schema, "", "", "");
    for name in &schema.own {
        let Some(file) = schema.pool.get_file_by_name(name) else {
            continue;
        };
        if root.name.is_empty() {
            root.name = file.package_name().to_string();
        }
        let file_context = FileContext {
            comments: Comments::of(schema.source_locations(&file)),
            meta: Meta::of(&schema.pool),
        };
        for message in file.messages() {
            root.children.push(message_node(&file_context, &message));
        }
        for e in file.enums() {
            root.children.push(enum_node(&file_context, &e));
        }
    }
    FieldTree {
        format: "PROTOBUF".into(),
        root,
    }
}

/// What every element of one file is read with.
struct FileContext<'a> {
    comments: Comments<'a>,
    meta: Meta,
}

/// The `(confluent.*_meta)` extensions, looked up by name once per tree rather than once per
/// element (a lookup by name was a tenth of building a large file's tree).
struct Meta {
    message: Option<ExtensionDescriptor>,
    field: Option<ExtensionDescriptor>,
    enumeration: Option<ExtensionDescriptor>,
}

impl Meta {
    fn of(pool: &DescriptorPool) -> Meta {
        Meta {
            message: pool.get_extension_by_name("confluent.message_meta"),
            field: pool.get_extension_by_name("confluent.field_meta"),
            enumeration: pool.get_extension_by_name("confluent.enum_meta"),
        }
    }
}

fn message_node(cx: &FileContext<'_>, m: &MessageDescriptor) -> Node {
    let full = m.full_name().to_string();
    let path = format!("/{full}");
    let mut node = Node::new(
        NodeKind::Record,
        full.clone(),
        path.clone(),
        format!("message:{full}"),
    );
    let declared = m.descriptor_proto().options.is_some();
    apply_meta(
        cx.meta.message.as_ref(),
        declared,
        || m.options(),
        &mut node,
    );
    if node.doc.is_none() {
        node.doc = cx.comments.of_element(m.path());
    }
    node.reserved_numbers = m
        .reserved_ranges()
        .map(|r| NumberRange {
            start: i64::from(r.start),
            end: i64::from(r.end) - 1,
        })
        .collect();
    node.reserved_names = m.reserved_names().map(str::to_string).collect();
    // Sized once: a node is about 512 bytes, and a message's children grew by doubling.
    node.children =
        Vec::with_capacity(m.fields().len() + m.child_messages().len() + m.child_enums().len());
    for f in m.fields() {
        node.children.push(field_node(cx, &f, &path));
    }
    for child in m.child_messages().filter(|c| !c.is_map_entry()) {
        node.children.push(message_node(cx, &child));
    }
    for e in m.child_enums() {
        node.children.push(enum_node(cx, &e));
    }
    node
}

fn enum_node(cx: &FileContext<'_>, e: &EnumDescriptor) -> Node {
    let full = e.full_name().to_string();
    let mut node = Node::new(
        NodeKind::Enum,
        full.clone(),
        format!("/{full}"),
        format!("enum:{full}"),
    );
    let declared = e.enum_descriptor_proto().options.is_some();
    apply_meta(
        cx.meta.enumeration.as_ref(),
        declared,
        || e.options(),
        &mut node,
    );
    if node.doc.is_none() {
        node.doc = cx.comments.of_element(e.path());
    }
    node.enum_values = e
        .values()
        .map(|v| EnumValue::new(v.name(), Some(i64::from(v.number()))))
        .collect();
    node.reserved_numbers = e
        .reserved_ranges()
        .map(|r| NumberRange {
            start: i64::from(*r.start()),
            end: i64::from(*r.end()),
        })
        .collect();
    node.reserved_names = e.reserved_names().map(str::to_string).collect();
    node
}

fn field_node(cx: &FileContext<'_>, f: &FieldDescriptor, parent: &str) -> Node {
    let name = f.name();
    let mut path = String::with_capacity(parent.len() + 8 + name.len());
    path.push_str(parent);
    path.push_str("/fields/");
    path.push_str(name);
    let mut node = Node::new(NodeKind::Field, name, path, "");
    node.number = Some(i64::from(f.number()));
    node.required = f.cardinality() == Cardinality::Required;
    node.has_default = f.field_descriptor_proto().default_value.is_some();
    if node.has_default {
        node.default = f
            .field_descriptor_proto()
            .default_value
            .clone()
            .map(serde_json::Value::String);
    }
    let declared = f.field_descriptor_proto().options.is_some();
    apply_meta(cx.meta.field.as_ref(), declared, || f.options(), &mut node);
    if node.doc.is_none() {
        node.doc = cx.comments.of_element(f.path());
    }
    let kind = f.kind();
    let (type_name, logical, wrapper) = kind_name(&kind);
    node.type_name = if f.is_map() {
        match &kind {
            Kind::Message(entry) => {
                let key = entry.map_entry_key_field().kind();
                let value = entry.map_entry_value_field().kind();
                ["map<", &kind_name(&key).0, ",", &kind_name(&value).0, ">"].concat()
            }
            _ => format!("map<{type_name}>"),
        }
    } else if f.is_list() {
        ["array<", &type_name, ">"].concat()
    } else {
        type_name
    };
    if !f.is_list() && !f.is_map() {
        node.logical_type = logical;
        node.nullable = wrapper || (f.supports_presence() && !matches!(kind, Kind::Message(_)));
    }
    node
}

/// The type name, logical type and whether it is a nullable wrapper.
fn kind_name(kind: &Kind) -> (String, Option<String>, bool) {
    match kind {
        Kind::Message(m) => {
            let full = m.full_name();
            let wrapped = match full {
                "google.protobuf.StringValue" => Some("string"),
                "google.protobuf.BytesValue" => Some("bytes"),
                "google.protobuf.BoolValue" => Some("bool"),
                "google.protobuf.Int32Value" => Some("int32"),
                "google.protobuf.Int64Value" => Some("int64"),
                "google.protobuf.UInt32Value" => Some("uint32"),
                "google.protobuf.UInt64Value" => Some("uint64"),
                "google.protobuf.FloatValue" => Some("float"),
                "google.protobuf.DoubleValue" => Some("double"),
                _ => None,
            };
            if let Some(inner) = wrapped {
                return (inner.to_string(), None, true);
            }
            let logical = match full {
                "confluent.type.Decimal" | "google.type.Decimal" => Some("decimal".to_string()),
                "google.protobuf.Timestamp"
                | "google.protobuf.Duration"
                | "google.type.Date"
                | "google.type.DateTime"
                | "google.type.TimeOfDay"
                | "google.type.Money" => Some(full.to_string()),
                _ => None,
            };
            (["message:", full].concat(), logical, false)
        }
        Kind::Enum(e) => (["enum:", e.full_name()].concat(), None, false),
        scalar => (scalar_name(scalar).to_string(), None, false),
    }
}

/// A scalar's name as `.proto` text spells it.
fn scalar_name(kind: &Kind) -> &'static str {
    match kind {
        Kind::Double => "double",
        Kind::Float => "float",
        Kind::Int32 => "int32",
        Kind::Int64 => "int64",
        Kind::Uint32 => "uint32",
        Kind::Uint64 => "uint64",
        Kind::Sint32 => "sint32",
        Kind::Sint64 => "sint64",
        Kind::Fixed32 => "fixed32",
        Kind::Fixed64 => "fixed64",
        Kind::Sfixed32 => "sfixed32",
        Kind::Sfixed64 => "sfixed64",
        Kind::Bool => "bool",
        Kind::String => "string",
        Kind::Bytes => "bytes",
        Kind::Message(_) => "message",
        Kind::Enum(_) => "enum",
    }
}

/// Reads `(confluent.*_meta)` from an element's options: doc, tags and params. The options
/// are decoded (`options`) only when the element declares some and the pool knows the
/// extension: decoding builds a message, and most elements have nothing to decode.
fn apply_meta(
    extension: Option<&ExtensionDescriptor>,
    declared: bool,
    options: impl FnOnce() -> DynamicMessage,
    node: &mut Node,
) {
    let Some(ext) = extension.filter(|_| declared) else {
        return;
    };
    let options = options();
    if !options.has_extension(ext) {
        return;
    }
    let value = options.get_extension(ext);
    let Some(meta) = value.as_message() else {
        return;
    };
    if let Some(doc) = meta.get_field_by_name("doc")
        && let Some(text) = doc.as_str().filter(|t| !t.is_empty())
    {
        node.doc = Some(text.to_string());
    }
    if let Some(tags) = meta.get_field_by_name("tags") {
        for tag in tags
            .as_list()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !node.tags.iter().any(|t| t == tag) {
                node.tags.push(tag.to_string());
            }
        }
    }
    if let Some(params) = meta.get_field_by_name("params")
        && let Some(map) = params.as_map()
    {
        for (key, value) in map {
            if let (MapKey::String(k), Some(v)) = (key, value.as_str()) {
                node.annotations.insert(k.clone(), v.to_string());
            }
        }
    }
}

/// The comments of one file's elements by descriptor path, looked up once per element: a
/// search of the source info for each element was quadratic in the size of the file.
struct Comments<'a> {
    /// The first location of each path, as a search from the start would find it; empty
    /// when the file has no comments at all.
    by_path: HashMap<&'a [i32], &'a Location>,
}

impl<'a> Comments<'a> {
    fn of(locations: &'a [Location]) -> Comments<'a> {
        let mut by_path = HashMap::new();
        let commented =
            |l: &Location| l.leading_comments.is_some() || l.trailing_comments.is_some();
        if locations.iter().any(commented) {
            for l in locations {
                by_path.entry(&l.path[..]).or_insert(l);
            }
        }
        Comments { by_path }
    }

    /// The leading (else trailing) comment of the element at `path`, when source info was
    /// kept.
    fn of_element(&self, path: &[i32]) -> Option<String> {
        let location = self.by_path.get(path)?;
        location
            .leading_comments
            .as_deref()
            .or(location.trailing_comments.as_deref())
            .map(|c| c.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|c| !c.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use covenant_engine::Format;

    fn tree(text: &str) -> FieldTree {
        match crate::ProtobufFormat::parse(text, &[]) {
            Ok(schema) => field_tree(&schema),
            Err(e) => panic!("test schema does not parse: {e}"),
        }
    }

    #[test]
    fn messages_fields_enums_reservations_and_meta() {
        let t = tree(
            r#"syntax = "proto3";
package acme;
import "confluent/meta.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

message CaseEvent {
  string event_id = 1;
  string email = 2 [(confluent.field_meta) = { tags: ["PII"], params: { key: "owner", value: "crm" } }];
  optional string reason = 3;
  google.protobuf.Timestamp updated_at = 4;
  google.protobuf.StringValue note = 5;
  repeated string labels = 6;
  map<string, int64> counts = 8;
  Status status = 9;
  reserved 7, 10 to 12;
  reserved "legacy_owner";
  enum Status {
    STATUS_UNSPECIFIED = 0;
    STATUS_OPEN = 1;
    reserved 5;
  }
}
"#,
        );
        assert_eq!(t.format, "PROTOBUF");
        assert_eq!(t.root.name, "acme");
        let at = |p: &str| t.find(p).unwrap_or_else(|| panic!("no node at {p}"));
        let msg = at("/acme.CaseEvent");
        assert_eq!(msg.kind, NodeKind::Record);
        assert!(msg.reserves_number(7) && msg.reserves_number(12) && !msg.reserves_number(13));
        assert!(msg.reserves_name("legacy_owner"));
        let id = at("/acme.CaseEvent/fields/event_id");
        assert_eq!(
            (id.type_name.as_str(), id.number, id.nullable),
            ("string", Some(1), false)
        );
        let email = at("/acme.CaseEvent/fields/email");
        assert_eq!(email.tags, ["PII"]);
        assert_eq!(
            email.annotations.get("owner").map(String::as_str),
            Some("crm")
        );
        assert!(at("/acme.CaseEvent/fields/reason").nullable);
        let updated = at("/acme.CaseEvent/fields/updated_at");
        assert_eq!(updated.type_name, "message:google.protobuf.Timestamp");
        assert_eq!(
            updated.logical_type.as_deref(),
            Some("google.protobuf.Timestamp")
        );
        let note = at("/acme.CaseEvent/fields/note");
        assert_eq!((note.type_name.as_str(), note.nullable), ("string", true));
        assert_eq!(
            at("/acme.CaseEvent/fields/labels").type_name,
            "array<string>"
        );
        assert_eq!(
            at("/acme.CaseEvent/fields/counts").type_name,
            "map<string,int64>"
        );
        assert_eq!(
            at("/acme.CaseEvent/fields/status").type_name,
            "enum:acme.CaseEvent.Status"
        );
        let status = at("/acme.CaseEvent.Status");
        assert_eq!(status.kind, NodeKind::Enum);
        assert_eq!(
            status.enum_values[1],
            EnumValue::new("STATUS_OPEN", Some(1))
        );
        assert!(status.reserves_number(5));
    }
}

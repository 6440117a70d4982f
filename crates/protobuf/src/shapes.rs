//! Structural hashes ("shapes") of field declarations, so that the Confluent comparison
//! passes over a field declared the same way on both sides without building descriptors for
//! it: in a long history most fields of most messages are unchanged from one version to the
//! next, and new fields are usually added after the old ones.
//!
//! A field's shape hashes its whole encoded declaration (name, number, label, type, type
//! name, oneof index, options), and for a field of a message type the package of that type's
//! file (which decides the type's name within its package), and for a map the declaration of
//! its entry. The hash is the engine's keyed one ([`covenant_engine::shape`]).
//!
//! A field is *quiet* when comparing it with a field of equal shape in a file of the same
//! syntax cannot report anything: a scalar or an enum, or a message (or map value) type
//! declared in the schema's own files, which the comparison does not enter. A field whose
//! type comes from an imported file is compared by entering that type, so it is never quiet.

use crate::ProtobufSchema;
use covenant_engine::shape::Hasher128;
use prost::Message;
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

/// One field declaration of a message, in field-number order.
#[derive(Debug, Clone)]
pub(crate) struct FieldShape {
    pub number: i32,
    /// Its index in the message's `DescriptorProto::field`.
    pub declaration: usize,
    pub shape: u128,
    pub quiet: bool,
    /// Neither in a oneof nor required: adding or removing it is only ever informational.
    pub plain: bool,
}

/// The fields of one message.
#[derive(Debug, Clone, Default)]
pub(crate) struct MessageShapes {
    pub fields: Box<[FieldShape]>,
    /// `prefixes[i]` covers fields `0..=i`, for as long as the leading fields are quiet: two
    /// messages whose prefixes agree up to `i` have those fields alike and quiet.
    prefixes: Box<[u128]>,
}

impl MessageShapes {
    /// How many leading fields two messages share, alike and quiet.
    pub fn common_quiet_prefix(&self, other: &MessageShapes) -> usize {
        covenant_engine::shape::common_prefix(&self.prefixes, &other.prefixes)
    }
}

/// The shapes of every message of a schema's pool, by full name (seeded per process: the
/// names come from submitted schemas).
#[derive(Debug, Clone, Default)]
pub(crate) struct FieldShapes {
    messages: HashMap<Box<str>, MessageShapes, foldhash::fast::RandomState>,
}

impl FieldShapes {
    pub fn of(schema: &ProtobufSchema) -> FieldShapes {
        let messages = schema
            .pool()
            .all_messages()
            .map(|m| (m.full_name().into(), message_shapes(schema, &m)))
            .collect();
        FieldShapes { messages }
    }

    pub fn message(&self, m: &MessageDescriptor) -> Option<&MessageShapes> {
        self.messages.get(m.full_name())
    }
}

pub(crate) fn message_shapes(schema: &ProtobufSchema, m: &MessageDescriptor) -> MessageShapes {
    use prost_types::field_descriptor_proto::{Label, Type};
    let mut fields = Vec::with_capacity(m.descriptor_proto().field.len());
    let mut encoded = Vec::new();
    for (declaration, proto) in m.descriptor_proto().field.iter().enumerate() {
        let mut h = covenant_engine::shape::hasher();
        encoded.clear();
        proto.encode_raw(&mut encoded);
        h.write(&encoded);
        // Scalars and enums are decided by their declaration; only a message type needs its
        // descriptor (a declaration that does not say its type's kind is looked up too).
        let quiet = match (&proto.type_name, proto.r#type) {
            (None, _) => true,
            (Some(_), Some(t)) if t == Type::Enum as i32 => true,
            (Some(_), _) => u32::try_from(proto.number())
                .ok()
                .and_then(|n| m.get_field(n))
                .is_some_and(|f| hash_type(schema, &f, &mut h)),
        };
        let in_oneof = proto.oneof_index.is_some() && !proto.proto3_optional();
        fields.push(FieldShape {
            number: proto.number(),
            declaration,
            shape: h.finish128().as_u128(),
            quiet,
            plain: !in_oneof && proto.label() != Label::Required,
        });
    }
    fields.sort_by_key(|f| f.number);
    let mut prefixes = Vec::new();
    let mut chain = covenant_engine::shape::hasher();
    for f in fields.iter().take_while(|f| f.quiet) {
        f.shape.hash(&mut chain);
        prefixes.push(chain.clone().finish128().as_u128());
    }
    MessageShapes {
        fields: fields.into_boxed_slice(),
        prefixes: prefixes.into_boxed_slice(),
    }
}

/// Hashes what the declaration leaves to other declarations (a map's entry, the package of a
/// message type); returns whether the field is quiet.
fn hash_type(schema: &ProtobufSchema, f: &FieldDescriptor, h: &mut impl Hasher) -> bool {
    let own = |t: &MessageDescriptor| schema.is_own_file(t.parent_file().name());
    let named = |t: &MessageDescriptor, h: &mut dyn Hasher| {
        h.write(t.package_name().as_bytes());
        h.write_u8(0xff);
        own(t)
    };
    match f.kind() {
        Kind::Message(entry) if f.is_map() => {
            h.write(&entry.descriptor_proto().encode_to_vec());
            match entry.map_entry_value_field().kind() {
                Kind::Message(value) => named(&value, h),
                _ => true,
            }
        }
        Kind::Message(t) => named(&t, h),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use covenant_engine::Format;

    fn parse(text: &str) -> ProtobufSchema {
        crate::ProtobufFormat::parse(text, &[]).expect("parses")
    }

    fn shapes_of<'a>(shapes: &'a FieldShapes, s: &ProtobufSchema, name: &str) -> &'a MessageShapes {
        let m = s.pool().get_message_by_name(name).expect("message");
        shapes.message(&m).expect("shapes")
    }

    #[test]
    fn fields_declared_alike_share_a_prefix_until_the_first_difference() {
        let old = parse(
            "syntax = \"proto3\";\npackage p;\nmessage A { string a = 1; int64 b = 2; A c = 3; map<string, A> d = 4; }\n",
        );
        let new = parse(
            "syntax = \"proto3\";\npackage p;\nmessage A { string a = 1; int64 b = 2; A c = 3; map<string, A> d = 4; bool e = 5; }\n",
        );
        let changed = parse(
            "syntax = \"proto3\";\npackage p;\nmessage A { string a = 1; int32 b = 2; A c = 3; map<string, A> d = 4; }\n",
        );
        let (so, sn, sc) = (
            FieldShapes::of(&old),
            FieldShapes::of(&new),
            FieldShapes::of(&changed),
        );
        let (o, n, c) = (
            shapes_of(&so, &old, "p.A"),
            shapes_of(&sn, &new, "p.A"),
            shapes_of(&sc, &changed, "p.A"),
        );
        assert!(o.fields.iter().all(|f| f.quiet && f.plain));
        assert_eq!(o.common_quiet_prefix(n), 4);
        assert_eq!(o.common_quiet_prefix(c), 1);
        assert_eq!(o.fields[1].number, 2);
        assert_ne!(o.fields[1].shape, c.fields[1].shape);
    }

    #[test]
    fn imported_types_oneofs_and_map_entries_are_told_apart() {
        let text = "syntax = \"proto3\";\npackage p;\nimport \"google/protobuf/timestamp.proto\";\nmessage A {\n  google.protobuf.Timestamp at = 1;\n  oneof o { string x = 2; int64 y = 3; }\n  optional string z = 4;\n  map<string, google.protobuf.Timestamp> times = 5;\n  map<string, string> labels = 6;\n}\n";
        let s = parse(text);
        let shapes = FieldShapes::of(&s);
        let a = shapes_of(&shapes, &s, "p.A");
        let by = |n: i32| a.fields.iter().find(|f| f.number == n).expect("field");
        // Types from imported files are entered by the comparison: never quiet.
        assert!(!by(1).quiet);
        assert!(!by(5).quiet);
        assert!(by(6).quiet);
        // Oneof members are not plain; a proto3 `optional` field is.
        assert!(!by(2).plain && !by(3).plain);
        assert!(by(4).plain);
        // The leading run stops at the first field that is not quiet.
        assert_eq!(a.common_quiet_prefix(a), 0);
    }

    #[test]
    fn a_map_entry_declared_differently_changes_the_field_shape() {
        let a = parse("syntax = \"proto3\";\nmessage A { map<string, string> m = 1; }\n");
        let b = parse("syntax = \"proto3\";\nmessage A { map<string, int64> m = 1; }\n");
        let (sa, sb) = (FieldShapes::of(&a), FieldShapes::of(&b));
        let (ma, mb) = (shapes_of(&sa, &a, "A"), shapes_of(&sb, &b, "A"));
        // The field's own declaration is the same (`MEntry`, repeated); its entry is not.
        assert_eq!(
            a.pool()
                .get_message_by_name("A")
                .expect("A")
                .descriptor_proto()
                .field,
            b.pool()
                .get_message_by_name("A")
                .expect("A")
                .descriptor_proto()
                .field
        );
        assert_ne!(ma.fields[0].shape, mb.fields[0].shape);
    }

    #[test]
    fn an_imported_type_that_changed_behind_an_unchanged_field_is_still_found() {
        let dep = |ty: &str| covenant_engine::Reference {
            name: "dep.proto".into(),
            subject: "dep".into(),
            version: 1,
            schema: format!("syntax = \"proto3\";\npackage d;\nmessage T {{ {ty} a = 1; }}\n"),
        };
        let main = "syntax = \"proto3\";\npackage p;\nimport \"dep.proto\";\nmessage A { string s = 1; d.T t = 2; }\n";
        let parse_with = |r: covenant_engine::Reference| {
            crate::ProtobufFormat::parse(main, &[r]).expect("parses")
        };
        let (old, new) = (parse_with(dep("string")), parse_with(dep("double")));
        let findings = covenant_engine::budget::unlimited(|m| {
            crate::ProtobufFormat::check(m, &new, &old, &covenant_engine::CheckOptions::default())
        });
        assert!(
            findings
                .iter()
                .any(|f| f.rule == "FIELD_NAMED_TYPE_CHANGED" && f.path == "/p.A/fields/t"),
            "{findings:?}"
        );
    }
}

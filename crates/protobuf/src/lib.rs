//! Protobuf: parsing without protoc, compatibility and wire-safety rules.
//!
//! Schemas are compiled with `protox` into a `prost-reflect` descriptor pool; imports come from
//! the registry's references, the well-known `google/protobuf/*.proto` files and the imports
//! Confluent resolves by itself (`confluent/meta.proto`, `confluent/type/decimal.proto`, a few
//! `google/type/*.proto`).
//!
//! Compatibility follows Confluent's Protobuf `SchemaDiff` (its difference names are the rule
//! ids; compatible differences are `Info` findings). With [`ProtobufStrictness::Wire`] or
//! [`ProtobufStrictness::WireJson`] buf's WIRE or WIRE_JSON breaking rules are added as errors.
//!
//! The stricter levels keep Confluent's errors on purpose: a registry subject must stay
//! acceptable to Confluent clients, so `Wire` means "Confluent's verdict and nothing that breaks
//! old bytes", not "buf's WIRE alone". A buf category on its own is the set of findings whose
//! rule implements a buf rule of that category (the rule's peers name `buf:<its own id>`);
//! the conformance test judges buf's cases that way, and agrees with buf on every case it can
//! compile, rule for rule. Confluent's rules that only relate to a buf rule list it as a peer
//! too, but do not count as buf's.
//!
//! Finding paths use full names, never indexes:
//!
//! | element | path |
//! |---|---|
//! | the file (package, syntax) | `/` (in a file set: `/files/<path>`) |
//! | message or enum | `/acme.Order`, `/acme.Order.Status` |
//! | field | `/acme.Order/fields/amount` |
//! | oneof | `/acme.Order/oneofs/payment` |
//! | reserved ranges and names | `/acme.Order/reserved` |
//! | enum value | `/acme.Status/values/ACTIVE` |
//! | extension | `/extensions/acme.ext_name` |
//! | rpc | `/acme.Orders/methods/Place` |
//!
//! [`ProtobufStrictness::Wire`]: covenant_engine::ProtobufStrictness::Wire
//! [`ProtobufStrictness::WireJson`]: covenant_engine::ProtobufStrictness::WireJson

mod buf;
pub use buf::{CONCERNS, Concern, concern};
mod builtin;
mod confluent;
mod fields;
pub use fields::field_tree;
mod limits;
mod options;
mod parse;
pub use parse::main_file_name;
mod position;
pub use position::{Locator, locate};
mod print;
mod qualify;
pub mod rules;
mod shapes;
mod text;
mod wire;

pub use wire::{decode_message_indexes, encode_message_indexes};

use base64::Engine;
use covenant_engine::budget::Metered;
use covenant_engine::{
    CheckOptions, Direction, FieldTree, Finding, Format, Limits, Numbering, Pass,
    ProtobufStrictness, Reference, RuleSpec, SchemaError, SchemaErrorKind,
};
use parse::Source;
use prost_reflect::{DescriptorPool, DynamicMessage, FileDescriptor, MessageDescriptor};
use prost_types::source_code_info::Location;
use std::sync::{Arc, OnceLock};

/// A parsed `.proto` file with its imports resolved.
#[derive(Debug, Clone)]
pub struct ProtobufSchema {
    pool: DescriptorPool,
    /// The files this schema consists of; a registry schema has one, a file set several.
    own: Vec<String>,
    /// The text as given, or printed from the descriptor when a descriptor was given.
    text: String,
    /// Built by [`ProtobufSchema::parse_file_set`]: files are paired by path when checking.
    set: bool,
    /// Built on the first comparison and kept: a schema is compared with many others.
    shapes: Arc<OnceLock<shapes::FieldShapes>>,
    /// Positions and comments of the files compiled from text (see [`parse::SourceInfos`]).
    source_infos: Arc<parse::SourceInfos>,
    /// Built the first time a later version is judged against this one, and kept: every
    /// registration of a subject holds the new version against all earlier ones.
    numbering: Arc<OnceLock<Numbering>>,
}

/// Whether `text` is read as a base64 `FileDescriptorProto`: it decodes as one and is not
/// `.proto` text, which is tried first (see [`ProtobufFormat`]'s `parse_with`).
pub fn is_descriptor_base64(text: &str) -> bool {
    parse::decode_descriptor(text).is_some()
        && parse::compile(
            &[(parse::main_file_name(&[]), Source::Text(text.to_string()))],
            &[],
            &Limits::default(),
        )
        .is_err()
}

/// The identity text ([`ProtobufSchema::canonical_text`]) of a schema that needs no
/// references (it imports nothing, or only the files resolved without references); `None`
/// when it does not compile on its own.
pub fn identity_string(text: &str) -> Option<String> {
    ProtobufFormat::parse(text, &[])
        .ok()
        .map(|s| s.canonical_text())
}

impl ProtobufSchema {
    /// Parses a base64-encoded `FileDescriptorProto`, as Confluent clients send with
    /// `format=serialized`; imports come from `references`.
    pub fn from_descriptor_base64(
        b64: &str,
        references: &[Reference],
    ) -> Result<ProtobufSchema, SchemaError> {
        Self::from_descriptor_base64_with(b64, references, &Limits::default())
    }

    /// [`ProtobufSchema::from_descriptor_base64`] within `limits`.
    pub fn from_descriptor_base64_with(
        b64: &str,
        references: &[Reference],
        limits: &Limits,
    ) -> Result<ProtobufSchema, SchemaError> {
        let fd = parse::decode_descriptor(b64).ok_or_else(|| {
            SchemaError::new(
                SchemaErrorKind::Syntax,
                "",
                "The text is not a base64-encoded FileDescriptorProto.",
            )
        })?;
        let name = parse::main_file_name(references);
        let compiled = parse::compile(
            &[(name.clone(), Source::Descriptor(Box::new(fd)))],
            references,
            limits,
        )?;
        let mut schema = ProtobufSchema::compiled(compiled, vec![name], String::new(), false);
        schema.text = schema.canonical_text();
        Ok(schema)
    }

    /// Parses several files that form one unit (for example two directories compared file by
    /// file). Every file is "own": checks pair files by path and report deleted files.
    pub fn parse_file_set(
        files: &[(String, String)],
        references: &[Reference],
    ) -> Result<ProtobufSchema, SchemaError> {
        let own: Vec<(String, Source)> = files
            .iter()
            .map(|(n, t)| (n.clone(), Source::Text(t.clone())))
            .collect();
        let compiled = parse::compile(&own, references, &Limits::default())?;
        Ok(ProtobufSchema::compiled(
            compiled,
            files.iter().map(|(n, _)| n.clone()).collect(),
            files.first().map(|(_, t)| t.clone()).unwrap_or_default(),
            true,
        ))
    }

    fn compiled(
        compiled: parse::Compiled,
        own: Vec<String>,
        text: String,
        set: bool,
    ) -> ProtobufSchema {
        ProtobufSchema {
            pool: compiled.pool,
            own,
            text,
            set,
            shapes: Arc::default(),
            source_infos: Arc::new(compiled.source_infos),
            numbering: Arc::default(),
        }
    }

    /// The file as a base64-encoded `FileDescriptorProto` (Confluent's `format=serialized`).
    pub fn to_descriptor_base64(&self) -> String {
        match self.main_file() {
            Some(file) => base64::engine::general_purpose::STANDARD.encode(file.encode_to_vec()),
            None => String::new(),
        }
    }

    /// Confluent wire-format message indexes of a message, by full name: its position among the
    /// file's top-level messages, then among each enclosing message's nested messages.
    pub fn message_indexes(&self, full_name: &str) -> Option<Vec<i32>> {
        let file = self.main_file()?;
        let target = self.pool.get_message_by_name(full_name)?;
        if target.parent_file().name() != file.name() {
            return None;
        }
        let mut chain = vec![target.clone()];
        let mut current = target;
        while let Some(parent) = current.parent_message() {
            chain.push(parent.clone());
            current = parent;
        }
        chain.reverse();
        let mut indexes = Vec::with_capacity(chain.len());
        let mut siblings: Vec<MessageDescriptor> = file.messages().collect();
        for m in chain {
            let pos = siblings
                .iter()
                .filter(|s| !s.is_map_entry())
                .position(|s| s.full_name() == m.full_name())?;
            indexes.push(pos as i32);
            siblings = m.child_messages().collect();
        }
        Some(indexes)
    }

    /// The full name of the message at `indexes`; an empty slice means the first message.
    pub fn message_name(&self, indexes: &[i32]) -> Option<String> {
        let file = self.main_file()?;
        let path: &[i32] = if indexes.is_empty() { &[0] } else { indexes };
        let mut siblings: Vec<MessageDescriptor> = file.messages().collect();
        let mut found: Option<MessageDescriptor> = None;
        for &i in path {
            let idx = usize::try_from(i).ok()?;
            let m = siblings
                .iter()
                .filter(|s| !s.is_map_entry())
                .nth(idx)?
                .clone();
            siblings = m.child_messages().collect();
            found = Some(m);
        }
        found.map(|m| m.full_name().to_string())
    }

    /// The text this schema was registered with (printed from the descriptor for base64 input).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The compiled descriptors, imports included.
    pub fn pool(&self) -> &DescriptorPool {
        &self.pool
    }

    /// Full names of the messages of the schema's own file(s), in declaration order.
    pub fn message_names(&self) -> Vec<String> {
        fn walk(m: &MessageDescriptor, out: &mut Vec<String>) {
            if m.is_map_entry() {
                return;
            }
            out.push(m.full_name().to_string());
            for c in m.child_messages() {
                walk(&c, out);
            }
        }
        let mut out = Vec::new();
        for f in self.own_files() {
            for m in f.messages() {
                walk(&m, &mut out);
            }
        }
        out
    }

    pub(crate) fn main_file(&self) -> Option<FileDescriptor> {
        self.own.first().and_then(|n| self.pool.get_file_by_name(n))
    }

    pub(crate) fn own_files(&self) -> Vec<FileDescriptor> {
        self.own
            .iter()
            .filter_map(|n| self.pool.get_file_by_name(n))
            .collect()
    }

    pub(crate) fn is_own_file(&self, name: &str) -> bool {
        self.own.iter().any(|n| n == name)
    }

    pub(crate) fn is_set(&self) -> bool {
        self.set
    }

    /// The source info locations of `file` ([`parse::locations_of`]).
    pub(crate) fn source_locations<'a>(&'a self, file: &'a FileDescriptor) -> &'a [Location] {
        parse::locations_of(&self.source_infos, file)
    }

    /// The numbers and names this schema's messages and enums give out, as the rules about
    /// a subject's whole history read them (from its field tree, built once). Protobuf has no
    /// field ids besides its numbers, so no `fields`.
    pub fn numbering(&self) -> &Numbering {
        self.numbering
            .get_or_init(|| Numbering::declarations_of(&fields::field_tree(self)))
    }

    /// This schema's field tree, and its numbering made from that same tree if it was not made
    /// yet: a judgement needs both for the version being replaced, and lowering a large schema
    /// twice costs as much as one of its rules.
    pub fn field_tree_and_numbering(&self) -> (FieldTree, &Numbering) {
        let tree = fields::field_tree(self);
        let numbering = self
            .numbering
            .get_or_init(|| Numbering::declarations_of(&tree));
        (tree, numbering)
    }

    pub(crate) fn field_shapes(&self) -> &shapes::FieldShapes {
        self.shapes.get_or_init(|| shapes::FieldShapes::of(self))
    }

    /// The schema as Confluent prints it normalized: fields, oneofs, values, reserved ranges
    /// and imports sorted, type names fully qualified.
    fn normalized_text(&self) -> String {
        self.printed(print::Order::Normalized)
    }

    /// The schema printed back in declaration order, type names fully qualified, options
    /// sorted: what identifies a Protobuf schema. Whitespace and comments make no difference,
    /// nor whether the schema came as `.proto` text or as a descriptor.
    pub fn canonical_text(&self) -> String {
        self.printed(print::Order::Declared)
    }

    fn printed(&self, order: print::Order) -> String {
        self.own_files()
            .iter()
            .map(|f| print::print_file(f, order))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Decodes `bytes` (a Protobuf payload without the Confluent framing) as `message_full_name`
/// and renders it as JSON, for replaying samples against a schema. What a payload makes the
/// decoding hold is bounded by its size (every value takes at least one of its bytes; nesting
/// stops at the decoder's recursion limit) and charged to the budget `_m` proves installed.
pub fn decode_with(
    _m: Metered<'_>,
    reader: &ProtobufSchema,
    message_full_name: &str,
    bytes: &[u8],
) -> Result<serde_json::Value, String> {
    let desc = reader
        .pool
        .get_message_by_name(message_full_name)
        .ok_or_else(|| format!("Message '{message_full_name}' is not defined in the schema."))?;
    if covenant_engine::budget::charge(wire::decoding_units(bytes.len())) {
        return Err(wire::BUDGET_SPENT.into());
    }
    let msg = DynamicMessage::decode(desc, bytes).map_err(|e| e.to_string())?;
    wire::message_to_json(&msg)
}

pub struct ProtobufFormat;

impl Format for ProtobufFormat {
    type Schema = ProtobufSchema;
    const NAME: &'static str = "PROTOBUF";

    /// Text first; if that fails and the input is a base64 `FileDescriptorProto` (as Confluent
    /// clients send), the descriptor. The text's error is reported when neither works.
    fn parse_with(
        text: &str,
        references: &[Reference],
        limits: &Limits,
    ) -> Result<ProtobufSchema, SchemaError> {
        let name = parse::main_file_name(references);
        match parse::compile(
            &[(name.clone(), Source::Text(text.to_string()))],
            references,
            limits,
        ) {
            Ok(compiled) => Ok(ProtobufSchema::compiled(
                compiled,
                vec![name],
                text.to_string(),
                false,
            )),
            Err(text_error) => {
                if parse::decode_descriptor(text).is_some() {
                    ProtobufSchema::from_descriptor_base64_with(text, references, limits)
                } else {
                    Err(text_error)
                }
            }
        }
    }

    fn normalized(schema: &ProtobufSchema) -> String {
        schema.normalized_text()
    }

    fn check(
        m: Metered<'_>,
        reader: &ProtobufSchema,
        writer: &ProtobufSchema,
        options: &CheckOptions,
    ) -> Vec<Finding> {
        let pass = Pass {
            direction: Direction::Backward,
            history: true,
        };
        Self::check_pass(m, reader, writer, options, pass)
    }

    /// Rules about the history of the files ([`Concern::History`]: reservations kept,
    /// deletions reserved, files kept) run once per pair, from the earlier version to the
    /// later; every other rule runs for `reader` and `writer` as given.
    fn check_pass(
        _m: Metered<'_>,
        reader: &ProtobufSchema,
        writer: &ProtobufSchema,
        options: &CheckOptions,
        pass: Pass,
    ) -> Vec<Finding> {
        let is_history =
            |f: &Finding| may_be_history(&f.rule) && concern(&f.rule) == Some(Concern::History);
        // Backward: the writer is the earlier version, so this run is also the history run.
        let history_here = pass.history && pass.direction == Direction::Backward;
        let mut out: Vec<Finding> = all_findings(reader, writer, options)
            .into_iter()
            .filter(|f| history_here || !is_history(f))
            .collect();
        if pass.history && pass.direction == Direction::Forward {
            let forward_in_time = all_findings(writer, reader, options);
            out.extend(forward_in_time.into_iter().filter(is_history));
        }
        out
    }
}

/// A test on the id's ending that every history rule passes (a test keeps it so): it spares
/// a search of [`CONCERNS`] for each of the many findings of the passes that drop them.
fn may_be_history(rule_id: &str) -> bool {
    rule_id.ends_with("_NO_DELETE") || rule_id.ends_with("_RESERVED")
}

/// Confluent's differences and, at the stricter levels, buf's rules, for reading `writer`
/// data with `reader`.
fn all_findings(
    reader: &ProtobufSchema,
    writer: &ProtobufSchema,
    options: &CheckOptions,
) -> Vec<Finding> {
    let mut out = Vec::new();
    confluent::check(reader, writer, options, &mut out);
    match options.protobuf_strictness {
        ProtobufStrictness::Confluent => {}
        ProtobufStrictness::Wire => buf::check(reader, writer, false, &mut out),
        ProtobufStrictness::WireJson => buf::check(reader, writer, true, &mut out),
    }
    out
}

/// Every Protobuf rule, in catalog order.
pub fn rules() -> &'static [&'static RuleSpec] {
    rules::ALL
}

impl covenant_engine::RuleCatalog for ProtobufFormat {
    fn rules() -> &'static [&'static RuleSpec] {
        rules::ALL
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORDER: &str = r#"syntax = "proto3";
package acme;
message Order {
  string id = 1;
  message Line { int64 qty = 1; message Note { string text = 1; } }
  map<string, string> labels = 3;
  repeated Line lines = 2;
}
message Customer { string name = 1; }
"#;

    #[test]
    fn every_history_rule_passes_the_quick_test() {
        for (id, c) in CONCERNS {
            assert_eq!(*c == Concern::History, may_be_history(id), "{id}");
        }
    }

    #[test]
    fn message_indexes_round_trip() {
        let s = ProtobufFormat::parse(ORDER, &[]).unwrap();
        assert_eq!(s.message_indexes("acme.Order"), Some(vec![0]));
        assert_eq!(s.message_indexes("acme.Customer"), Some(vec![1]));
        assert_eq!(
            s.message_indexes("acme.Order.Line.Note"),
            Some(vec![0, 0, 0])
        );
        assert_eq!(s.message_name(&[1]).as_deref(), Some("acme.Customer"));
        assert_eq!(s.message_name(&[0, 0]).as_deref(), Some("acme.Order.Line"));
        assert_eq!(s.message_name(&[]).as_deref(), Some("acme.Order"));
        assert_eq!(s.message_name(&[5]), None);
        assert_eq!(s.message_indexes("acme.Nope"), None);
    }

    #[test]
    fn descriptor_base64_round_trip_and_text_fallback() {
        let s = ProtobufFormat::parse(ORDER, &[]).unwrap();
        let b64 = s.to_descriptor_base64();
        assert!(!b64.is_empty());
        let back = ProtobufFormat::parse(&b64, &[]).unwrap();
        assert_eq!(
            ProtobufFormat::normalized(&back),
            ProtobufFormat::normalized(&s)
        );
        assert!(back.text().contains("message Order"));
        let again = ProtobufSchema::from_descriptor_base64(&b64, &[]).unwrap();
        assert_eq!(again.message_indexes("acme.Customer"), Some(vec![1]));
    }

    #[test]
    fn normalized_is_stable_and_reparses() {
        let a = ProtobufFormat::parse(ORDER, &[]).unwrap();
        let text = ProtobufFormat::normalized(&a);
        assert!(!text.contains("//"));
        let b = ProtobufFormat::parse(&text, &[]).unwrap();
        assert_eq!(ProtobufFormat::normalized(&b), text);
        assert!(text.contains("map<string, string> labels = 3;"), "{text}");
    }

    #[test]
    fn normalized_keeps_options_and_proto2_features() {
        let src = r#"syntax = "proto2";
package p;
import "google/protobuf/descriptor.proto";
option java_package = "com.example";
extend google.protobuf.FieldOptions { optional string tag = 50001; }
message A {
  option deprecated = true;
  required int32 a = 1 [default = 7, (tag) = "x", json_name = "AA"];
  optional string s = 2 [default = "q\"z"];
  optional group G = 3 { optional int32 x = 1; }
  oneof k { int32 b = 4; string c = 5; }
  reserved 10 to 12, 20;
  reserved "old";
  extensions 100 to max;
  enum E { option allow_alias = true; X = 0; Y = 0; Z = 1 [deprecated = true]; reserved 5; }
}
service S { rpc M(A) returns (stream A) { option deprecated = true; } }
"#;
        let a = ProtobufFormat::parse(src, &[]).unwrap();
        let text = ProtobufFormat::normalized(&a);
        for needle in [
            "option java_package = \"com.example\";",
            "(p.tag) = \"x\"",
            "json_name = \"AA\"",
            "default = 7",
            "group G = 3",
            "reserved 10 to 12;\n  reserved 20;",
            "extensions 100 to max;",
            "rpc M (.p.A) returns (stream .p.A)",
            "X = 0;\n    Y = 0;",
        ] {
            assert!(text.contains(needle), "missing {needle} in\n{text}");
        }
        let b = ProtobufFormat::parse(&text, &[]).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(ProtobufFormat::normalized(&b), text);
    }

    #[test]
    fn decode_with_renders_json() {
        use prost::Message;
        let s = ProtobufFormat::parse(ORDER, &[]).unwrap();
        let desc = s.pool().get_message_by_name("acme.Customer").unwrap();
        let mut msg = DynamicMessage::new(desc);
        msg.set_field_by_name("name", prost_reflect::Value::String("Ada".into()));
        let bytes = msg.encode_to_vec();
        let json =
            covenant_engine::budget::unlimited(|m| decode_with(m, &s, "acme.Customer", &bytes))
                .unwrap();
        assert_eq!(json, serde_json::json!({"name": "Ada"}));
        assert!(
            covenant_engine::budget::unlimited(|m| decode_with(m, &s, "acme.Nope", &bytes))
                .is_err()
        );
        assert!(
            covenant_engine::budget::unlimited(|m| decode_with(
                m,
                &s,
                "acme.Customer",
                &[0xff, 0xff]
            ))
            .is_err()
        );
    }

    const NEST: &str = r#"syntax = "proto3";
package t;
message E {}
message L {
  repeated int32 xs = 1;
  L next = 2;
  repeated E es = 3;
}
"#;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    #[test]
    fn decoding_is_charged_to_the_installed_budget() {
        use covenant_engine::budget::{Budget, BudgetExceeded};
        let s = ProtobufFormat::parse(NEST, &[]).unwrap();
        // 100,000 empty nested messages: two bytes each.
        let payload: Vec<u8> = std::iter::repeat_n([0x1a, 0x00], 100_000)
            .flatten()
            .collect();
        let spent = Budget::new(None, Some(10_000)).run(|m| decode_with(m, &s, "t.L", &payload));
        assert_eq!(spent, Err(BudgetExceeded::Work(10_000)));
        // Packed integers, one byte each: charged as they are rendered.
        let mut packed = vec![0x0a];
        varint(200_000, &mut packed);
        packed.extend(std::iter::repeat_n(1u8, 200_000));
        let spent = Budget::new(None, Some(150_000)).run(|m| decode_with(m, &s, "t.L", &packed));
        assert_eq!(spent, Err(BudgetExceeded::Work(150_000)));
        let within = Budget::new(None, Some(1_000_000)).run(|m| decode_with(m, &s, "t.L", &packed));
        let json = within.expect("within budget").expect("decodes");
        assert_eq!(json["xs"].as_array().map(Vec::len), Some(200_000));
    }

    #[test]
    fn deep_or_overlong_payloads_are_decode_errors() {
        let s = ProtobufFormat::parse(NEST, &[]).unwrap();
        // 1,000 levels of `next`, innermost first.
        let mut payload = Vec::new();
        for _ in 0..1_000 {
            let mut outer = vec![0x12];
            varint(payload.len() as u64, &mut outer);
            outer.extend(payload);
            payload = outer;
        }
        let error = covenant_engine::budget::unlimited(|m| decode_with(m, &s, "t.L", &payload))
            .expect_err("too deep");
        assert!(error.contains("recursion"), "{error}");
        // A packed length past the payload.
        let mut packed = vec![0x0a];
        varint(20_000_000, &mut packed);
        packed.push(0);
        assert!(
            covenant_engine::budget::unlimited(|m| decode_with(m, &s, "t.L", &packed)).is_err()
        );
    }
}

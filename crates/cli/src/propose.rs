//! From a promotion finding to a schema change: the next version of a schema with each
//! promoted escape-hatch key as an optional field, named in the schema's style and typed from
//! what the profile saw.
//!
//! Written here rather than through a schema printer because each format needs only one
//! small, well-defined edit: Avro and JSON Schema are JSON (edited as values), and a `.proto`
//! file is edited as text so that its comments and layout survive.

use covenant_engine::budget::Metered;
use covenant_profile::{PathStats, Profile};
use covenant_schema::{ParsedSchema, SchemaType};
use serde_json::{Value, json};

/// Why no proposal could be written (bad input: exit 2 with the message).
use crate::check::InvalidInput as ProposeError;

/// The scalar type a promoted field gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Boolean,
    Long,
    Double,
    String,
}

impl Kind {
    /// The narrowest type every non-null value the profile saw fits: integers stay integers,
    /// integers mixed with fractions become doubles, anything else a string.
    pub fn of(stats: &PathStats) -> Kind {
        let seen: Vec<&str> = stats
            .types
            .keys()
            .map(String::as_str)
            .filter(|t| *t != "null")
            .collect();
        match seen.as_slice() {
            ["boolean"] => Kind::Boolean,
            ["integer"] => Kind::Long,
            ["number"] | ["integer", "number"] => Kind::Double,
            _ => Kind::String,
        }
    }

    fn avro(self) -> &'static str {
        match self {
            Kind::Boolean => "boolean",
            Kind::Long => "long",
            Kind::Double => "double",
            Kind::String => "string",
        }
    }

    fn json_schema(self) -> &'static str {
        match self {
            Kind::Boolean => "boolean",
            Kind::Long => "integer",
            Kind::Double => "number",
            Kind::String => "string",
        }
    }

    fn proto(self) -> &'static str {
        match self {
            Kind::Boolean => "bool",
            Kind::Long => "int64",
            Kind::Double => "double",
            Kind::String => "string",
        }
    }
}

/// One field to add: its name in the schema's style, where the data holds it now, its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Promotion {
    pub name: String,
    pub source: String,
    pub kind: Kind,
}

/// How a schema spells its field names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Snake,
    Camel,
}

impl Style {
    /// Snake case unless the names are camel case (an inner capital, no underscore);
    /// Protobuf's own style guide is snake case, so it is the default too.
    pub fn of<'a>(names: impl IntoIterator<Item = &'a str>) -> Style {
        let (mut snake, mut camel) = (0, 0);
        for name in names {
            if name.contains('_') {
                snake += 1;
            } else if name.chars().skip(1).any(char::is_uppercase) {
                camel += 1;
            }
        }
        if camel > snake {
            Style::Camel
        } else {
            Style::Snake
        }
    }

    /// `key` (`marginTradingAllowed`, `margin-trading allowed`, ...) in this style.
    pub fn apply(self, key: &str) -> String {
        let words = words(key);
        match self {
            Style::Snake => words.join("_"),
            Style::Camel => words
                .iter()
                .enumerate()
                .map(|(i, w)| if i == 0 { w.clone() } else { capitalized(w) })
                .collect(),
        }
    }
}

/// Lower-case words of a key: split at non-alphanumerics and before an upper-case letter that
/// follows a lower-case letter or digit.
fn words(key: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in key.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        out.push(current);
    }
    if out
        .first()
        .is_some_and(|w| w.starts_with(|c: char| c.is_ascii_digit()))
    {
        out.insert(0, "f".into());
    }
    out
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The last segment of a profile path, unescaped (`/vendor_data/a~1b` is key `a/b`).
fn key_of(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The promotions for `paths` (promotion findings' paths) of `profile`, named in `style`.
pub fn promotions(profile: &Profile, paths: &[String], style: Style) -> Vec<Promotion> {
    let mut out: Vec<Promotion> = Vec::new();
    for path in paths {
        let Some(stats) = profile.paths.get(path) else {
            continue;
        };
        let key = key_of(path).replace("~1", "/").replace("~0", "~");
        let name = style.apply(&key);
        if name.is_empty() || out.iter().any(|p| p.name == name) {
            continue;
        }
        out.push(Promotion {
            name,
            source: path.clone(),
            kind: Kind::of(stats),
        });
    }
    out
}

/// The names of the fields of the schema's record (Avro), root properties (JSON Schema) or
/// first message (Protobuf), under the budget `m` proves installed.
pub fn field_names(m: Metered<'_>, schema: &ParsedSchema) -> Vec<String> {
    let tree = covenant_policy::field_tree(m, schema);
    covenant_profile::declared_fields(&tree)
        .into_iter()
        .filter(|f| f.path.matches('/').count() == 1 && !f.path.ends_with("[]"))
        .map(|f| f.path.trim_start_matches('/').to_string())
        .collect()
}

/// The schema text with `promotions` added as optional fields; fields the schema already
/// has are left alone. Returns the text and the promotions actually added.
pub fn propose(
    m: Metered<'_>,
    schema: &ParsedSchema,
    text: &str,
    promotions: &[Promotion],
) -> Result<(String, Vec<Promotion>), ProposeError> {
    let existing = field_names(m, schema);
    let new: Vec<Promotion> = promotions
        .iter()
        .filter(|p| !existing.contains(&p.name))
        .cloned()
        .collect();
    let text = match schema.schema_type() {
        SchemaType::Avro => avro(text, &new)?,
        SchemaType::Json => json_schema(text, &new)?,
        SchemaType::Protobuf => protobuf(schema, text, &new)?,
        SchemaType::Iceberg => iceberg(schema, text, &new)?,
    };
    Ok((text, new))
}

fn parse_json(text: &str) -> Result<Value, ProposeError> {
    serde_json::from_str(text).map_err(|e| ProposeError(format!("the schema is not JSON: {e}")))
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// Avro: a union with `null` first and a `null` default, so old data reads with it.
fn avro(text: &str, new: &[Promotion]) -> Result<String, ProposeError> {
    let mut schema = parse_json(text)?;
    let Some(fields) = schema.get_mut("fields").and_then(Value::as_array_mut) else {
        return Err(ProposeError(
            "the Avro schema is not a record; promotions go into a record's fields".into(),
        ));
    };
    for p in new {
        fields.push(json!({
            "name": p.name,
            "type": ["null", p.kind.avro()],
            "default": null,
            "doc": format!("Promoted from {}.", p.source),
        }));
    }
    Ok(pretty(&schema))
}

/// Iceberg: optional top-level columns with ids after the highest the schema (or the table's
/// `last-column-id`) has used, so no dropped column's id comes back.
fn iceberg(schema: &ParsedSchema, text: &str, new: &[Promotion]) -> Result<String, ProposeError> {
    let ParsedSchema::Iceberg(table) = schema else {
        return Err(ProposeError("not an Iceberg schema".into()));
    };
    let mut value = parse_json(text)?;
    if value.get("format-version").is_some() {
        return Err(ProposeError(
            "the Iceberg text is table metadata; propose from the schema object itself".into(),
        ));
    }
    let highest = covenant_iceberg::index::Index::new(table)
        .columns
        .keys()
        .copied()
        .chain(table.last_column_id)
        .max()
        .unwrap_or(0);
    let Some(fields) = value.get_mut("fields").and_then(Value::as_array_mut) else {
        return Err(ProposeError("the Iceberg schema has no fields list".into()));
    };
    for (p, id) in new.iter().zip(highest + 1..) {
        fields.push(json!({
            "id": id,
            "name": p.name,
            "required": false,
            // Iceberg spells these four primitives as Avro does.
            "type": p.kind.avro(),
            "doc": format!("Promoted from {}.", p.source),
        }));
    }
    Ok(pretty(&value))
}

/// JSON Schema: a property that is not `required`.
fn json_schema(text: &str, new: &[Promotion]) -> Result<String, ProposeError> {
    let mut schema = parse_json(text)?;
    let Some(root) = schema.as_object_mut() else {
        return Err(ProposeError("the JSON Schema is not an object".into()));
    };
    let properties = root.entry("properties").or_insert_with(|| json!({}));
    let Some(properties) = properties.as_object_mut() else {
        return Err(ProposeError(
            "the JSON Schema's properties is not an object".into(),
        ));
    };
    for p in new {
        properties.insert(
            p.name.clone(),
            json!({
                "type": p.kind.json_schema(),
                "description": format!("Promoted from {}.", p.source),
            }),
        );
    }
    Ok(pretty(&schema))
}

/// Protobuf: `optional` fields at the end of the first message, numbered from the next
/// number after the highest in use that is neither reserved nor in 19000-19999.
fn protobuf(schema: &ParsedSchema, text: &str, new: &[Promotion]) -> Result<String, ProposeError> {
    let ParsedSchema::Protobuf(proto) = schema else {
        return Err(ProposeError("not a Protobuf schema".into()));
    };
    let first = proto
        .message_names()
        .into_iter()
        .next()
        .and_then(|name| proto.pool().get_message_by_name(&name))
        .ok_or_else(|| ProposeError("the .proto file declares no message".into()))?;
    let reserved: Vec<(u32, u32)> = first
        .descriptor_proto()
        .reserved_range
        .iter()
        .map(|r| {
            let start = u32::try_from(r.start()).unwrap_or(0);
            (start, u32::try_from(r.end()).unwrap_or(start + 1))
        })
        .collect();
    let free = |n: u32| {
        !(19000..20000).contains(&n) && !reserved.iter().any(|(s, e)| (*s..*e).contains(&n))
    };
    let mut next = first.fields().map(|f| f.number()).max().unwrap_or(0) + 1;
    let close = message_end(text, first.name())
        .ok_or_else(|| ProposeError(format!("message {} not found in the text", first.name())))?;
    let mut lines = String::new();
    for p in new {
        while !free(next) {
            next += 1;
        }
        lines.push_str(&format!(
            "  // Promoted from {}.\n  optional {} {} = {next};\n",
            p.source,
            p.kind.proto(),
            p.name
        ));
        next += 1;
    }
    let before = text[..close].trim_end_matches([' ', '\t']);
    let newline = if before.ends_with('\n') { "" } else { "\n" };
    Ok(format!("{before}{newline}{lines}{}", &text[close..]))
}

/// The byte offset of the `}` closing the top-level `message {name}`, skipping comments and
/// strings.
fn message_end(text: &str, name: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut target_depth = None;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                i = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = text[i + 2..].find("*/").map_or(bytes.len(), |n| i + n + 4);
                continue;
            }
            b'"' | b'\'' => {
                let quote = bytes[i];
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'{' => {
                if depth == 0 && target_depth.is_none() && declares(&text[..i], name) {
                    target_depth = Some(1);
                }
                depth += 1;
            }
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 && target_depth.is_some() {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Whether the text before a `{` ends with `message {name}`.
fn declares(before: &str, name: &str) -> bool {
    let mut tokens = before.split_whitespace().rev();
    tokens.next() == Some(name) && tokens.next() == Some("message")
}

#[cfg(test)]
mod tests {
    use super::*;
    use covenant_profile::{ProfileOptions, Profiler};

    fn profile() -> Profile {
        let mut p = Profiler::new(ProfileOptions {
            escape_hatches: vec!["vendor_data".into()],
            ..ProfileOptions::default()
        });
        for i in 0..10 {
            p.observe(&json!({"vendor_data": {
                "marginTradingAllowed": i % 2 == 0,
                "tickSize": if i == 0 { json!(1) } else { json!(0.5) },
                "lotSteps": i,
                "note": if i == 0 { json!("x") } else { json!(3) },
            }}));
        }
        p.finish()
    }

    fn paths(keys: &[&str]) -> Vec<String> {
        keys.iter().map(|k| format!("/vendor_data/{k}")).collect()
    }

    #[test]
    fn names_follow_the_schema_style() {
        assert_eq!(Style::of(["instrument_id", "symbol"]), Style::Snake);
        assert_eq!(Style::of(["instrumentId", "symbol"]), Style::Camel);
        assert_eq!(Style::of(["symbol"]), Style::Snake);
        assert_eq!(
            Style::Snake.apply("marginTradingAllowed"),
            "margin_trading_allowed"
        );
        assert_eq!(
            Style::Camel.apply("margin_trading_allowed"),
            "marginTradingAllowed"
        );
        assert_eq!(Style::Snake.apply("HTTPStatus code"), "httpstatus_code");
        assert_eq!(Style::Snake.apply("24hVolume"), "f_24h_volume");
    }

    #[test]
    fn types_come_from_what_the_profile_saw() {
        let p = profile();
        let found = promotions(
            &p,
            &paths(&["marginTradingAllowed", "tickSize", "lotSteps", "note"]),
            Style::Snake,
        );
        let kinds: Vec<(&str, Kind)> = found.iter().map(|p| (p.name.as_str(), p.kind)).collect();
        assert_eq!(
            kinds,
            [
                ("margin_trading_allowed", Kind::Boolean),
                ("tick_size", Kind::Double),
                ("lot_steps", Kind::Long),
                ("note", Kind::String),
            ]
        );
    }

    fn parse(t: SchemaType, text: &str) -> ParsedSchema {
        ParsedSchema::parse(t, text, &[]).expect("parses")
    }

    #[test]
    fn iceberg_gets_optional_columns_with_ids_past_every_used_one() {
        let text = r#"{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"symbol","required":true,"type":"string"},{"id":7,"name":"pts","required":false,"type":{"type":"list","element-id":9,"element-required":false,"element":"double"}}]}"#;
        let schema = parse(SchemaType::Iceberg, text);
        let wanted = promotions(
            &profile(),
            &paths(&["marginTradingAllowed", "lotSteps"]),
            Style::Snake,
        );
        let (out, added) =
            covenant_engine::budget::unlimited(|m| propose(m, &schema, text, &wanted))
                .expect("proposal");
        assert_eq!(added.len(), 2);
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["fields"][2]["id"], json!(10), "after the element id 9");
        assert_eq!(v["fields"][2]["name"], "margin_trading_allowed");
        assert_eq!(v["fields"][2]["required"], json!(false));
        assert_eq!(v["fields"][3]["type"], json!("long"));
        let next = parse(SchemaType::Iceberg, &out);
        let report = covenant_engine::budget::unlimited(|m| {
            covenant_schema::check(
                m,
                covenant_engine::Level::Backward,
                &next,
                &[(1, &schema)],
                &covenant_engine::CheckOptions::default(),
            )
        });
        assert!(report.compatible, "{report:?}");
    }

    #[test]
    fn avro_gets_a_nullable_field_with_a_null_default_once() {
        let text = r#"{"type":"record","name":"I","fields":[{"name":"symbol","type":"string"},{"name":"tick_size","type":"double"}]}"#;
        let schema = parse(SchemaType::Avro, text);
        let wanted = promotions(
            &profile(),
            &paths(&["marginTradingAllowed", "tickSize"]),
            Style::of(
                covenant_engine::budget::unlimited(|m| field_names(m, &schema))
                    .iter()
                    .map(String::as_str),
            ),
        );
        let (out, added) =
            covenant_engine::budget::unlimited(|m| propose(m, &schema, text, &wanted))
                .expect("proposal");
        assert_eq!(added.len(), 1, "tick_size exists already");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["fields"][2]["name"], "margin_trading_allowed");
        assert_eq!(v["fields"][2]["type"], json!(["null", "boolean"]));
        assert_eq!(v["fields"][2]["default"], Value::Null);
        assert!(v["fields"][2].as_object().unwrap().contains_key("default"));
        parse(SchemaType::Avro, &out);
    }

    #[test]
    fn json_schema_gets_an_optional_property() {
        let text =
            r#"{"type":"object","properties":{"symbol":{"type":"string"}},"required":["symbol"]}"#;
        let schema = parse(SchemaType::Json, text);
        let wanted = promotions(&profile(), &paths(&["lotSteps"]), Style::Snake);
        let (out, _) = covenant_engine::budget::unlimited(|m| propose(m, &schema, text, &wanted))
            .expect("proposal");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["properties"]["lot_steps"]["type"], "integer");
        assert_eq!(v["required"], json!(["symbol"]));
    }

    #[test]
    fn protobuf_numbers_skip_reserved_ones_and_keep_the_text() {
        let text = "syntax = \"proto3\";\n// The instrument { not a brace }\nmessage Instrument {\n  string symbol = 1;\n  reserved 3, 4 to 5;\n  int64 id = 2; // id }\n  message Inner { int32 x = 1; }\n}\nmessage Other { int32 y = 9; }\n";
        let schema = parse(SchemaType::Protobuf, text);
        let wanted = promotions(
            &profile(),
            &paths(&["marginTradingAllowed", "note"]),
            Style::Snake,
        );
        let (out, _) = covenant_engine::budget::unlimited(|m| propose(m, &schema, text, &wanted))
            .expect("proposal");
        assert!(
            out.contains("optional bool margin_trading_allowed = 6;"),
            "{out}"
        );
        assert!(out.contains("optional string note = 7;"), "{out}");
        assert!(out.contains("// The instrument { not a brace }"));
        let inner = out.find("message Inner").unwrap();
        let added = out.find("margin_trading_allowed").unwrap();
        let other = out.find("message Other").unwrap();
        assert!(inner < added && added < other, "{out}");
        parse(SchemaType::Protobuf, &out);
    }
}

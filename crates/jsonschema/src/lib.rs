//! JSON Schema: parsing, validation and compatibility rules.
//!
//! Dialects draft-04, -06, -07, 2019-09 and 2020-12 are chosen by `$schema` (draft-07 when it
//! is absent, as Confluent does). `$ref`s resolve inside the document and to registered
//! references only; nothing is fetched over the network. Compatibility follows Confluent's
//! `SchemaDiff`: every difference becomes a finding named after Confluent's difference type,
//! an error when the active policy does not list it as compatible, information otherwise.

mod diff;
mod fields;
pub use fields::field_tree;
mod model;

/// Where a finding's path (a JSON pointer such as `#/properties/a`) is in the schema's text,
/// or its nearest written ancestor; `None` when the text is not JSON.
pub fn locate(text: &str, path: &str) -> Option<covenant_engine::Position> {
    covenant_engine::JsonText::parse(text).locate_pointer(path)
}
pub mod rules;

use covenant_engine::budget::Metered;
use covenant_engine::{
    CheckOptions, Finding, Format, Limits, Reference, RuleSpec, SchemaError, SchemaErrorKind,
};
use model::{Dialect, Loader, Model};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// A parsed JSON Schema with its references.
#[derive(Debug, Clone)]
pub struct JsonSchema {
    text: String,
    value: Value,
    dialect: Dialect,
    declared: bool,
    model: Arc<Model>,
    references: Vec<Reference>,
    /// Built on first use and kept: replaying many samples must not rebuild it.
    validator: Arc<OnceLock<Result<jsonschema::Validator, String>>>,
    /// No `$ref` and at most [`SHALLOW_DEPTH`] levels of nesting: a comparison with another
    /// shallow schema recurses little and can run on the caller's stack.
    shallow: bool,
}

/// Nesting that a comparison walks on any thread's stack (a few frames of a few hundred bytes
/// per level); deeper or recursive schemas are compared on a thread with a large stack.
const SHALLOW_DEPTH: usize = 32;

impl JsonSchema {
    /// The dialect in effect, e.g. `2020-12`.
    pub fn dialect(&self) -> &'static str {
        self.dialect.name()
    }

    /// The parsed schema document.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The text as registered.
    pub fn text(&self) -> &str {
        &self.text
    }

    fn validator(&self) -> &Result<jsonschema::Validator, String> {
        self.validator
            .get_or_init(|| build_validator(&self.value, self.dialect, &self.references))
    }
}

/// One reason a document does not match a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationError {
    pub instance_path: String,
    pub schema_path: String,
    pub message: String,
}

/// Registered references served from memory; any other URI is an error, never a fetch.
struct MemoryRetriever(HashMap<String, Value>);

impl jsonschema::Retrieve for MemoryRetriever {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let text = uri.as_str();
        if let Some(v) = self.0.get(text) {
            return Ok(v.clone());
        }
        let stripped = text.trim_start_matches("json-schema:///");
        if let Some(v) = self.0.get(stripped) {
            return Ok(v.clone());
        }
        self.0
            .iter()
            .find(|(name, _)| text.ends_with(&format!("/{name}")))
            .map(|(_, v)| v.clone())
            .ok_or_else(|| format!("'{text}' is not a registered reference").into())
    }
}

fn draft_of(dialect: Dialect) -> jsonschema::Draft {
    match dialect {
        Dialect::Draft4 => jsonschema::Draft::Draft4,
        Dialect::Draft6 => jsonschema::Draft::Draft6,
        Dialect::Draft7 => jsonschema::Draft::Draft7,
        Dialect::Draft201909 => jsonschema::Draft::Draft201909,
        Dialect::Draft202012 => jsonschema::Draft::Draft202012,
    }
}

fn build_validator(
    value: &Value,
    dialect: Dialect,
    references: &[Reference],
) -> Result<jsonschema::Validator, String> {
    let mut map = HashMap::new();
    for reference in references {
        if let Ok(v) = serde_json::from_str::<Value>(&reference.schema) {
            map.insert(reference.name.clone(), v.clone());
            map.insert(format!("json-schema:///{}", reference.name), v);
        }
    }
    jsonschema::options()
        .with_draft(draft_of(dialect))
        .with_retriever(MemoryRetriever(map))
        .build(value)
        .map_err(|e| e.to_string())
}

/// Every validation error of `document` against `schema` (empty when valid).
pub fn validate(schema: &JsonSchema, document: &serde_json::Value) -> Vec<ValidationError> {
    match schema.validator() {
        Ok(validator) => validator
            .iter_errors(document)
            .map(|e| ValidationError {
                instance_path: e.instance_path().to_string(),
                schema_path: e.schema_path().to_string(),
                message: e.to_string(),
            })
            .collect(),
        Err(message) => vec![ValidationError {
            instance_path: String::new(),
            schema_path: String::new(),
            message: format!("The schema cannot validate documents: {message}"),
        }],
    }
}

/// The first validation error of `document` against `schema` and how many more there are,
/// or `None` when it is valid. Every error is charged to the budget `_m` proves installed, and
/// counting stops when that is spent: a document can hold as many errors as values.
pub fn first_error(
    _m: Metered<'_>,
    schema: &JsonSchema,
    document: &serde_json::Value,
) -> Option<(ValidationError, usize)> {
    let validator = match schema.validator() {
        Ok(validator) => validator,
        Err(message) => {
            let error = ValidationError {
                instance_path: String::new(),
                schema_path: String::new(),
                message: format!("The schema cannot validate documents: {message}"),
            };
            return Some((error, 0));
        }
    };
    let mut errors = validator.iter_errors(document);
    let first = errors.next()?;
    let first = ValidationError {
        instance_path: first.instance_path().to_string(),
        schema_path: first.schema_path().to_string(),
        message: first.to_string(),
    };
    let mut others = 0;
    for _ in errors {
        others += 1;
        if covenant_engine::budget::charge(1) {
            break;
        }
    }
    Some((first, others))
}

/// Strips the leading `#` so meta-schema error locations read as our JSON pointers.
fn pointer(location: &str) -> String {
    if location.is_empty() {
        "#".to_string()
    } else {
        format!("#{location}")
    }
}

pub struct JsonSchemaFormat;

impl Format for JsonSchemaFormat {
    type Schema = JsonSchema;
    const NAME: &'static str = "JSON";

    fn parse_with(
        text: &str,
        references: &[Reference],
        limits: &Limits,
    ) -> Result<JsonSchema, SchemaError> {
        let value: Value = serde_json::from_str(text).map_err(|e| {
            SchemaError::new(
                SchemaErrorKind::Syntax,
                "#",
                format!("The schema is not valid JSON: {e}"),
            )
        })?;
        let (dialect, declared) = match &value {
            Value::Object(map) => match map.get("$schema") {
                None => (Dialect::Draft7, false),
                Some(Value::String(uri)) => match Dialect::from_uri(uri) {
                    Some(d) => (d, true),
                    None => {
                        return Err(SchemaError::new(
                            SchemaErrorKind::Invalid,
                            "#/$schema",
                            format!(
                                "'{uri}' is not a JSON Schema dialect Covenant knows (draft-04, -06, -07, 2019-09, 2020-12)."
                            ),
                        ));
                    }
                },
                Some(_) => {
                    return Err(SchemaError::new(
                        SchemaErrorKind::Invalid,
                        "#/$schema",
                        "'$schema' must be a string.",
                    ));
                }
            },
            Value::Bool(_) => (Dialect::Draft7, false),
            _ => {
                return Err(SchemaError::new(
                    SchemaErrorKind::Invalid,
                    "#",
                    "A JSON Schema must be an object or a boolean.",
                ));
            }
        };
        meta_validate(&value, dialect)?;
        let model = Loader::new(value.clone(), dialect, references, limits)?.load_root()?;
        let shallow = references.is_empty()
            && covenant_engine::bracket_depth(text, SHALLOW_DEPTH + 1).0 <= SHALLOW_DEPTH
            && !model
                .nodes
                .iter()
                .any(|n| matches!(n.kind, model::Kind::Ref(_)));
        Ok(JsonSchema {
            text: text.to_string(),
            value,
            dialect,
            declared,
            model: Arc::new(model),
            references: references.to_vec(),
            validator: Arc::new(OnceLock::new()),
            shallow,
        })
    }

    fn normalized(schema: &JsonSchema) -> String {
        model::canonical(&schema.value)
    }

    fn check(
        m: Metered<'_>,
        reader: &JsonSchema,
        writer: &JsonSchema,
        options: &CheckOptions,
    ) -> Vec<Finding> {
        let policy = options.json_policy;
        let texts_decide = reader.dialect == writer.dialect
            && reader.references.is_empty()
            && writer.references.is_empty();
        let diffs = if reader.shallow && writer.shallow {
            // Starting a thread with a large stack cost more than comparing two small schemas.
            diff::compare(&writer.model, &reader.model, policy, texts_decide)
        } else {
            compare_on_large_stack(m, reader, writer, policy, texts_decide)
        };
        diffs
            .into_iter()
            .map(|d| {
                Finding::new(&d.rule.spec, d.path, d.message).with_severity(d.rule.severity(policy))
            })
            .collect()
    }

    fn lint(schema: &JsonSchema, _options: &CheckOptions) -> Vec<Finding> {
        if schema.declared {
            return Vec::new();
        }
        vec![Finding::new(
            &rules::dialect_undeclared::DIALECT_UNDECLARED,
            "#/$schema",
            "The schema does not declare '$schema'; it is read as draft-07.",
        )]
    }
}

/// Keyword-type errors (`{"type": 12}`, `{"required": "x"}`) caught by the dialect's
/// meta-schema, reported at the offending keyword.
fn meta_validate(value: &Value, dialect: Dialect) -> Result<(), SchemaError> {
    let mut with_schema = value.clone();
    if let Value::Object(map) = &mut with_schema {
        let uri = match dialect {
            Dialect::Draft4 => "http://json-schema.org/draft-04/schema#",
            Dialect::Draft6 => "http://json-schema.org/draft-06/schema#",
            Dialect::Draft7 => "http://json-schema.org/draft-07/schema#",
            Dialect::Draft201909 => "https://json-schema.org/draft/2019-09/schema",
            Dialect::Draft202012 => "https://json-schema.org/draft/2020-12/schema",
        };
        map.insert("$schema".into(), Value::String(uri.into()));
    } else {
        return Ok(());
    }
    match jsonschema::meta::validate(&with_schema) {
        Ok(()) => Ok(()),
        Err(e) => Err(SchemaError::new(
            SchemaErrorKind::Invalid,
            pointer(&e.instance_path().to_string()),
            format!("The schema breaks the {} meta-schema: {e}", dialect.name()),
        )),
    }
}

/// Every JSON Schema rule, in catalog order.
pub fn rules() -> &'static [&'static RuleSpec] {
    rules::rules()
}

/// Compares on a thread of its own with a large stack: deeply nested or mutually recursive
/// schemas recurse deeply, and the caller's thread may be small. The walk charges the caller's
/// budget from that thread.
fn compare_on_large_stack(
    m: Metered<'_>,
    reader: &JsonSchema,
    writer: &JsonSchema,
    policy: covenant_engine::JsonPolicy,
    texts_decide: bool,
) -> Vec<diff::Diff> {
    let budget = covenant_engine::budget::inherit(m);
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(256 * 1024 * 1024)
            .spawn_scoped(scope, || {
                budget.run(|_| diff::compare(&writer.model, &reader.model, policy, texts_decide))
            })
            .ok()
            .and_then(|handle| handle.join().ok())
    })
    .unwrap_or_else(|| diff::compare(&writer.model, &reader.model, policy, texts_decide))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> JsonSchema {
        JsonSchemaFormat::parse(text, &[]).expect("schema parses")
    }

    #[test]
    fn only_references_and_deep_nesting_need_the_large_stack() {
        let nested = |levels: usize| {
            let mut text = String::from(r#"{"type": "string"}"#);
            for _ in 0..levels {
                text = format!(r#"{{"type": "object", "properties": {{"a": {text}}}}}"#);
            }
            text
        };
        // Typed properties, enums and combinators fold their parts into one node.
        let plain = parse(
            r#"{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
            "properties": {"a": {"type": "string", "enum": ["x"]},
            "b": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}"#,
        );
        assert!(plain.shallow);
        assert!(parse(&nested(SHALLOW_DEPTH / 2 - 1)).shallow);
        assert!(!parse(&nested(SHALLOW_DEPTH)).shallow);
        let referring = parse(
            r##"{"properties": {"a": {"$ref": "#/definitions/n"}},
            "definitions": {"n": {"type": "integer"}}}"##,
        );
        assert!(!referring.shallow);
    }

    #[test]
    fn unchanged_subschemas_skipped_by_text_give_the_same_differences() {
        let old = parse(
            r##"{"type": "object", "properties": {"a": {"type": "string", "maxLength": 5},
            "b": {"$ref": "#/definitions/n"}, "c": {"type": "integer"}},
            "definitions": {"n": {"type": "integer"}}, "additionalProperties": false}"##,
        );
        let new = parse(
            r##"{"type": "object", "properties": {"a": {"type": "string", "maxLength": 5},
            "b": {"$ref": "#/definitions/n"}, "c": {"type": "integer"}, "d": {"type": "string"}},
            "definitions": {"n": {"type": "string"}}, "additionalProperties": false}"##,
        );
        let policy = covenant_engine::JsonPolicy::default();
        let summary = |diffs: Vec<diff::Diff>| -> Vec<(String, String, String)> {
            diffs
                .into_iter()
                .map(|d| (d.rule.spec.id.to_string(), d.path, d.message))
                .collect()
        };
        let walked = summary(diff::compare(&old.model, &new.model, policy, false));
        let skipped = summary(diff::compare(&old.model, &new.model, policy, true));
        assert_eq!(walked, skipped);
        // The referenced type changed behind an unchanged `$ref` text: still found.
        assert!(
            walked
                .iter()
                .any(|(_, path, _)| path.starts_with("#/properties/b")),
            "{walked:?}"
        );
        assert!(
            walked.iter().any(|(_, path, _)| path == "#/properties/d"),
            "{walked:?}"
        );
    }

    #[test]
    fn invalid_schemas_name_the_keyword() {
        for (text, path) in [
            (r#"{"type": 12}"#, "#/type"),
            (r#"{"required": "x"}"#, "#/required"),
            (r##"{"$ref": "#/definitions/missing"}"##, "#/$ref"),
            (r#"{"$schema": "https://example.com/custom"}"#, "#/$schema"),
        ] {
            let err = JsonSchemaFormat::parse(text, &[]).expect_err(text);
            assert_eq!(err.path, path, "{text}: {err}");
        }
        let err = JsonSchemaFormat::parse("{", &[]).expect_err("not json");
        assert_eq!(err.kind, SchemaErrorKind::Syntax);
    }

    #[test]
    fn normalized_ignores_key_order_and_whitespace() {
        let a = parse(r#"{"type":"object", "properties": {"a": {"type": "string"}}}"#);
        let b = parse(r#"{"properties":{"a":{"type":"string"}},"type":"object"}"#);
        assert_eq!(
            JsonSchemaFormat::normalized(&a),
            JsonSchemaFormat::normalized(&b)
        );
        assert!(!JsonSchemaFormat::normalized(&a).contains(' '));
    }

    #[test]
    fn refs_resolve_locally_and_to_references() {
        let local = parse(
            r##"{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{"n":{"$anchor":"num","type":"integer"}},
                "properties":{"a":{"$ref":"#/$defs/n"},"b":{"$ref":"#num"}}}"##,
        );
        assert!(validate(&local, &serde_json::json!({"a": 1, "b": 2})).is_empty());
        let errors = validate(&local, &serde_json::json!({"a": "x", "b": 2}));
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].instance_path, "/a");

        let address = Reference {
            name: "address.json".into(),
            subject: "address".into(),
            version: 1,
            schema:
                r#"{"type":"object","properties":{"zip":{"type":"string"}},"required":["zip"]}"#
                    .into(),
        };
        let order = JsonSchemaFormat::parse(
            r#"{"type":"object","properties":{"ship_to":{"$ref":"address.json"}}}"#,
            std::slice::from_ref(&address),
        )
        .expect("parses with reference");
        assert!(validate(&order, &serde_json::json!({"ship_to": {"zip": "1"}})).is_empty());
        let errors = validate(&order, &serde_json::json!({"ship_to": {}}));
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].instance_path, "/ship_to");
        assert!(
            JsonSchemaFormat::parse(r#"{"properties":{"ship_to":{"$ref":"address.json"}}}"#, &[])
                .is_err()
        );
    }

    #[test]
    fn validate_reports_every_error() {
        let s = parse(
            r#"{"type":"object","properties":{"a":{"type":"string"},"b":{"maximum":3}},"required":["c"]}"#,
        );
        let errors = validate(&s, &serde_json::json!({"a": 1, "b": 4}));
        assert_eq!(errors.len(), 3, "{errors:?}");
    }

    #[test]
    fn recursive_schemas_terminate() {
        let text = r##"{"definitions":{"node":{"type":"object","properties":{"next":{"$ref":"#/definitions/node"},"v":{"type":"string"}}}},"$ref":"#/definitions/node"}"##;
        let changed = r##"{"definitions":{"node":{"type":"object","properties":{"next":{"$ref":"#/definitions/node"},"v":{"type":"integer"}}}},"$ref":"#/definitions/node"}"##;
        let (a, b) = (parse(text), parse(changed));
        assert!(
            covenant_engine::budget::unlimited(|m| JsonSchemaFormat::check(
                m,
                &a,
                &a,
                &CheckOptions::default()
            ))
            .is_empty()
        );
        let findings = covenant_engine::budget::unlimited(|m| {
            JsonSchemaFormat::check(m, &b, &a, &CheckOptions::default())
        });
        assert!(
            findings
                .iter()
                .any(|f| f.rule == "TYPE_CHANGED" && f.path == "#/properties/v"),
            "{findings:?}"
        );
    }

    #[test]
    fn policy_decides_severity() {
        let w = parse(r#"{"type":"object","properties":{"a":{"type":"string"}}}"#);
        let r = parse(
            r#"{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}"#,
        );
        let strict = covenant_engine::budget::unlimited(|m| {
            JsonSchemaFormat::check(m, &r, &w, &CheckOptions::default())
        });
        assert_eq!(
            strict[0].rule,
            "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
        );
        assert_eq!(strict[0].severity, covenant_engine::Severity::Error);
        let lenient = CheckOptions {
            json_policy: covenant_engine::JsonPolicy::Lenient,
            ..CheckOptions::default()
        };
        let relaxed =
            covenant_engine::budget::unlimited(|m| JsonSchemaFormat::check(m, &r, &w, &lenient));
        assert_eq!(relaxed[0].severity, covenant_engine::Severity::Info);
    }
}

//! Where a finding's path is in the schema text, as a line and column.
//!
//! Findings carry readable paths (`/fields/amount`, `#/properties/a`, `/acme.Order/fields/id`)
//! because they must mean the same thing whatever the text's layout. Code-scanning tools and
//! editors need a line to annotate, so each format maps its paths back to its text: Avro and
//! JSON Schema through [`JsonText`] (a JSON pointer walk over the text with byte ranges kept),
//! Protobuf through the parser's source info.

use jsonc_parser::ast::{ObjectProp, Value};

/// A value of a [`JsonText`] with its byte range, for formats that walk the text themselves.
pub use jsonc_parser::ast::Value as JsonNode;
use jsonc_parser::common::Ranged;
use jsonc_parser::{CollectOptions, ParseOptions, parse_to_ast};

/// A place in a text: 1-based line and column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

impl Position {
    /// The position of the byte `offset` of `text`.
    pub fn of_offset(text: &str, offset: usize) -> Position {
        let before = &text[..offset.min(text.len())];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Position {
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
        }
    }
}

/// One step of a walk into a JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// An object's member.
    Key(String),
    /// An array's element.
    Index(usize),
    /// The element of an array whose member `key` is the string `value` (an Avro field by
    /// name).
    Named { key: String, value: String },
}

/// A JSON schema text parsed once with the byte range of every value.
pub struct JsonText<'a> {
    text: &'a str,
    root: Option<Value<'a>>,
}

impl<'a> JsonText<'a> {
    /// Parses `text`; a text that is not JSON locates nothing.
    pub fn parse(text: &'a str) -> JsonText<'a> {
        let root = parse_to_ast(text, &CollectOptions::default(), &ParseOptions::default())
            .ok()
            .and_then(|r| r.value);
        JsonText { text, root }
    }

    /// The root value, for formats that walk the tree themselves.
    pub fn root(&self) -> Option<&Value<'a>> {
        self.root.as_ref()
    }

    /// The position of `value`.
    pub fn position(&self, value: &Value<'_>) -> Position {
        Position::of_offset(self.text, value.range().start)
    }

    /// The position of the deepest value the walk reaches: a step that does not resolve
    /// stops the walk where it is, so a path into something the text leaves implicit still
    /// points at its nearest written ancestor.
    pub fn locate(&self, steps: &[Step]) -> Option<Position> {
        let mut current = self.root.as_ref()?;
        for step in steps {
            match step_into(current, step) {
                Some(next) => current = next,
                None => break,
            }
        }
        Some(self.position(current))
    }

    /// [`JsonText::locate`] for a JSON pointer (`/properties/a`, `#/properties/a`).
    pub fn locate_pointer(&self, pointer: &str) -> Option<Position> {
        let steps: Vec<Step> = pointer
            .trim_start_matches('#')
            .split('/')
            .skip(1)
            .map(|raw| {
                let key = raw.replace("~1", "/").replace("~0", "~");
                match key.parse::<usize>() {
                    Ok(i) => Step::Index(i),
                    Err(_) => Step::Key(key),
                }
            })
            .collect();
        self.locate(&steps)
    }
}

fn member<'v, 'a>(value: &'v Value<'a>, key: &str) -> Option<&'v Value<'a>> {
    match value {
        Value::Object(object) => object
            .properties
            .iter()
            .find(|p: &&ObjectProp<'a>| p.name.as_str() == key)
            .map(|p| &p.value),
        _ => None,
    }
}

/// One step from `value`; an index into an object falls back to the member of that name,
/// since JSON pointers do not tell `"0"` the key from `0` the index.
pub fn step_into<'v, 'a>(value: &'v Value<'a>, step: &Step) -> Option<&'v Value<'a>> {
    match (step, value) {
        (Step::Key(key), _) => member(value, key),
        (Step::Index(i), Value::Array(array)) => array.elements.get(*i),
        (Step::Index(i), Value::Object(_)) => member(value, &i.to_string()),
        (Step::Named { key, value: wanted }, Value::Array(array)) => {
            array.elements.iter().find(|e| {
                member(e, key)
                    .and_then(Value::as_string_lit)
                    .is_some_and(|s| s.value == wanted.as_str())
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "{\n  \"type\": \"record\",\n  \"name\": \"Case\",\n  \"fields\": [\n    {\"name\": \"caseId\", \"type\": \"string\"},\n    {\"name\": \"owner\", \"type\": \"string\"}\n  ]\n}\n";

    #[test]
    fn offsets_become_lines_and_columns() {
        assert_eq!(
            Position::of_offset("ab\ncd", 4),
            Position { line: 2, column: 2 }
        );
        assert_eq!(
            Position::of_offset("é\nx", 3),
            Position { line: 2, column: 1 }
        );
        assert_eq!(
            Position::of_offset("éx", 2),
            Position { line: 1, column: 2 }
        );
    }

    #[test]
    fn named_elements_keys_and_indexes_resolve() {
        let json = JsonText::parse(TEXT);
        let owner = json.locate(&[
            Step::Key("fields".into()),
            Step::Named {
                key: "name".into(),
                value: "owner".into(),
            },
        ]);
        assert_eq!(owner, Some(Position { line: 6, column: 5 }));
        assert_eq!(
            json.locate_pointer("/fields/0/type"),
            Some(Position {
                line: 5,
                column: 32
            })
        );
        assert_eq!(
            json.locate_pointer(""),
            Some(Position { line: 1, column: 1 })
        );
    }

    #[test]
    fn an_unresolved_step_stops_at_the_nearest_ancestor() {
        let json = JsonText::parse(TEXT);
        assert_eq!(
            json.locate_pointer("/fields/7/type"),
            Some(Position {
                line: 4,
                column: 13
            })
        );
        assert_eq!(JsonText::parse("not json").locate_pointer("/a"), None);
    }
}

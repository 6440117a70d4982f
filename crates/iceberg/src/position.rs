//! The line and column of a finding's path (`/fields/loc/fields/lat`, `/fields/l/element`)
//! in the schema's JSON text, or in the current schema of a table's metadata.

use covenant_engine::position::{JsonNode as Value, step_into};
use covenant_engine::{JsonText, Position, Step};

/// Where `path` is in `text`, or the nearest written ancestor; `None` when `text` is not JSON.
pub fn locate(text: &str, path: &str) -> Option<Position> {
    let json = JsonText::parse(text);
    let mut current = json.root()?;
    if let Some(i) = current_schema_index(text) {
        current = step_into(current, &Step::Key("schemas".into()))
            .and_then(|s| step_into(s, &Step::Index(i)))
            .unwrap_or(current);
    }
    let mut segments = path.split('/').filter(|s| !s.is_empty());
    while let Some(segment) = segments.next() {
        let next = match segment {
            "fields" => segments.next().and_then(|name| {
                let fields = key(nested(current), "fields")?;
                step_into(
                    fields,
                    &Step::Named {
                        key: "name".into(),
                        value: name.to_string(),
                    },
                )
            }),
            "element" | "key" | "value" => key(nested(current), segment),
            other => key(current, other),
        };
        match next {
            Some(value) => current = value,
            None => break,
        }
    }
    Some(json.position(current))
}

fn key<'v, 'a>(value: &'v Value<'a>, name: &str) -> Option<&'v Value<'a>> {
    step_into(value, &Step::Key(name.to_string()))
}

/// A field's nested type object, or the value itself (a schema, an element's type).
fn nested<'v, 'a>(value: &'v Value<'a>) -> &'v Value<'a> {
    match key(value, "type") {
        Some(inner @ Value::Object(_)) => inner,
        _ => value,
    }
}

/// Table metadata: the index in `schemas` of the current schema.
fn current_schema_index(text: &str) -> Option<usize> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    value.get("format-version")?;
    let current = value.get("current-schema-id")?.as_i64()?;
    value
        .get("schemas")?
        .as_array()?
        .iter()
        .position(|s| s.get("schema-id").and_then(serde_json::Value::as_i64) == Some(current))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "{\"type\": \"struct\", \"fields\": [\n  {\"id\": 1, \"name\": \"a\", \"required\": true, \"type\": \"int\"},\n  {\"id\": 2, \"name\": \"loc\", \"required\": false, \"type\": {\"type\": \"struct\", \"fields\": [\n    {\"id\": 3, \"name\": \"lat\", \"required\": false, \"type\": \"double\"}]}},\n  {\"id\": 4, \"name\": \"l\", \"required\": false, \"type\": {\"type\": \"list\", \"element-id\": 5, \"element-required\": false,\n    \"element\": \"long\"}}]}";

    #[test]
    fn fields_nested_fields_and_elements_are_found() {
        assert_eq!(locate(TEXT, "/fields/a").map(|p| p.line), Some(2));
        assert_eq!(
            locate(TEXT, "/fields/loc/fields/lat").map(|p| p.line),
            Some(4)
        );
        assert_eq!(locate(TEXT, "/fields/l/element").map(|p| p.line), Some(6));
        assert_eq!(locate(TEXT, "/fields/missing").map(|p| p.line), Some(1));
    }

    #[test]
    fn metadata_paths_point_into_the_current_schema() {
        let meta = format!(
            "{{\"format-version\": 2, \"current-schema-id\": 1, \"schemas\": [\n{{\"schema-id\": 0, \"type\": \"struct\", \"fields\": []}},\n{}]}}",
            TEXT.replacen("{\"type\"", "{\"schema-id\": 1, \"type\"", 1)
        );
        assert_eq!(locate(&meta, "/fields/a").map(|p| p.line), Some(4));
    }
}

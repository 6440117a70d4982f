//! The line and column of a finding's path (`/fields/owner/fields/id/type`) in the schema's
//! JSON text. Avro paths follow fields by name, so the walk looks a field up by its `name`
//! and, to go deeper, into the record, array or map its type declares (through unions).

use covenant_engine::position::{JsonNode as Value, step_into};
use covenant_engine::{JsonText, Position, Step};

/// Where `path` is in `text`, or the nearest written ancestor when the rest is implicit;
/// `None` when `text` is not JSON.
pub fn locate(text: &str, path: &str) -> Option<Position> {
    let json = JsonText::parse(text);
    let mut current = json.root()?;
    let mut segments = path.split('/').filter(|s| !s.is_empty());
    while let Some(segment) = segments.next() {
        let next = match segment {
            "fields" => segments.next().and_then(|name| field(current, name)),
            "type" => key(current, "type"),
            other => key(schema_of(current), other).or_else(|| key(current, other)),
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

fn field<'v, 'a>(value: &'v Value<'a>, name: &str) -> Option<&'v Value<'a>> {
    let fields = key(schema_of(value), "fields")?;
    let by_name = Step::Named {
        key: "name".into(),
        value: name.to_string(),
    };
    step_into(fields, &by_name)
}

/// The schema a value declares: a field's type, a union's first structured branch, or the
/// value itself when it is a record, array, map or enum.
fn schema_of<'v, 'a>(value: &'v Value<'a>) -> &'v Value<'a> {
    match value {
        Value::Array(branches) => branches
            .elements
            .iter()
            .find(|b| matches!(b, Value::Object(_)))
            .map_or(value, schema_of),
        Value::Object(_) => {
            let structured = ["fields", "items", "values", "symbols"]
                .iter()
                .any(|k| key(value, k).is_some());
            match key(value, "type") {
                Some(inner @ (Value::Object(_) | Value::Array(_))) if !structured => {
                    schema_of(inner)
                }
                _ => value,
            }
        }
        _ => value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"{
  "type": "record",
  "name": "Case",
  "fields": [
    {"name": "caseId", "type": "string"},
    {"name": "owner", "type": ["null", {
      "type": "record",
      "name": "Owner",
      "fields": [
        {"name": "id", "type": "long"}
      ]
    }]},
    {"name": "tags", "type": {"type": "array", "items": "string"}}
  ]
}
"#;

    fn at(path: &str) -> Option<(usize, usize)> {
        locate(TEXT, path).map(|p| (p.line, p.column))
    }

    #[test]
    fn fields_are_found_by_name_through_unions_and_containers() {
        assert_eq!(at("/fields/caseId"), Some((5, 5)));
        assert_eq!(at("/fields/caseId/type"), Some((5, 32)));
        assert_eq!(at("/fields/owner/fields/id"), Some((10, 9)));
        assert_eq!(at("/fields/tags/items"), Some((13, 57)));
        assert_eq!(at(""), Some((1, 1)));
    }

    #[test]
    fn a_path_into_something_implicit_points_at_its_nearest_ancestor() {
        assert_eq!(at("/fields/gone"), Some((1, 1)));
        assert_eq!(at("/fields/caseId/default"), Some((5, 5)));
        assert_eq!(locate("not json", "/fields/a"), None);
    }
}

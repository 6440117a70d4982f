//! The specification's JSON form of a schema, or of whole table metadata, read into the
//! model and validated: unique ids, identifier-field constraints, and the [`Limits`].

use crate::types::{Primitive, Type};
use crate::{Field, IcebergSchema, PartitionField};
use covenant_engine::{Counter, Limit, Limits, SchemaError, SchemaErrorKind};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Ids above this are reserved for metadata columns (`_file`, `_pos`, ...).
pub const MAX_FIELD_ID: i64 = 2_147_483_447;

fn invalid(path: &str, message: impl Into<String>) -> SchemaError {
    SchemaError::new(SchemaErrorKind::Invalid, path, message)
}

/// Parses a schema object, or table metadata (`format-version` present), taking its current
/// schema, its default partition spec and its `last-column-id`.
pub fn parse(text: &str, limits: &Limits) -> Result<IcebergSchema, SchemaError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| SchemaError::new(SchemaErrorKind::Syntax, "", format!("Invalid JSON: {e}")))?;
    let Value::Object(object) = &value else {
        return Err(invalid(
            "",
            "An Iceberg schema is a JSON object of type 'struct'.",
        ));
    };
    let mut parser = Parser {
        limits,
        fields: Counter::new(limits, Limit::Fields),
        ids: BTreeMap::new(),
    };
    if object.contains_key("format-version") {
        return parser.metadata(object);
    }
    let (schema_id, identifier_field_ids, fields) = parser.schema(object, "")?;
    let schema = IcebergSchema {
        schema_id,
        identifier_field_ids,
        fields,
        partition: None,
        last_column_id: None,
    };
    validate_identifiers(&schema)?;
    Ok(schema)
}

/// `(schema-id, identifier-field-ids, fields)` of one schema object.
type SchemaParts = (Option<i64>, Vec<i32>, Vec<Field>);

struct Parser<'a> {
    limits: &'a Limits,
    fields: Counter,
    /// Every id seen, with the path that declared it, to refuse a second use.
    ids: BTreeMap<i32, String>,
}

impl Parser<'_> {
    fn metadata(&mut self, object: &Map<String, Value>) -> Result<IcebergSchema, SchemaError> {
        let version = object.get("format-version").and_then(Value::as_i64);
        if !matches!(version, Some(1..=3)) {
            return Err(invalid(
                "/format-version",
                "Table metadata format-version must be 1, 2 or 3.",
            ));
        }
        let (schema_value, path) = current_schema(object)?;
        let Value::Object(schema_object) = schema_value else {
            return Err(invalid(&path, "A schema must be a JSON object."));
        };
        let (schema_id, identifier_field_ids, fields) = self.schema(schema_object, &path)?;
        let last_column_id = match object.get("last-column-id") {
            None => None,
            Some(v) => Some(
                v.as_i64()
                    .filter(|n| (0..=MAX_FIELD_ID).contains(n))
                    .ok_or_else(|| {
                        invalid(
                            "/last-column-id",
                            "last-column-id must be a non-negative integer.",
                        )
                    })? as i32,
            ),
        };
        if let (Some(last), Some((&max, at))) = (last_column_id, self.ids.last_key_value())
            && max > last
        {
            return Err(invalid(
                at,
                format!("Field id {max} is above the table's last-column-id {last}."),
            ));
        }
        let partition = partition_spec(object)?;
        if let Some(pf) = partition
            .iter()
            .find(|pf| !self.ids.contains_key(&pf.source_id))
        {
            return Err(invalid(
                "/partition-specs",
                format!(
                    "Partition field '{}' has source-id {}, which is not a field of the current schema.",
                    pf.name, pf.source_id
                ),
            ));
        }
        let schema = IcebergSchema {
            schema_id,
            identifier_field_ids,
            fields,
            partition: Some(partition),
            last_column_id,
        };
        validate_identifiers(&schema)?;
        Ok(schema)
    }

    /// `(schema-id, identifier-field-ids, fields)` of a schema object at `path`.
    fn schema(
        &mut self,
        object: &Map<String, Value>,
        path: &str,
    ) -> Result<SchemaParts, SchemaError> {
        if object.get("type").and_then(Value::as_str) != Some("struct") {
            return Err(invalid(
                path,
                "An Iceberg schema must have \"type\": \"struct\".",
            ));
        }
        let schema_id = match object.get("schema-id") {
            None => None,
            Some(v) => Some(v.as_i64().ok_or_else(|| {
                invalid(
                    &format!("{path}/schema-id"),
                    "schema-id must be an integer.",
                )
            })?),
        };
        let identifiers = match object.get("identifier-field-ids") {
            None => Vec::new(),
            Some(Value::Array(ids)) => ids
                .iter()
                .map(|v| id_of(Some(v), &format!("{path}/identifier-field-ids")))
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(invalid(
                    &format!("{path}/identifier-field-ids"),
                    "identifier-field-ids must be a list of field ids.",
                ));
            }
        };
        let fields = self.struct_fields(object, path, 1)?;
        Ok((schema_id, identifiers, fields))
    }

    fn struct_fields(
        &mut self,
        object: &Map<String, Value>,
        path: &str,
        depth: usize,
    ) -> Result<Vec<Field>, SchemaError> {
        self.limits.check(Limit::Depth, depth, path)?;
        let Some(Value::Array(items)) = object.get("fields") else {
            return Err(invalid(path, "A struct needs a 'fields' list."));
        };
        self.fields.add(items.len(), path)?;
        let mut names = BTreeSet::new();
        let mut fields = Vec::with_capacity(items.len());
        for item in items {
            let Value::Object(field) = item else {
                return Err(invalid(path, "Each struct field must be a JSON object."));
            };
            let name = match field.get("name") {
                Some(Value::String(n)) if !n.is_empty() => n.clone(),
                _ => return Err(invalid(path, "Each struct field needs a non-empty 'name'.")),
            };
            let at = format!("{path}/fields/{name}");
            if !names.insert(name.clone()) {
                return Err(SchemaError::new(
                    SchemaErrorKind::Duplicate,
                    &at,
                    format!("Field name '{name}' appears twice in one struct."),
                ));
            }
            let id = self.claim(field.get("id"), &at)?;
            let required = match field.get("required") {
                Some(Value::Bool(b)) => *b,
                _ => return Err(invalid(&at, "'required' must be true or false.")),
            };
            let ty = self.ty(field.get("type"), &at, depth)?;
            let doc = match field.get("doc") {
                None | Some(Value::Null) => None,
                Some(Value::String(d)) => Some(d.clone()),
                Some(_) => return Err(invalid(&at, "'doc' must be a string.")),
            };
            let initial_default = default_of(field, "initial-default", &ty, &at)?;
            let write_default = default_of(field, "write-default", &ty, &at)?;
            fields.push(Field {
                id,
                name,
                required,
                ty,
                doc,
                initial_default,
                write_default,
            });
        }
        Ok(fields)
    }

    /// Reads an id and records it, refusing one already used anywhere in the schema.
    fn claim(&mut self, value: Option<&Value>, path: &str) -> Result<i32, SchemaError> {
        let id = id_of(value, path)?;
        if let Some(first) = self.ids.insert(id, path.to_string()) {
            return Err(SchemaError::new(
                SchemaErrorKind::Duplicate,
                path,
                format!(
                    "Field id {id} is already used at {first}; every field, element, key and value needs its own id."
                ),
            ));
        }
        Ok(id)
    }

    fn ty(&mut self, value: Option<&Value>, path: &str, depth: usize) -> Result<Type, SchemaError> {
        match value {
            Some(Value::String(name)) => Primitive::parse(name)
                .map(Type::Primitive)
                .map_err(|e| SchemaError::new(SchemaErrorKind::UnknownType, path, e)),
            Some(Value::Object(object)) => self.nested(object, path, depth + 1),
            _ => Err(invalid(
                path,
                "'type' must be a type name or a struct, list or map object.",
            )),
        }
    }

    fn nested(
        &mut self,
        object: &Map<String, Value>,
        path: &str,
        depth: usize,
    ) -> Result<Type, SchemaError> {
        self.limits.check(Limit::Depth, depth, path)?;
        match object.get("type").and_then(Value::as_str) {
            Some("struct") => Ok(Type::Struct(self.struct_fields(object, path, depth)?)),
            Some("list") => {
                let at = format!("{path}/element");
                let element_id = self.claim(object.get("element-id"), &at)?;
                let element_required = flag(object, "element-required", &at)?;
                let element = Box::new(self.ty(object.get("element"), &at, depth)?);
                Ok(Type::List {
                    element_id,
                    element_required,
                    element,
                })
            }
            Some("map") => {
                let key_at = format!("{path}/key");
                let key_id = self.claim(object.get("key-id"), &key_at)?;
                let key = Box::new(self.ty(object.get("key"), &key_at, depth)?);
                let value_at = format!("{path}/value");
                let value_id = self.claim(object.get("value-id"), &value_at)?;
                let value_required = flag(object, "value-required", &value_at)?;
                let value = Box::new(self.ty(object.get("value"), &value_at, depth)?);
                Ok(Type::Map {
                    key_id,
                    key,
                    value_id,
                    value_required,
                    value,
                })
            }
            _ => Err(invalid(
                path,
                "A nested type must have \"type\" struct, list or map.",
            )),
        }
    }
}

/// A field's default in the specification's single-value JSON form, checked against its type
/// (the shape only: booleans, integers, numbers, strings for text, dates, times, uuids,
/// decimals and hex bytes, objects for structs, arrays for lists, key/value arrays for maps).
fn default_of(
    field: &Map<String, Value>,
    key: &str,
    ty: &Type,
    path: &str,
) -> Result<Option<Value>, SchemaError> {
    let Some(value) = field.get(key) else {
        return Ok(None);
    };
    let fits = match (ty, value) {
        (_, Value::Null) => true,
        (Type::Primitive(p), v) => match p {
            Primitive::Boolean => v.is_boolean(),
            Primitive::Int | Primitive::Long => v.is_i64() || v.is_u64(),
            Primitive::Float | Primitive::Double => v.is_number(),
            Primitive::Variant | Primitive::Unknown => true,
            _ => v.is_string(),
        },
        (Type::Struct(_), v) => v.is_object(),
        (Type::List { .. }, v) => v.is_array(),
        (Type::Map { .. }, v) => v.is_object(),
    };
    if fits {
        Ok(Some(value.clone()))
    } else {
        Err(SchemaError::new(
            SchemaErrorKind::InvalidDefault,
            path,
            format!("'{key}' {value} does not fit the field's type {ty}."),
        ))
    }
}

fn flag(object: &Map<String, Value>, key: &str, path: &str) -> Result<bool, SchemaError> {
    match object.get(key) {
        Some(Value::Bool(b)) => Ok(*b),
        _ => Err(invalid(path, format!("'{key}' must be true or false."))),
    }
}

fn id_of(value: Option<&Value>, path: &str) -> Result<i32, SchemaError> {
    match value.and_then(Value::as_i64) {
        Some(id) if (0..=MAX_FIELD_ID).contains(&id) => Ok(id as i32),
        Some(id) => Err(invalid(
            path,
            format!(
                "Field id {id} is out of range: ids are from 0 to {MAX_FIELD_ID} (higher ones are reserved for metadata columns)."
            ),
        )),
        None => Err(invalid(path, "A field id must be an integer.")),
    }
}

/// The schema `current-schema-id` names (format version 1: the `schema` object).
fn current_schema(object: &Map<String, Value>) -> Result<(&Value, String), SchemaError> {
    let Some(Value::Array(schemas)) = object.get("schemas") else {
        return object
            .get("schema")
            .map(|s| (s, "/schema".to_string()))
            .ok_or_else(|| invalid("", "Table metadata has neither 'schemas' nor 'schema'."));
    };
    let current = object
        .get("current-schema-id")
        .and_then(Value::as_i64)
        .ok_or_else(|| {
            invalid(
                "/current-schema-id",
                "Table metadata with 'schemas' needs an integer current-schema-id.",
            )
        })?;
    schemas
        .iter()
        .enumerate()
        .find(|(_, s)| s.get("schema-id").and_then(Value::as_i64) == Some(current))
        .map(|(i, s)| (s, format!("/schemas/{i}")))
        .ok_or_else(|| {
            invalid(
                "/current-schema-id",
                format!("No schema has the current-schema-id {current}."),
            )
        })
}

/// The fields of the default partition spec (format version 1: `partition-spec`).
fn partition_spec(object: &Map<String, Value>) -> Result<Vec<PartitionField>, SchemaError> {
    let fields = match object.get("partition-specs") {
        Some(Value::Array(specs)) => {
            let default = object
                .get("default-spec-id")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            match specs
                .iter()
                .find(|s| s.get("spec-id").and_then(Value::as_i64) == Some(default))
            {
                Some(spec) => spec.get("fields"),
                None => {
                    return Err(invalid(
                        "/default-spec-id",
                        format!("No partition spec has the default-spec-id {default}."),
                    ));
                }
            }
        }
        _ => object.get("partition-spec"),
    };
    let Some(fields) = fields else {
        return Ok(Vec::new());
    };
    let Value::Array(fields) = fields else {
        return Err(invalid(
            "/partition-specs",
            "A partition spec's fields must be a list.",
        ));
    };
    fields
        .iter()
        .map(|f| {
            let source_id = id_of(f.get("source-id"), "/partition-specs/fields/source-id")?;
            let text = |key: &str| {
                f.get(key)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            Ok(PartitionField {
                source_id,
                name: text("name"),
                transform: text("transform"),
            })
        })
        .collect()
}

/// Identifier fields must exist, be required primitives other than floating point, and sit
/// only in required structs, never in a list or a map (the specification's constraints).
fn validate_identifiers(schema: &IcebergSchema) -> Result<(), SchemaError> {
    let index = crate::index::Index::new(schema);
    for id in &schema.identifier_field_ids {
        let path = "/identifier-field-ids";
        let Some(column) = index.get(*id) else {
            return Err(invalid(
                path,
                format!("Identifier field id {id} is not a field of the schema."),
            ));
        };
        let name = &column.pointer;
        if column.role != crate::index::Role::Field {
            return Err(invalid(
                path,
                format!("Identifier field {name} cannot be a list element or a map key or value."),
            ));
        }
        let Some(primitive) = column.ty.primitive() else {
            return Err(invalid(
                path,
                format!(
                    "Identifier field {name} must be a primitive, not a {}.",
                    column.ty.kind()
                ),
            ));
        };
        if !primitive.can_identify() {
            return Err(invalid(
                path,
                format!("Identifier field {name} cannot be of type {primitive}."),
            ));
        }
        if !column.required {
            return Err(invalid(
                path,
                format!("Identifier field {name} must be required."),
            ));
        }
        let mut parent = column.parent;
        while let Some(p) = parent.and_then(|p| index.get(p)) {
            if !matches!(p.ty, Type::Struct(_)) || p.role != crate::index::Role::Field {
                return Err(invalid(
                    path,
                    format!("Identifier field {name} cannot be nested in a list or a map."),
                ));
            }
            if !p.required {
                return Err(invalid(
                    path,
                    format!(
                        "Identifier field {name} cannot be nested in the optional struct {}.",
                        p.pointer
                    ),
                ));
            }
            parent = p.parent;
        }
    }
    Ok(())
}

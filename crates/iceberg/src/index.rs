//! Every id of a schema with what it stands for: Iceberg binds data to ids, not names, so
//! every comparison pairs columns by id.

use crate::types::Type;
use crate::{Field, IcebergSchema};
use std::collections::BTreeMap;

/// What an id names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A struct field (a column, or a field of a nested struct).
    Field,
    /// A list's element.
    Element,
    Key,
    Value,
}

/// One id of a schema.
#[derive(Debug, Clone)]
pub struct Column<'a> {
    pub id: i32,
    pub role: Role,
    /// The field's name; `element`, `key` or `value` for the others.
    pub name: &'a str,
    /// Names from the top-level column down, as Spark and pyiceberg address nested fields
    /// (`["points", "element", "x"]`).
    pub names: Vec<&'a str>,
    /// The readable path findings use: `/fields/a/fields/b`, `/fields/l/element`.
    pub pointer: String,
    /// The enclosing id; `None` for a top-level column.
    pub parent: Option<i32>,
    /// Position among its siblings.
    pub position: usize,
    pub required: bool,
    pub ty: &'a Type,
    pub field: Option<&'a Field>,
}

/// The columns of a schema by id, built without recursion (the depth limit bounds it anyway).
pub struct Index<'a> {
    pub columns: BTreeMap<i32, Column<'a>>,
    /// Ids in schema order, parents before children.
    pub order: Vec<i32>,
    /// The ids directly under each parent (`None`: the top level), in order.
    children: BTreeMap<Option<i32>, Vec<i32>>,
}

impl<'a> Index<'a> {
    pub fn new(schema: &'a IcebergSchema) -> Index<'a> {
        let mut index = Index {
            columns: BTreeMap::new(),
            order: Vec::new(),
            children: BTreeMap::new(),
        };
        let mut stack: Vec<Column<'a>> = schema
            .fields
            .iter()
            .enumerate()
            .rev()
            .map(|(i, f)| field_column(f, None, &[], "", i))
            .collect();
        while let Some(column) = stack.pop() {
            let children = children(&column);
            stack.extend(children.into_iter().rev());
            index.order.push(column.id);
            index
                .children
                .entry(column.parent)
                .or_default()
                .push(column.id);
            index.columns.insert(column.id, column);
        }
        index
    }

    pub fn get(&self, id: i32) -> Option<&Column<'a>> {
        self.columns.get(&id)
    }

    /// Columns in schema order.
    pub fn iter(&self) -> impl Iterator<Item = &Column<'a>> {
        self.order.iter().filter_map(|id| self.columns.get(id))
    }

    /// The ids directly under `parent` (`None`: the top level), in order.
    pub fn children_of(&self, parent: Option<i32>) -> Vec<i32> {
        self.iter()
            .filter(|c| c.parent == parent)
            .map(|c| c.id)
            .collect()
    }
}

fn field_column<'a>(
    field: &'a Field,
    parent: Option<i32>,
    names: &[&'a str],
    pointer: &str,
    position: usize,
) -> Column<'a> {
    let mut names = names.to_vec();
    names.push(&field.name);
    Column {
        id: field.id,
        role: Role::Field,
        name: &field.name,
        names,
        pointer: format!("{pointer}/fields/{}", field.name),
        parent,
        position,
        required: field.required,
        ty: &field.ty,
        field: Some(field),
    }
}

fn inner<'a>(
    parent: &Column<'a>,
    role: Role,
    id: i32,
    required: bool,
    ty: &'a Type,
    position: usize,
) -> Column<'a> {
    let name = match role {
        Role::Element => "element",
        Role::Key => "key",
        _ => "value",
    };
    let mut names = parent.names.clone();
    names.push(name);
    Column {
        id,
        role,
        name,
        names,
        pointer: format!("{}/{name}", parent.pointer),
        parent: Some(parent.id),
        position,
        required,
        ty,
        field: None,
    }
}

fn children<'a>(column: &Column<'a>) -> Vec<Column<'a>> {
    match column.ty {
        Type::Primitive(_) => Vec::new(),
        Type::Struct(fields) => fields
            .iter()
            .enumerate()
            .map(|(i, f)| field_column(f, Some(column.id), &column.names, &column.pointer, i))
            .collect(),
        Type::List {
            element_id,
            element_required,
            element,
        } => {
            vec![inner(
                column,
                Role::Element,
                *element_id,
                *element_required,
                element,
                0,
            )]
        }
        Type::Map {
            key_id,
            key,
            value_id,
            value_required,
            value,
        } => vec![
            inner(column, Role::Key, *key_id, true, key, 0),
            inner(column, Role::Value, *value_id, *value_required, value, 1),
        ],
    }
}

//! Schema text to [`Arena`], following the Avro specification and Java's parser where the
//! specification leaves room (Java is what Confluent runs).

use crate::json::{Json, Object};
use crate::model::{Arena, Enum, Field, Fixed, Kind, Logical, Name, Named, Node, NodeId, Record};
use covenant_engine::{Counter, Limit, Limits, Reference, SchemaError, SchemaErrorKind};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// Deeper nesting than this is refused rather than risking the stack.
pub const MAX_DEPTH: usize = 128;

const PRIMITIVES: [&str; 8] = [
    "null", "boolean", "int", "long", "float", "double", "bytes", "string",
];

type Result<T> = std::result::Result<T, SchemaError>;

pub struct Parser {
    arena: Arena,
    names: HashMap<String, NodeId>,
    from_reference: bool,
    limits: Limits,
    named_types: Counter,
    fields: Counter,
}

fn err(kind: SchemaErrorKind, path: &str, message: impl Into<String>) -> SchemaError {
    SchemaError::new(kind, if path.is_empty() { "/" } else { path }, message)
}

fn valid_name(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn valid_namespace(s: &str) -> bool {
    s.is_empty() || s.split('.').all(valid_name)
}

fn primitive_kind(name: &str) -> Option<Kind> {
    Some(match name {
        "null" => Kind::Null,
        "boolean" => Kind::Boolean,
        "int" => Kind::Int,
        "long" => Kind::Long,
        "float" => Kind::Float,
        "double" => Kind::Double,
        "bytes" => Kind::Bytes,
        "string" => Kind::String,
        _ => return None,
    })
}

/// Parses `text` with named types taken from `references` (dependencies first), within
/// `limits`.
pub fn parse(text: &str, references: &[Reference], limits: &Limits) -> Result<Arena> {
    let mut parser = Parser {
        arena: Arena {
            // Rarely fewer than 24 bytes of text per node: growing the arena from empty
            // would copy it a dozen times (the excess is given back at the end).
            nodes: Vec::with_capacity(text.len() / 24),
            ..Arena::default()
        },
        names: HashMap::new(),
        from_reference: true,
        limits: *limits,
        named_types: Counter::new(limits, Limit::NamedTypes),
        fields: Counter::new(limits, Limit::Fields),
    };
    for reference in references {
        let json = read_json(&reference.schema).map_err(|e| {
            err(
                e.kind,
                "",
                format!("reference '{}': {}", reference.name, e.message),
            )
        })?;
        parser.node(&json, None, "", 0).map_err(|e| {
            SchemaError::new(
                e.kind,
                e.path,
                format!("reference '{}': {}", reference.name, e.message),
            )
        })?;
    }
    parser.from_reference = false;
    let json = read_json(text)?;
    let root = parser.node(&json, None, "", 0)?;
    parser.arena.root = root;
    parser.arena.nodes.shrink_to_fit();
    crate::depth::check(&parser.arena, limits)?;
    parser.arena.shapes = crate::shape::compute(&parser.arena);
    Ok(parser.arena)
}

fn read_json(text: &str) -> Result<Json<'_>> {
    serde_json::from_str(text).map_err(|e| {
        err(
            SchemaErrorKind::Syntax,
            "",
            format!(
                "Invalid JSON at line {} column {}: {e}",
                e.line(),
                e.column()
            ),
        )
    })
}

fn opt_str<'a>(obj: &'a Object<'_>, key: &str, path: &str) -> Result<Option<&'a str>> {
    match obj.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(s)) => Ok(Some(s)),
        Some(_) => Err(err(
            SchemaErrorKind::Invalid,
            &format!("{path}/{key}"),
            format!("'{key}' must be a string."),
        )),
    }
}

fn str_list(obj: &Object<'_>, key: &str, path: &str) -> Result<Vec<String>> {
    match obj.get(key) {
        None | Some(Json::Null) => Ok(Vec::new()),
        Some(Json::Array(items)) => items
            .iter()
            .map(|v| match v {
                Json::String(s) => Ok(s.to_string()),
                _ => Err(err(
                    SchemaErrorKind::Invalid,
                    &format!("{path}/{key}"),
                    format!("'{key}' must be a list of strings."),
                )),
            })
            .collect(),
        Some(_) => Err(err(
            SchemaErrorKind::Invalid,
            &format!("{path}/{key}"),
            format!("'{key}' must be a list of strings."),
        )),
    }
}

impl Parser {
    fn push(&mut self, kind: Kind, logical: Option<Logical>, props: Map<String, Value>) -> NodeId {
        self.arena.nodes.push(Node {
            kind,
            logical,
            props: props.into(),
        });
        self.arena.nodes.len() - 1
    }

    fn lookup(&self, name: &str, namespace: Option<&str>) -> Option<NodeId> {
        if !name.contains('.')
            && let Some(ns) = namespace.filter(|ns| !ns.is_empty())
            && let Some(id) = self.names.get(&format!("{ns}.{name}"))
        {
            return Some(*id);
        }
        self.names.get(name).copied()
    }

    fn node(
        &mut self,
        json: &Json<'_>,
        ns: Option<&str>,
        path: &str,
        depth: usize,
    ) -> Result<NodeId> {
        if depth > MAX_DEPTH {
            return Err(err(
                SchemaErrorKind::Invalid,
                path,
                format!("Schema nesting is deeper than {MAX_DEPTH} levels."),
            ));
        }
        match json {
            Json::String(s) => self.type_ref(s, ns, path),
            Json::Array(branches) => self.union(branches, ns, path, depth),
            Json::Object(obj) => self.object(obj, ns, path, depth),
            _ => Err(err(
                SchemaErrorKind::Invalid,
                path,
                format!("A schema must be a type name, an object or a union array, not '{json}'."),
            )),
        }
    }

    fn type_ref(&mut self, s: &str, ns: Option<&str>, path: &str) -> Result<NodeId> {
        if let Some(kind) = primitive_kind(s) {
            return Ok(self.push(kind, None, Map::new()));
        }
        self.lookup(s, ns).ok_or_else(|| {
            err(
                SchemaErrorKind::UnknownType,
                path,
                format!("Unknown type '{s}': not a primitive and not a defined or referenced named type."),
            )
        })
    }

    fn union(
        &mut self,
        branches: &[Json<'_>],
        ns: Option<&str>,
        path: &str,
        depth: usize,
    ) -> Result<NodeId> {
        self.limits.check(Limit::Branches, branches.len(), path)?;
        let mut ids = Vec::with_capacity(branches.len());
        let mut seen: HashSet<String> = HashSet::new();
        for (i, b) in branches.iter().enumerate() {
            let bpath = format!("{path}/{i}");
            let id = self.node(b, ns, &bpath, depth + 1)?;
            let kind = self.arena.kind(id);
            if matches!(kind, Kind::Union(_)) {
                return Err(err(
                    SchemaErrorKind::Invalid,
                    &bpath,
                    "A union may not directly contain another union.",
                ));
            }
            let key = self.arena.branch_label(id);
            if !seen.insert(key.clone()) {
                return Err(err(
                    SchemaErrorKind::Duplicate,
                    &bpath,
                    format!("The union contains '{key}' more than once."),
                ));
            }
            ids.push(id);
        }
        Ok(self.push(Kind::Union(ids), None, Map::new()))
    }

    fn object(
        &mut self,
        obj: &Object<'_>,
        ns: Option<&str>,
        path: &str,
        depth: usize,
    ) -> Result<NodeId> {
        let ty = match obj.get("type") {
            Some(Json::String(t)) => t.as_ref(),
            Some(nested @ (Json::Object(_) | Json::Array(_))) => {
                return self.node(nested, ns, &format!("{path}/type"), depth + 1);
            }
            Some(_) => {
                return Err(err(
                    SchemaErrorKind::Invalid,
                    &format!("{path}/type"),
                    "'type' must be a string, an object or an array.",
                ));
            }
            None => {
                return Err(err(
                    SchemaErrorKind::Invalid,
                    path,
                    "A schema object needs a 'type'.",
                ));
            }
        };
        if let Some(kind) = primitive_kind(ty) {
            // Avro keeps only unreserved attributes of a primitive: `{"type":"int","name":"n"}`
            // is `"int"`.
            let mut props = obj.rest(&crate::identity::RESERVED);
            let logical = logical_for(&kind, None, &props);
            if logical.is_some() {
                strip_logical(&mut props);
            }
            return Ok(self.push(kind, logical, props));
        }
        match ty {
            "record" | "error" => self.record(obj, ty == "error", ns, path, depth),
            "enum" => self.enumeration(obj, ns, path),
            "fixed" => self.fixed(obj, ns, path),
            "array" => {
                let items = obj.get("items").ok_or_else(|| {
                    err(SchemaErrorKind::Invalid, path, "An array needs 'items'.")
                })?;
                let id = self.node(items, ns, &format!("{path}/items"), depth + 1)?;
                let props = obj.rest(&["type", "items"]);
                Ok(self.push(Kind::Array(id), None, props))
            }
            "map" => {
                let values = obj
                    .get("values")
                    .ok_or_else(|| err(SchemaErrorKind::Invalid, path, "A map needs 'values'."))?;
                let id = self.node(values, ns, &format!("{path}/values"), depth + 1)?;
                let props = obj.rest(&["type", "values"]);
                Ok(self.push(Kind::Map(id), None, props))
            }
            other => match self.lookup(other, ns) {
                // Java accepts a named type reference in the object form.
                Some(id) => Ok(id),
                None => Err(err(
                    SchemaErrorKind::UnknownType,
                    &format!("{path}/type"),
                    format!("Unknown type '{other}'."),
                )),
            },
        }
    }

    /// Name, namespace and aliases of a named type, validated; the enclosing namespace is
    /// inherited when the type gives none.
    fn named(&self, obj: &Object<'_>, ns: Option<&str>, path: &str) -> Result<Named> {
        let raw = opt_str(obj, "name", path)?.ok_or_else(|| {
            err(
                SchemaErrorKind::Invalid,
                path,
                "A named type needs a 'name'.",
            )
        })?;
        let name = if let Some((space, local)) = raw.rsplit_once('.') {
            Name {
                name: local.to_string(),
                namespace: Some(space.to_string()),
            }
        } else {
            let own = opt_str(obj, "namespace", path)?;
            Name {
                name: raw.to_string(),
                namespace: own.or(ns).map(str::to_string).filter(|s| !s.is_empty()),
            }
        };
        if !valid_name(&name.name) || !valid_namespace(name.namespace.as_deref().unwrap_or("")) {
            return Err(err(
                SchemaErrorKind::InvalidName,
                &format!("{path}/name"),
                format!("'{raw}' is not a valid Avro name."),
            ));
        }
        if PRIMITIVES.contains(&name.full().as_str()) {
            return Err(err(
                SchemaErrorKind::InvalidName,
                &format!("{path}/name"),
                format!("'{raw}' redefines a primitive type."),
            ));
        }
        let mut aliases = Vec::new();
        for a in str_list(obj, "aliases", path)? {
            let full = if a.contains('.') {
                a.clone()
            } else {
                Name {
                    name: a.clone(),
                    namespace: name.namespace.clone(),
                }
                .full()
            };
            let ok = match full.rsplit_once('.') {
                Some((space, local)) => valid_name(local) && valid_namespace(space),
                None => valid_name(&full),
            };
            if !ok {
                return Err(err(
                    SchemaErrorKind::InvalidName,
                    &format!("{path}/aliases"),
                    format!("Alias '{a}' is not a valid Avro name."),
                ));
            }
            aliases.push(full);
        }
        let doc = opt_str(obj, "doc", path)?.map(str::to_string);
        Ok(Named {
            name,
            aliases,
            doc,
            from_reference: self.from_reference,
        })
    }

    fn define(
        &mut self,
        named: &Named,
        kind: Kind,
        path: &str,
        props: Map<String, Value>,
    ) -> Result<NodeId> {
        let full = named.name.full();
        self.named_types.add(1, path)?;
        if self.names.contains_key(&full) {
            return Err(err(
                SchemaErrorKind::Duplicate,
                &format!("{path}/name"),
                format!("Named type '{full}' is defined more than once."),
            ));
        }
        let id = self.push(kind, None, props);
        self.names.insert(full, id);
        Ok(id)
    }

    fn record(
        &mut self,
        obj: &Object<'_>,
        is_error: bool,
        ns: Option<&str>,
        path: &str,
        depth: usize,
    ) -> Result<NodeId> {
        let named = self.named(obj, ns, path)?;
        let fields_json = match obj.get("fields") {
            Some(Json::Array(f)) => f,
            _ => {
                return Err(err(
                    SchemaErrorKind::Invalid,
                    path,
                    format!("Record '{}' needs a 'fields' array.", named.name.full()),
                ));
            }
        };
        let props = obj.rest(&["type", "name", "namespace", "aliases", "doc", "fields"]);
        let inner_ns = named.name.namespace.clone();
        // Defined before its fields so that fields may refer to the record itself.
        let id = self.define(
            &named,
            Kind::Record(Box::new(Record::new(named.clone(), is_error, Vec::new()))),
            path,
            props,
        )?;
        self.fields
            .add(fields_json.len(), &format!("{path}/fields"))?;
        let mut fields = Vec::with_capacity(fields_json.len());
        let mut seen: HashSet<&str> = HashSet::with_capacity(fields_json.len());
        for (i, f) in fields_json.iter().enumerate() {
            let Json::Object(fobj) = f else {
                return Err(err(
                    SchemaErrorKind::Invalid,
                    &format!("{path}/fields/{i}"),
                    "A field must be an object.",
                ));
            };
            let fname: &str = match fobj.get("name") {
                Some(Json::String(s)) => s,
                _ => {
                    return Err(err(
                        SchemaErrorKind::Invalid,
                        &format!("{path}/fields/{i}"),
                        "A field needs a string 'name'.",
                    ));
                }
            };
            // One allocation for both paths a field needs on the way down.
            let type_path = format!("{path}/fields/{fname}/type");
            let fpath = &type_path[..type_path.len() - "/type".len()];
            if !valid_name(fname) {
                return Err(err(
                    SchemaErrorKind::InvalidName,
                    &format!("{fpath}/name"),
                    format!("'{fname}' is not a valid field name."),
                ));
            }
            if !seen.insert(fname) {
                return Err(err(
                    SchemaErrorKind::Duplicate,
                    fpath,
                    format!(
                        "Field '{fname}' is defined more than once in record '{}'.",
                        named.name.full()
                    ),
                ));
            }
            let ty_json = fobj.get("type").ok_or_else(|| {
                err(
                    SchemaErrorKind::Invalid,
                    fpath,
                    format!("Field '{fname}' needs a 'type'."),
                )
            })?;
            let ty = self.node(ty_json, inner_ns.as_deref(), &type_path, depth + 1)?;
            let default = fobj.get("default").map(Json::to_value);
            if let Some(d) = &default
                && !crate::default::is_valid(&self.arena, ty, d, 0)
            {
                return Err(err(
                    SchemaErrorKind::InvalidDefault,
                    &format!("{fpath}/default"),
                    format!(
                        "Default {d} of field '{fname}' does not match its type '{}'.",
                        self.arena.describe(ty)
                    ),
                ));
            }
            let order = opt_str(fobj, "order", fpath)?.map(str::to_string);
            if let Some(o) = &order
                && !matches!(o.as_str(), "ascending" | "descending" | "ignore")
            {
                return Err(err(
                    SchemaErrorKind::Invalid,
                    &format!("{fpath}/order"),
                    format!("Field order '{o}' must be 'ascending', 'descending' or 'ignore'."),
                ));
            }
            let aliases = str_list(fobj, "aliases", fpath)?;
            if let Some(bad) = aliases.iter().find(|a| !valid_name(a)) {
                return Err(err(
                    SchemaErrorKind::InvalidName,
                    &format!("{fpath}/aliases"),
                    format!("Field alias '{bad}' is not a valid name."),
                ));
            }
            let doc = opt_str(fobj, "doc", fpath)?.map(str::to_string);
            fields.push(Field {
                name: fname.to_string(),
                ty,
                default,
                aliases,
                order,
                doc,
                props: fobj
                    .rest(&["name", "type", "default", "order", "aliases", "doc"])
                    .into(),
            });
        }
        if let Kind::Record(r) = &mut self.arena.nodes[id].kind {
            r.fields = fields;
        }
        Ok(id)
    }

    fn enumeration(&mut self, obj: &Object<'_>, ns: Option<&str>, path: &str) -> Result<NodeId> {
        let named = self.named(obj, ns, path)?;
        let symbols = match obj.get("symbols") {
            Some(Json::Array(_)) => str_list(obj, "symbols", path)?,
            _ => {
                return Err(err(
                    SchemaErrorKind::Invalid,
                    path,
                    format!("Enum '{}' needs a 'symbols' array.", named.name.full()),
                ));
            }
        };
        self.limits.check(
            Limit::EnumSymbols,
            symbols.len(),
            &format!("{path}/symbols"),
        )?;
        let mut seen = HashSet::new();
        for s in &symbols {
            if !valid_name(s) {
                return Err(err(
                    SchemaErrorKind::InvalidName,
                    &format!("{path}/symbols"),
                    format!("Enum symbol '{s}' is not a valid name."),
                ));
            }
            if !seen.insert(s.as_str()) {
                return Err(err(
                    SchemaErrorKind::Duplicate,
                    &format!("{path}/symbols"),
                    format!("Enum symbol '{s}' appears more than once."),
                ));
            }
        }
        let default = match obj.get("default") {
            None | Some(Json::Null) => None,
            Some(Json::String(d)) if symbols.iter().any(|s| s == d) => Some(d.to_string()),
            Some(d) => {
                return Err(err(
                    SchemaErrorKind::InvalidDefault,
                    &format!("{path}/default"),
                    format!(
                        "Enum default {d} is not one of the symbols of '{}'.",
                        named.name.full()
                    ),
                ));
            }
        };
        let props = obj.rest(&[
            "type",
            "name",
            "namespace",
            "aliases",
            "doc",
            "symbols",
            "default",
        ]);
        self.define(
            &named.clone(),
            Kind::Enum(Box::new(Enum {
                named,
                symbols,
                default,
            })),
            path,
            props,
        )
    }

    fn fixed(&mut self, obj: &Object<'_>, ns: Option<&str>, path: &str) -> Result<NodeId> {
        let named = self.named(obj, ns, path)?;
        let size = match obj.get("size").and_then(Json::as_u64) {
            Some(s) if s <= i32::MAX as u64 => s as usize,
            _ => {
                return Err(err(
                    SchemaErrorKind::Invalid,
                    &format!("{path}/size"),
                    format!(
                        "Fixed '{}' needs a non-negative integer 'size'.",
                        named.name.full()
                    ),
                ));
            }
        };
        let mut props = obj.rest(&["type", "name", "namespace", "aliases", "doc", "size"]);
        let kind = Kind::Fixed(Box::new(Fixed {
            named: named.clone(),
            size,
        }));
        let logical = logical_for(&kind, Some(size), &props);
        if logical.is_some() {
            strip_logical(&mut props);
        }
        let id = self.define(&named, kind, path, props)?;
        self.arena.nodes[id].logical = logical;
        Ok(id)
    }
}

fn strip_logical(props: &mut Map<String, Value>) {
    for key in ["logicalType", "precision", "scale"] {
        props.remove(key);
    }
}

/// The logical type the attributes describe, or `None` when it is absent, unknown or invalid
/// for the underlying type (the specification says such a schema reads as its underlying type).
fn logical_for(
    kind: &Kind,
    fixed_size: Option<usize>,
    props: &Map<String, Value>,
) -> Option<Logical> {
    let name = props.get("logicalType")?.as_str()?;
    let l = match (name, kind) {
        ("decimal", Kind::Bytes | Kind::Fixed(_)) => {
            let precision = props.get("precision")?.as_u64()?;
            let scale = match props.get("scale") {
                None => 0,
                Some(v) => v.as_u64()?,
            };
            if precision == 0 || scale > precision {
                return None;
            }
            if let Some(size) = fixed_size {
                // Largest number of base-10 digits a signed size-byte integer always holds.
                let bits = (8 * size as u64).saturating_sub(1) as f64;
                let max = (bits * std::f64::consts::LOG10_2).floor() as u64;
                if precision > max {
                    return None;
                }
            }
            Logical::Decimal {
                precision: u32::try_from(precision).ok()?,
                scale: u32::try_from(scale).ok()?,
            }
        }
        ("uuid", Kind::String) => Logical::Uuid,
        ("uuid", Kind::Fixed(f)) if f.size == 16 => Logical::Uuid,
        ("date", Kind::Int) => Logical::Date,
        ("time-millis", Kind::Int) => Logical::TimeMillis,
        ("time-micros", Kind::Long) => Logical::TimeMicros,
        ("timestamp-millis", Kind::Long) => Logical::TimestampMillis,
        ("timestamp-micros", Kind::Long) => Logical::TimestampMicros,
        ("local-timestamp-millis", Kind::Long) => Logical::LocalTimestampMillis,
        ("local-timestamp-micros", Kind::Long) => Logical::LocalTimestampMicros,
        ("duration", Kind::Fixed(f)) if f.size == 12 => Logical::Duration,
        _ => return None,
    };
    Some(l)
}

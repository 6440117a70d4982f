//! The schema graph the compatibility rules walk.
//!
//! Keywords are grouped into typed nodes the way Confluent's JSON Schema loader groups them:
//! string, number, object and array keywords each form one node (typed by `type`, or sniffed
//! from the keywords when `type` is absent), `enum`, `const`, `not` and the combinators form
//! their own nodes, and several of these side by side become a synthetic `allOf`. Matching the
//! grouping is what makes our verdicts agree with Confluent's on the same pair of texts.

use covenant_engine::{Counter, Limit, Limits, Reference, SchemaError, SchemaErrorKind};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// JSON Schema dialects Covenant understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Draft4,
    Draft6,
    Draft7,
    Draft201909,
    Draft202012,
}

impl Dialect {
    /// The dialect named by a `$schema` URI, ignoring scheme and trailing `#`.
    pub fn from_uri(uri: &str) -> Option<Dialect> {
        let trimmed = uri
            .trim()
            .trim_end_matches('#')
            .trim_start_matches("https://")
            .trim_start_matches("http://");
        match trimmed {
            "json-schema.org/draft-04/schema" | "json-schema.org/schema" => Some(Dialect::Draft4),
            "json-schema.org/draft-06/schema" => Some(Dialect::Draft6),
            "json-schema.org/draft-07/schema" => Some(Dialect::Draft7),
            "json-schema.org/draft/2019-09/schema" => Some(Dialect::Draft201909),
            "json-schema.org/draft/2020-12/schema" => Some(Dialect::Draft202012),
            _ => None,
        }
    }

    /// 2019-09 and later: sibling keywords of `$ref` apply, `dependentRequired` and friends.
    pub fn is_modern(self) -> bool {
        matches!(self, Dialect::Draft201909 | Dialect::Draft202012)
    }

    pub fn name(self) -> &'static str {
        match self {
            Dialect::Draft4 => "draft-04",
            Dialect::Draft6 => "draft-06",
            Dialect::Draft7 => "draft-07",
            Dialect::Draft201909 => "2019-09",
            Dialect::Draft202012 => "2020-12",
        }
    }
}

pub type NodeId = usize;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Criterion {
    All,
    Any,
    One,
}

impl Criterion {
    pub fn keyword(self) -> &'static str {
        match self {
            Criterion::All => "allOf",
            Criterion::Any => "anyOf",
            Criterion::One => "oneOf",
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct StringNode {
    pub max_length: Option<u64>,
    pub min_length: Option<u64>,
    pub pattern: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct NumberNode {
    pub integer: bool,
    pub maximum: Option<f64>,
    pub minimum: Option<f64>,
    pub exclusive_maximum: Option<f64>,
    pub exclusive_minimum: Option<f64>,
    /// Draft-04 boolean forms, which qualify `maximum`/`minimum`.
    pub exclusive_maximum_flag: bool,
    pub exclusive_minimum_flag: bool,
    /// Kept as text so that `0.1` compares exactly.
    pub multiple_of: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct ObjectNode {
    pub properties: Vec<(String, NodeId)>,
    pub required: Vec<String>,
    /// `additionalProperties: false` makes this false.
    pub permits_additional: bool,
    /// `additionalProperties` given as a schema (not a boolean).
    pub additional_schema: Option<NodeId>,
    pub pattern_properties: Vec<(String, NodeId)>,
    pub unevaluated: Option<NodeId>,
    pub property_dependencies: Vec<(String, Vec<String>)>,
    pub schema_dependencies: Vec<(String, NodeId)>,
    pub max_properties: Option<u64>,
    pub min_properties: Option<u64>,
}

#[derive(Debug, Clone, Default)]
pub struct ArrayNode {
    pub all_items: Option<NodeId>,
    pub item_schemas: Vec<NodeId>,
    pub permits_additional: bool,
    pub additional_schema: Option<NodeId>,
    pub unevaluated: Option<NodeId>,
    pub max_items: Option<u64>,
    pub min_items: Option<u64>,
    pub unique_items: bool,
    pub max_contains: Option<u64>,
    pub min_contains: Option<u64>,
}

/// A node whose bounding keywords (the rules' `BOUNDS`) are read by name: the value, or
/// `None` when absent or not a keyword of this kind of node. A set flag reads as 1.
pub trait Bounded {
    fn bound(&self, keyword: &str) -> Option<f64>;
}

fn whole(value: Option<u64>) -> Option<f64> {
    value.map(|v| v as f64)
}

impl Bounded for StringNode {
    fn bound(&self, keyword: &str) -> Option<f64> {
        match keyword {
            "maxLength" => whole(self.max_length),
            "minLength" => whole(self.min_length),
            _ => None,
        }
    }
}

impl Bounded for NumberNode {
    fn bound(&self, keyword: &str) -> Option<f64> {
        match keyword {
            "maximum" => self.maximum,
            "minimum" => self.minimum,
            "exclusiveMaximum" => self.exclusive_maximum,
            "exclusiveMinimum" => self.exclusive_minimum,
            _ => None,
        }
    }
}

impl Bounded for ObjectNode {
    fn bound(&self, keyword: &str) -> Option<f64> {
        match keyword {
            "maxProperties" => whole(self.max_properties),
            "minProperties" => whole(self.min_properties),
            _ => None,
        }
    }
}

impl Bounded for ArrayNode {
    fn bound(&self, keyword: &str) -> Option<f64> {
        match keyword {
            "maxItems" => whole(self.max_items),
            "minItems" => whole(self.min_items),
            "uniqueItems" => self.unique_items.then_some(1.0),
            "maxContains" => whole(self.max_contains),
            "minContains" => whole(self.min_contains),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub enum Kind {
    /// `{}` or `true`: anything.
    Empty,
    /// `false`: nothing.
    False,
    String(StringNode),
    Number(NumberNode),
    Boolean,
    Null,
    Enum(Vec<Value>),
    Const(Value),
    Combined(Criterion, Vec<NodeId>),
    Not(NodeId),
    Object(Box<ObjectNode>),
    Array(Box<ArrayNode>),
    Conditional,
    /// A `$ref`, resolved to its target node.
    Ref(NodeId),
    /// Placeholder while a node is being loaded (only seen through recursive refs).
    Pending,
}

impl Kind {
    /// The class name used for "did the type change" comparisons.
    pub fn class(&self) -> &'static str {
        match self {
            Kind::Empty => "empty",
            Kind::False => "false",
            Kind::String(_) => "string",
            Kind::Number(n) if n.integer => "integer",
            Kind::Number(_) => "number",
            Kind::Boolean => "boolean",
            Kind::Null => "null",
            Kind::Enum(_) => "enum",
            Kind::Const(_) => "const",
            Kind::Combined(..) => "combined",
            Kind::Not(_) => "not",
            Kind::Object(_) => "object",
            Kind::Array(_) => "array",
            Kind::Conditional => "conditional",
            Kind::Ref(_) | Kind::Pending => "reference",
        }
    }

    fn class_key(&self) -> &'static str {
        match self {
            Kind::Number(_) => "number",
            other => other.class(),
        }
    }

    pub fn same_class(&self, other: &Kind) -> bool {
        self.class_key() == other.class_key()
    }
}

#[derive(Debug, Clone)]
pub struct Node {
    pub kind: Kind,
    /// Boxed because most subschemas carry none of them, and parsed schemas stay in the
    /// registry's cache; read through [`Node::about`].
    about: Option<Box<About>>,
    /// Canonical text of the source JSON, used to collapse duplicate combinator branches.
    pub canonical: String,
    /// The hash of `canonical` when the text alone decides what the subschema means (it
    /// holds no reference and no `$schema`); two nodes with the same shape compare equal
    /// without a walk (see `diff::Shared::alike`).
    pub shape: Option<u128>,
}

/// A subschema's identifier and annotations: none of them changes what it accepts, but a
/// change to any of them is reported.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct About {
    pub id: Option<String>,
    pub title: Option<String>,
    pub description: Option<String>,
    pub default: Option<Value>,
    /// Kafka Connect's `connect.type` (e.g. `bytes`).
    pub connect_type: Option<String>,
}

impl About {
    const NONE: About = About {
        id: None,
        title: None,
        description: None,
        default: None,
        connect_type: None,
    };

    fn boxed(self) -> Option<Box<About>> {
        (self != About::NONE).then(|| Box::new(self))
    }
}

impl Node {
    pub fn about(&self) -> &About {
        static NONE: About = About::NONE;
        self.about.as_deref().unwrap_or(&NONE)
    }

    fn bare(kind: Kind) -> Node {
        Node {
            kind,
            about: None,
            canonical: String::new(),
            shape: None,
        }
    }
}

/// The loaded graph of one schema and everything it references.
#[derive(Debug, Clone)]
pub struct Model {
    pub nodes: Vec<Node>,
    pub root: NodeId,
}

impl Model {
    /// Follows `$ref` chains to the node that carries meaning.
    pub fn resolve(&self, mut id: NodeId) -> NodeId {
        for _ in 0..64 {
            match self.nodes[id].kind {
                Kind::Ref(target) => id = target,
                _ => return id,
            }
        }
        id
    }
}

/// The shape of a subschema's canonical text, unless the text alone does not decide its
/// meaning: a reference may point at different targets, and `$schema` changes the dialect.
fn shape_of(canonical: &str) -> Option<u128> {
    let self_contained = !canonical.is_empty()
        && !canonical.contains("$ref\"")
        && !canonical.contains("Ref\"")
        && !canonical.contains("$schema\"");
    self_contained.then(|| covenant_engine::shape::of_bytes(canonical.as_bytes()))
}

/// Sorted-key compact JSON: the same meaning gives the same text.
pub fn canonical(value: &Value) -> String {
    fn write(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String((*k).clone()).to_string());
                    out.push(':');
                    if let Some(v) = map.get(*k) {
                        write(v, out);
                    }
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(v, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// One JSON document taking part in resolution: the schema itself or a reference.
struct Doc {
    value: Value,
    /// Base URI of the document's root (its name for references, its `$id` otherwise).
    base: String,
}

/// Where a `$ref` can land: a document and a JSON pointer inside it.
type Location = (usize, String);

pub struct Loader {
    docs: Vec<Doc>,
    dialect: Dialect,
    /// Resource URIs (no fragment) to their location.
    resources: HashMap<String, Location>,
    /// `(resource uri, anchor)` to location.
    anchors: HashMap<(String, String), Location>,
    loaded: HashMap<Location, NodeId>,
    nodes: Vec<Node>,
    limits: Limits,
    /// How many `load`s are in progress: the nesting depth, counting `$ref` hops.
    depth: usize,
    fields: Counter,
    definitions: Counter,
}

fn err(kind: SchemaErrorKind, path: &str, message: impl Into<String>) -> SchemaError {
    SchemaError::new(kind, if path.is_empty() { "#" } else { path }, message)
}

fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// Joins a reference to a base URI without any network notion: enough for `$id` and names.
pub fn join_uri(base: &str, reference: &str) -> String {
    if reference.is_empty() {
        return base.to_string();
    }
    if reference.contains("://") || reference.starts_with("urn:") || base.is_empty() {
        return reference.to_string();
    }
    if let Some(fragment) = reference.strip_prefix('#') {
        let stem = base.split('#').next().unwrap_or(base);
        return format!("{stem}#{fragment}");
    }
    let stem = base.split('#').next().unwrap_or(base);
    if reference.starts_with('/') {
        if let Some(scheme_end) = stem.find("://") {
            let after = &stem[scheme_end + 3..];
            let host_end = after
                .find('/')
                .map(|i| scheme_end + 3 + i)
                .unwrap_or(stem.len());
            return format!("{}{}", &stem[..host_end], reference);
        }
        return reference.to_string();
    }
    match stem.rfind('/') {
        Some(i) => format!("{}{}", &stem[..=i], reference),
        None => reference.to_string(),
    }
}

fn split_fragment(uri: &str) -> (&str, Option<&str>) {
    match uri.find('#') {
        Some(i) => (&uri[..i], Some(&uri[i + 1..])),
        None => (uri, None),
    }
}

const OBJECT_KEYWORDS: &[&str] = &[
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "dependencies",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
];
const MODERN_OBJECT_KEYWORDS: &[&str] = &[
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
];
const ARRAY_KEYWORDS: &[&str] = &[
    "items",
    "additionalItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "contains",
];
const MODERN_ARRAY_KEYWORDS: &[&str] = &["prefixItems", "unevaluatedItems"];
const NUMBER_KEYWORDS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];
const STRING_KEYWORDS: &[&str] = &["minLength", "maxLength", "pattern", "format"];

impl Loader {
    pub fn new(
        root: Value,
        dialect: Dialect,
        references: &[Reference],
        limits: &Limits,
    ) -> Result<Loader, SchemaError> {
        let mut docs = Vec::new();
        for reference in references {
            let value: Value = serde_json::from_str(&reference.schema).map_err(|e| {
                err(
                    SchemaErrorKind::Syntax,
                    "",
                    format!("Reference '{}' is not valid JSON: {e}", reference.name),
                )
            })?;
            docs.push(Doc {
                value,
                base: reference.name.clone(),
            });
        }
        let root_base = root
            .get(if dialect == Dialect::Draft4 {
                "id"
            } else {
                "$id"
            })
            .and_then(Value::as_str)
            .map(|s| split_fragment(s).0.to_string())
            .unwrap_or_default();
        docs.push(Doc {
            value: root,
            base: root_base,
        });
        let mut loader = Loader {
            docs,
            dialect,
            resources: HashMap::new(),
            anchors: HashMap::new(),
            loaded: HashMap::new(),
            nodes: Vec::new(),
            limits: *limits,
            depth: 0,
            fields: Counter::new(limits, Limit::Fields),
            definitions: Counter::new(limits, Limit::NamedTypes),
        };
        for index in 0..loader.docs.len() {
            let base = loader.docs[index].base.clone();
            loader
                .resources
                .entry(base.clone())
                .or_insert((index, String::new()));
            let value = loader.docs[index].value.clone();
            loader.index_resources(index, &value, String::new(), &base);
        }
        Ok(loader)
    }

    fn id_keyword(&self) -> &'static str {
        if self.dialect == Dialect::Draft4 {
            "id"
        } else {
            "$id"
        }
    }

    /// Records every `$id` and anchor so that `$ref`s can find them.
    fn index_resources(&mut self, doc: usize, value: &Value, pointer: String, base: &str) {
        let Value::Object(map) = value else {
            if let Value::Array(items) = value {
                for (i, item) in items.iter().enumerate() {
                    self.index_resources(doc, item, format!("{pointer}/{i}"), base);
                }
            }
            return;
        };
        let mut base = base.to_string();
        if let Some(id) = map.get(self.id_keyword()).and_then(Value::as_str) {
            let joined = join_uri(&base, id);
            let (resource, fragment) = split_fragment(&joined);
            match fragment {
                Some(name) if !name.is_empty() && !name.starts_with('/') => {
                    self.anchors.insert(
                        (resource.to_string(), name.to_string()),
                        (doc, pointer.clone()),
                    );
                }
                _ => {
                    base = resource.to_string();
                    self.resources
                        .entry(base.clone())
                        .or_insert((doc, pointer.clone()));
                }
            }
        }
        for keyword in ["$anchor", "$dynamicAnchor"] {
            if let Some(anchor) = map.get(keyword).and_then(Value::as_str) {
                self.anchors
                    .insert((base.clone(), anchor.to_string()), (doc, pointer.clone()));
            }
        }
        for (key, child) in map {
            if matches!(key.as_str(), "enum" | "const" | "default" | "examples") {
                continue;
            }
            self.index_resources(doc, child, format!("{pointer}/{}", escape(key)), &base);
        }
    }

    fn lookup(
        &self,
        pointer_path: &str,
        base: &str,
        reference: &str,
    ) -> Result<Location, SchemaError> {
        let joined = join_uri(base, reference);
        let (resource, fragment) = split_fragment(&joined);
        let mut candidates = vec![resource.to_string()];
        let (raw_resource, _) = split_fragment(reference);
        candidates.push(raw_resource.to_string());
        if let Some(last) = raw_resource.rsplit('/').next() {
            candidates.push(last.to_string());
        }
        for candidate in candidates {
            let Some((doc, start)) = self.resources.get(&candidate).cloned() else {
                continue;
            };
            return match fragment {
                None | Some("") => Ok((doc, start)),
                Some(f) if f.starts_with('/') => {
                    let decoded = f.replace("%25", "%").replace("%22", "\"");
                    Ok((doc, format!("{start}{decoded}")))
                }
                Some(anchor) => self
                    .anchors
                    .get(&(candidate.clone(), anchor.to_string()))
                    .cloned()
                    .ok_or_else(|| {
                        err(
                            SchemaErrorKind::UnknownType,
                            pointer_path,
                            format!("'$ref' '{reference}' names an anchor that is not defined."),
                        )
                    }),
            };
        }
        Err(err(
            SchemaErrorKind::UnknownType,
            pointer_path,
            format!(
                "'$ref' '{reference}' does not resolve to this schema or a registered reference."
            ),
        ))
    }

    fn value_at(&self, location: &Location) -> Option<&Value> {
        let mut current = &self.docs[location.0].value;
        if location.1.is_empty() {
            return Some(current);
        }
        for token in location.1.trim_start_matches('/').split('/') {
            let token = unescape(token);
            current = match current {
                Value::Object(map) => map.get(&token)?,
                Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(current)
    }

    /// The base URI in effect at a location: the nearest enclosing `$id`.
    fn base_at(&self, location: &Location) -> String {
        let mut base = self.docs[location.0].base.clone();
        let mut current = &self.docs[location.0].value;
        let id_key = self.id_keyword();
        let tokens: Vec<String> = if location.1.is_empty() {
            Vec::new()
        } else {
            location
                .1
                .trim_start_matches('/')
                .split('/')
                .map(unescape)
                .collect()
        };
        for token in tokens.iter() {
            current = match current {
                Value::Object(map) => match map.get(token) {
                    Some(v) => v,
                    None => break,
                },
                Value::Array(items) => match token.parse::<usize>().ok().and_then(|i| items.get(i))
                {
                    Some(v) => v,
                    None => break,
                },
                _ => break,
            };
            if let Some(id) = current.get(id_key).and_then(Value::as_str) {
                let joined = join_uri(&base, id);
                let (resource, fragment) = split_fragment(&joined);
                if fragment.is_none_or(|f| f.is_empty()) {
                    base = resource.to_string();
                }
            }
        }
        base
    }

    pub fn load_root(mut self) -> Result<Model, SchemaError> {
        let root_doc = self.docs.len() - 1;
        let root = self.load((root_doc, String::new()))?;
        // A parsed schema stays in the registry's cache; the loader's spare capacity (up to
        // half the vector after its last doubling) would stay with it.
        self.nodes.shrink_to_fit();
        Ok(Model {
            nodes: self.nodes,
            root,
        })
    }

    fn path_of(location: &Location) -> String {
        format!("#{}", location.1)
    }

    fn push(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    fn load(&mut self, location: Location) -> Result<NodeId, SchemaError> {
        if let Some(&id) = self.loaded.get(&location) {
            return Ok(id);
        }
        let path = Self::path_of(&location);
        let value = self.value_at(&location).cloned().ok_or_else(|| {
            err(
                SchemaErrorKind::UnknownType,
                &path,
                "'$ref' points at a location that does not exist.",
            )
        })?;
        // Loading recurses once per nesting level and `$ref` hop (a location already being
        // loaded is not entered again, so cycles cost nothing); the limit bounds the stack.
        self.limits.check(Limit::Depth, self.depth + 1, &path)?;
        let id = self.push(Node::bare(Kind::Pending));
        self.loaded.insert(location.clone(), id);
        self.depth += 1;
        let node = self.build(&location, &value);
        self.depth -= 1;
        self.nodes[id] = node?;
        Ok(id)
    }

    fn child(&mut self, location: &Location, suffix: &str) -> Result<NodeId, SchemaError> {
        self.load((location.0, format!("{}/{}", location.1, suffix)))
    }

    fn build(&mut self, location: &Location, value: &Value) -> Result<Node, SchemaError> {
        let path = Self::path_of(location);
        let map = match value {
            Value::Bool(true) => return Ok(Node::bare(Kind::Empty)),
            Value::Bool(false) => return Ok(Node::bare(Kind::False)),
            Value::Object(map) => map,
            _ => {
                return Err(err(
                    SchemaErrorKind::Invalid,
                    &path,
                    "A schema must be an object or a boolean.",
                ));
            }
        };
        let mut parts: Vec<NodeId> = Vec::new();
        let modern = self.dialect.is_modern();

        if let Some(reference) = map.get("$ref") {
            let reference = reference.as_str().ok_or_else(|| {
                err(
                    SchemaErrorKind::Invalid,
                    &format!("{path}/$ref"),
                    "'$ref' must be a string.",
                )
            })?;
            let base = self.base_at(location);
            let target = self.lookup(&format!("{path}/$ref"), &base, reference)?;
            if self.value_at(&target).is_none() {
                return Err(err(
                    SchemaErrorKind::UnknownType,
                    &format!("{path}/$ref"),
                    format!("'$ref' '{reference}' points at a location that does not exist."),
                ));
            }
            let target = self.load(target)?;
            if !modern {
                let mut node = Node::bare(Kind::Ref(target));
                node.canonical = canonical(value);
                return Ok(node);
            }
            parts.push(self.push(Node::bare(Kind::Ref(target))));
        }
        if let Some(values) = map.get("enum") {
            let values = values.as_array().ok_or_else(|| {
                err(
                    SchemaErrorKind::Invalid,
                    &format!("{path}/enum"),
                    "'enum' must be an array.",
                )
            })?;
            self.limits
                .check(Limit::EnumSymbols, values.len(), &format!("{path}/enum"))?;
            parts.push(self.push(Node::bare(Kind::Enum(values.clone()))));
        }
        let mut combined = Vec::new();
        for criterion in [Criterion::All, Criterion::Any, Criterion::One] {
            let Some(list) = map.get(criterion.keyword()) else {
                continue;
            };
            let items = list.as_array().ok_or_else(|| {
                err(
                    SchemaErrorKind::Invalid,
                    &format!("{path}/{}", criterion.keyword()),
                    format!("'{}' must be an array of schemas.", criterion.keyword()),
                )
            })?;
            self.limits.check(
                Limit::Branches,
                items.len(),
                &format!("{path}/{}", criterion.keyword()),
            )?;
            let mut subs = Vec::new();
            for i in 0..items.len() {
                subs.push(self.child(location, &format!("{}/{i}", criterion.keyword()))?);
            }
            combined.push(self.push(Node::bare(Kind::Combined(criterion, subs))));
        }
        match combined.len() {
            0 => {}
            1 => parts.push(combined[0]),
            _ => parts.push(self.push(Node::bare(Kind::Combined(Criterion::All, combined)))),
        }
        if map.contains_key("not") {
            let inner = self.child(location, "not")?;
            parts.push(self.push(Node::bare(Kind::Not(inner))));
        }
        if let Some(value) = map.get("const") {
            parts.push(self.push(Node::bare(Kind::Const(value.clone()))));
        }
        match map.get("type") {
            Some(Value::String(name)) => {
                let kind = self.typed(location, map, name, true)?;
                parts.push(self.push(Node::bare(kind)));
            }
            Some(Value::Array(names)) => {
                let mut subs = Vec::new();
                for (i, name) in names.iter().enumerate() {
                    let name = name.as_str().ok_or_else(|| {
                        err(
                            SchemaErrorKind::Invalid,
                            &format!("{path}/type/{i}"),
                            "'type' entries must be strings.",
                        )
                    })?;
                    let kind = self.typed(location, map, name, !modern)?;
                    subs.push(self.push(Node::bare(kind)));
                }
                if subs.len() == 1 {
                    parts.push(subs[0]);
                } else {
                    parts.push(self.push(Node::bare(Kind::Combined(Criterion::Any, subs))));
                }
                if modern {
                    self.sniff(location, map, &mut parts)?;
                }
            }
            Some(_) => {
                return Err(err(
                    SchemaErrorKind::Invalid,
                    &format!("{path}/type"),
                    "'type' must be a string or an array of strings.",
                ));
            }
            None => self.sniff(location, map, &mut parts)?,
        }
        if map.contains_key("if") {
            for keyword in ["if", "then", "else"] {
                if map.contains_key(keyword) {
                    self.child(location, keyword)?;
                }
            }
            parts.push(self.push(Node::bare(Kind::Conditional)));
        }
        for defs in ["definitions", "$defs"] {
            if let Some(Value::Object(entries)) = map.get(defs) {
                self.definitions
                    .add(entries.len(), &format!("{path}/{defs}"))?;
                let keys: Vec<String> = entries.keys().cloned().collect();
                for key in keys {
                    self.child(location, &format!("{defs}/{}", escape(&key)))?;
                }
            }
        }
        let kind = match parts.len() {
            0 => Kind::Empty,
            1 => {
                // The part's node is left behind as `Pending`, reachable from nowhere.
                let only = parts[0];
                std::mem::replace(&mut self.nodes[only].kind, Kind::Pending)
            }
            _ => Kind::Combined(Criterion::All, parts),
        };
        let id_value = map.get(self.id_keyword()).and_then(Value::as_str);
        let string_field = |key: &str| -> Result<Option<String>, SchemaError> {
            match map.get(key) {
                None => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(err(
                    SchemaErrorKind::Invalid,
                    &format!("{path}/{key}"),
                    format!("'{key}' must be a string."),
                )),
            }
        };
        let canonical_text = canonical(value);
        Ok(Node {
            kind,
            about: About {
                id: id_value.map(str::to_string),
                title: string_field("title")?,
                description: string_field("description")?,
                default: map.get("default").cloned(),
                connect_type: map
                    .get("connect.type")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            }
            .boxed(),
            shape: shape_of(&canonical_text),
            canonical: canonical_text,
        })
    }

    /// Type-less keyword groups: each group present yields a node of its class.
    fn sniff(
        &mut self,
        location: &Location,
        map: &Map<String, Value>,
        parts: &mut Vec<NodeId>,
    ) -> Result<(), SchemaError> {
        let modern = self.dialect.is_modern();
        let has = |keys: &[&str]| keys.iter().any(|k| map.contains_key(*k));
        if has(ARRAY_KEYWORDS) || (modern && has(MODERN_ARRAY_KEYWORDS)) {
            let kind = self.typed(location, map, "array", true)?;
            parts.push(self.push(Node::bare(kind)));
        }
        if has(OBJECT_KEYWORDS) || (modern && has(MODERN_OBJECT_KEYWORDS)) {
            let kind = self.typed(location, map, "object", true)?;
            parts.push(self.push(Node::bare(kind)));
        }
        if has(NUMBER_KEYWORDS) {
            let kind = self.typed(location, map, "number", true)?;
            parts.push(self.push(Node::bare(kind)));
        }
        let string_keys: &[&str] = if modern {
            &STRING_KEYWORDS[..3]
        } else {
            STRING_KEYWORDS
        };
        if has(string_keys) {
            let kind = self.typed(location, map, "string", true)?;
            parts.push(self.push(Node::bare(kind)));
        }
        Ok(())
    }

    fn typed(
        &mut self,
        location: &Location,
        map: &Map<String, Value>,
        name: &str,
        with_keywords: bool,
    ) -> Result<Kind, SchemaError> {
        let path = Self::path_of(location);
        let uint = |key: &str| -> Result<Option<u64>, SchemaError> {
            match map.get(key) {
                None => Ok(None),
                Some(v) => v
                    .as_u64()
                    .or_else(|| {
                        v.as_f64()
                            .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                            .map(|f| f as u64)
                    })
                    .map(Some)
                    .ok_or_else(|| {
                        err(
                            SchemaErrorKind::Invalid,
                            &format!("{path}/{key}"),
                            format!("'{key}' must be a non-negative integer."),
                        )
                    }),
            }
        };
        let number = |key: &str| -> Result<Option<f64>, SchemaError> {
            match map.get(key) {
                None | Some(Value::Bool(_)) => Ok(None),
                Some(v) => v.as_f64().map(Some).ok_or_else(|| {
                    err(
                        SchemaErrorKind::Invalid,
                        &format!("{path}/{key}"),
                        format!("'{key}' must be a number."),
                    )
                }),
            }
        };
        let kind = match name {
            "string" => {
                let mut node = StringNode::default();
                if with_keywords {
                    node.max_length = uint("maxLength")?;
                    node.min_length = uint("minLength")?;
                    node.pattern = match map.get("pattern") {
                        None => None,
                        Some(Value::String(p)) => Some(p.clone()),
                        Some(_) => {
                            return Err(err(
                                SchemaErrorKind::Invalid,
                                &format!("{path}/pattern"),
                                "'pattern' must be a string.",
                            ));
                        }
                    };
                }
                Kind::String(node)
            }
            "number" | "integer" => {
                let mut node = NumberNode {
                    integer: name == "integer",
                    ..NumberNode::default()
                };
                if with_keywords {
                    node.maximum = number("maximum")?;
                    node.minimum = number("minimum")?;
                    node.exclusive_maximum = number("exclusiveMaximum")?;
                    node.exclusive_minimum = number("exclusiveMinimum")?;
                    node.exclusive_maximum_flag = map
                        .get("exclusiveMaximum")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    node.exclusive_minimum_flag = map
                        .get("exclusiveMinimum")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    node.multiple_of = match map.get("multipleOf") {
                        None => None,
                        Some(Value::Number(n)) => Some(n.to_string()),
                        Some(_) => {
                            return Err(err(
                                SchemaErrorKind::Invalid,
                                &format!("{path}/multipleOf"),
                                "'multipleOf' must be a number.",
                            ));
                        }
                    };
                }
                Kind::Number(node)
            }
            "boolean" => Kind::Boolean,
            "null" => Kind::Null,
            "object" => {
                let mut node = ObjectNode {
                    permits_additional: true,
                    ..ObjectNode::default()
                };
                if with_keywords {
                    self.object_keywords(location, map, &mut node)?;
                }
                Kind::Object(Box::new(node))
            }
            "array" => {
                let mut node = ArrayNode {
                    permits_additional: true,
                    ..ArrayNode::default()
                };
                if with_keywords {
                    self.array_keywords(location, map, &mut node)?;
                }
                Kind::Array(Box::new(node))
            }
            other => {
                return Err(err(
                    SchemaErrorKind::Invalid,
                    &format!("{path}/type"),
                    format!("'{other}' is not a JSON Schema type."),
                ));
            }
        };
        Ok(kind)
    }

    fn object_keywords(
        &mut self,
        location: &Location,
        map: &Map<String, Value>,
        node: &mut ObjectNode,
    ) -> Result<(), SchemaError> {
        let path = Self::path_of(location);
        let modern = self.dialect.is_modern();
        if let Some(props) = map.get("properties") {
            let props = props.as_object().ok_or_else(|| {
                err(
                    SchemaErrorKind::Invalid,
                    &format!("{path}/properties"),
                    "'properties' must be an object.",
                )
            })?;
            self.fields
                .add(props.len(), &format!("{path}/properties"))?;
            let keys: Vec<String> = props.keys().cloned().collect();
            for key in keys {
                let child = self.child(location, &format!("properties/{}", escape(&key)))?;
                node.properties.push((key, child));
            }
        }
        if let Some(required) = map.get("required") {
            let list = required.as_array().ok_or_else(|| {
                err(
                    SchemaErrorKind::Invalid,
                    &format!("{path}/required"),
                    "'required' must be an array of property names.",
                )
            })?;
            for (i, name) in list.iter().enumerate() {
                let name = name.as_str().ok_or_else(|| {
                    err(
                        SchemaErrorKind::Invalid,
                        &format!("{path}/required/{i}"),
                        "'required' entries must be strings.",
                    )
                })?;
                node.required.push(name.to_string());
            }
        }
        match map.get("additionalProperties") {
            None | Some(Value::Bool(true)) => {}
            Some(Value::Bool(false)) => node.permits_additional = false,
            Some(_) => node.additional_schema = Some(self.child(location, "additionalProperties")?),
        }
        if let Some(Value::Object(patterns)) = map.get("patternProperties") {
            let keys: Vec<String> = patterns.keys().cloned().collect();
            for key in keys {
                regex::Regex::new(&key).map_err(|e| {
                    err(
                        SchemaErrorKind::Invalid,
                        &format!("{path}/patternProperties/{}", escape(&key)),
                        format!("'{key}' is not a valid regular expression: {e}"),
                    )
                })?;
                let child = self.child(location, &format!("patternProperties/{}", escape(&key)))?;
                node.pattern_properties.push((key, child));
            }
        }
        if modern && map.contains_key("unevaluatedProperties") {
            node.unevaluated = Some(self.child(location, "unevaluatedProperties")?);
        }
        let mut dependency_sources: Vec<&str> = Vec::new();
        if modern {
            dependency_sources.extend(["dependentRequired", "dependentSchemas"]);
        } else {
            dependency_sources.push("dependencies");
        }
        for keyword in dependency_sources {
            let Some(Value::Object(entries)) = map.get(keyword) else {
                continue;
            };
            for (key, value) in entries {
                match value {
                    Value::Array(names) => node.property_dependencies.push((
                        key.clone(),
                        names
                            .iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect(),
                    )),
                    _ => {
                        let child = self.child(location, &format!("{keyword}/{}", escape(key)))?;
                        node.schema_dependencies.push((key.clone(), child));
                    }
                }
            }
        }
        let uint = |key: &str| map.get(key).and_then(Value::as_u64);
        node.max_properties = uint("maxProperties");
        node.min_properties = uint("minProperties");
        Ok(())
    }

    fn array_keywords(
        &mut self,
        location: &Location,
        map: &Map<String, Value>,
        node: &mut ArrayNode,
    ) -> Result<(), SchemaError> {
        let modern = self.dialect.is_modern();
        let has_prefix = modern && map.contains_key("prefixItems");
        if has_prefix && let Some(Value::Array(items)) = map.get("prefixItems") {
            for i in 0..items.len() {
                node.item_schemas
                    .push(self.child(location, &format!("prefixItems/{i}"))?);
            }
        }
        match map.get("items") {
            None => {}
            Some(Value::Array(items)) if !modern || self.dialect == Dialect::Draft201909 => {
                for i in 0..items.len() {
                    node.item_schemas
                        .push(self.child(location, &format!("items/{i}"))?);
                }
            }
            Some(Value::Bool(false)) if modern => node.permits_additional = false,
            Some(Value::Bool(true)) if modern => {}
            Some(_) => {
                let child = self.child(location, "items")?;
                if has_prefix {
                    node.additional_schema = Some(child);
                } else {
                    node.all_items = Some(child);
                }
            }
        }
        match map.get("additionalItems") {
            None | Some(Value::Bool(true)) => {}
            Some(Value::Bool(false)) => node.permits_additional = false,
            Some(_) => node.additional_schema = Some(self.child(location, "additionalItems")?),
        }
        if modern && map.contains_key("unevaluatedItems") {
            node.unevaluated = Some(self.child(location, "unevaluatedItems")?);
        }
        if map.contains_key("contains") {
            self.child(location, "contains")?;
            if modern {
                node.min_contains = Some(1);
            }
        }
        let uint = |key: &str| map.get(key).and_then(Value::as_u64);
        node.max_items = uint("maxItems");
        node.min_items = uint("minItems");
        node.unique_items = map
            .get("uniqueItems")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if let Some(v) = uint("minContains") {
            node.min_contains = Some(v);
        }
        node.max_contains = uint("maxContains");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(text: &str) -> Model {
        let value: Value = serde_json::from_str(text).expect("JSON");
        Loader::new(value, Dialect::Draft7, &[], &Limits::default())
            .and_then(Loader::load_root)
            .expect("schema loads")
    }

    /// Parsed schemas stay in the registry's cache, one node per subschema: annotations are
    /// boxed and the loader's spare capacity is given back.
    #[test]
    fn a_loaded_model_keeps_no_spare_room() {
        assert!(
            std::mem::size_of::<Node>() <= 160,
            "{} bytes",
            std::mem::size_of::<Node>()
        );
        let properties: Vec<String> = (0..40)
            .map(|i| format!(r#""f{i}": {{"type": ["null", "string"]}}"#))
            .collect();
        let loaded = model(&format!(
            r#"{{"type": "object", "properties": {{{}}}}}"#,
            properties.join(",")
        ));
        assert_eq!(loaded.nodes.len(), loaded.nodes.capacity());
        assert!(loaded.nodes.iter().all(|n| n.about.is_none()));
    }

    #[test]
    fn annotations_read_back_and_only_annotated_nodes_carry_them() {
        let loaded = model(
            r#"{"type": "object", "title": "Order", "properties": {
                "id": {"type": "string", "description": "key", "default": "x", "connect.type": "bytes"},
                "n": {"type": "integer"}}}"#,
        );
        let root = &loaded.nodes[loaded.root];
        assert_eq!(root.about().title.as_deref(), Some("Order"));
        let Kind::Object(object) = &root.kind else {
            panic!("an object")
        };
        let node = |name: &str| {
            let (_, id) = object.properties.iter().find(|(n, _)| n == name).unwrap();
            &loaded.nodes[loaded.resolve(*id)]
        };
        let id = node("id").about();
        assert_eq!(id.description.as_deref(), Some("key"));
        assert_eq!(id.default, Some(Value::from("x")));
        assert_eq!(id.connect_type.as_deref(), Some("bytes"));
        assert!(node("n").about.is_none());
        assert_eq!(node("n").about(), &About::default());
    }
}

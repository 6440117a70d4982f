//! Seeded generators of random schemas in the four formats: recursive (self and mutual
//! references through named types, `$ref`s and message types), deep, wide, and a mutated
//! second version of each so that checks have differences to judge.

use proptest::prelude::RngExt;
use proptest::test_runner::TestRng;
use serde_json::{Map, Value, json};

/// How large one generated schema may grow.
#[derive(Clone, Copy)]
pub struct Shape {
    pub depth: usize,
    pub width: usize,
}

impl Shape {
    pub fn random(rng: &mut TestRng) -> Shape {
        match rng.random_range(0..10) {
            // Mostly small, sometimes deep and narrow, sometimes shallow and wide.
            0 => Shape {
                depth: rng.random_range(10..40),
                width: 2,
            },
            1 => Shape {
                depth: 2,
                width: rng.random_range(20..300),
            },
            _ => Shape {
                depth: rng.random_range(1..7),
                width: rng.random_range(1..6),
            },
        }
    }
}

fn pick<'a, T>(rng: &mut TestRng, items: &'a [T]) -> &'a T {
    &items[rng.random_range(0..items.len())]
}

// ----- Avro ----------------------------------------------------------------------------

/// Avro: records, enums, fixed, arrays, maps and unions; named types may refer to any named
/// type already opened, including the records being defined (recursion).
pub struct Avro {
    names: Vec<String>,
    next: usize,
}

impl Avro {
    pub fn schema(rng: &mut TestRng, shape: Shape) -> Value {
        let mut g = Avro {
            names: Vec::new(),
            next: 0,
        };
        g.record(rng, shape, shape.depth)
    }

    fn name(&mut self) -> String {
        self.next += 1;
        format!("T{}", self.next)
    }

    fn record(&mut self, rng: &mut TestRng, shape: Shape, depth: usize) -> Value {
        let name = self.name();
        self.names.push(name.clone());
        let n = rng.random_range(0..=shape.width);
        let fields: Vec<Value> = (0..n)
            .map(|i| {
                let ty = self.ty(rng, shape, depth.saturating_sub(1));
                let mut field = json!({"name": format!("f{i}"), "type": ty});
                if rng.random_bool(0.3) && field["type"].is_array() {
                    field["default"] = Value::Null;
                }
                field
            })
            .collect();
        json!({"type": "record", "name": name, "fields": fields})
    }

    fn ty(&mut self, rng: &mut TestRng, shape: Shape, depth: usize) -> Value {
        let choice = if depth == 0 {
            rng.random_range(0..3)
        } else {
            rng.random_range(0..10)
        };
        match choice {
            0 => json!(pick(
                rng,
                &["int", "long", "string", "boolean", "double", "bytes"]
            )),
            1 if !self.names.is_empty() => {
                let name = pick(rng, &self.names).clone();
                if rng.random_bool(0.5) {
                    json!(["null", name])
                } else {
                    json!({"type": "array", "items": name})
                }
            }
            2 => {
                let symbols: Vec<String> = (0..rng.random_range(1..6))
                    .map(|i| format!("S{i}"))
                    .collect();
                let name = self.name();
                self.names.push(name.clone());
                json!({"type": "enum", "name": name, "symbols": symbols})
            }
            3 => json!({"type": "array", "items": self.ty(rng, shape, depth - 1)}),
            4 => json!({"type": "map", "values": self.ty(rng, shape, depth - 1)}),
            5 | 6 => {
                let mut branches = vec![json!("null")];
                let mut seen = std::collections::HashSet::new();
                for _ in 0..rng.random_range(1..4) {
                    let b = self.ty(rng, shape, depth - 1);
                    let key = match &b {
                        Value::Object(o) => o
                            .get("name")
                            .cloned()
                            .unwrap_or_else(|| o.get("type").cloned().unwrap_or(Value::Null)),
                        other => other.clone(),
                    };
                    if !b.is_array() && key != json!("null") && seen.insert(key.to_string()) {
                        branches.push(b);
                    }
                }
                Value::Array(branches)
            }
            7 => {
                let name = self.name();
                self.names.push(name.clone());
                json!({"type": "fixed", "name": name, "size": rng.random_range(1..20)})
            }
            _ => self.record(rng, shape, depth),
        }
    }
}

/// A changed copy: a field removed, added (with or without a default), or retyped, somewhere.
pub fn mutate_avro(rng: &mut TestRng, schema: &Value) -> Value {
    let mut out = schema.clone();
    let holders = pointers_to(&out, "fields");
    if holders.is_empty() {
        return out;
    }
    let at = pick(rng, &holders).clone();
    let Some(Value::Array(fields)) = out.pointer_mut(&at).and_then(|r| r.get_mut("fields")) else {
        return out;
    };
    match rng.random_range(0..4) {
        0 if !fields.is_empty() => {
            let i = rng.random_range(0..fields.len());
            fields.remove(i);
        }
        1 => fields.push(json!({"name": "added", "type": "string", "default": ""})),
        2 => fields.push(json!({"name": "added", "type": "long"})),
        _ if !fields.is_empty() => {
            let i = rng.random_range(0..fields.len());
            fields[i]["type"] = json!(pick(rng, &["int", "long", "string", "float"]));
        }
        _ => {}
    }
    out
}

/// JSON pointers of every object holding `key`, found with an explicit stack.
fn pointers_to(value: &Value, key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![(value, String::new())];
    while let Some((v, at)) = stack.pop() {
        match v {
            Value::Object(map) => {
                if map.contains_key(key) {
                    out.push(at.clone());
                }
                for (k, child) in map {
                    let k = k.replace('~', "~0").replace('/', "~1");
                    stack.push((child, format!("{at}/{k}")));
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    stack.push((child, format!("{at}/{i}")));
                }
            }
            _ => {}
        }
    }
    out
}

// ----- JSON Schema ---------------------------------------------------------------------

/// JSON Schema: objects, arrays, combinators, enums, conditionals and `$ref`s to the root,
/// to definitions (which refer to each other) and, in 2020-12, `$dynamicRef`.
pub fn json_schema(rng: &mut TestRng, shape: Shape) -> Value {
    let defs = rng.random_range(0..4);
    let dynamic = rng.random_bool(0.2);
    let mut root = json_node(rng, shape, shape.depth, defs, dynamic);
    let Value::Object(map) = &mut root else {
        return root;
    };
    if defs > 0 {
        let definitions: Map<String, Value> = (0..defs)
            .map(|i| {
                (
                    format!("D{i}"),
                    json_node(rng, shape, shape.depth, defs, dynamic),
                )
            })
            .collect();
        map.insert("definitions".into(), Value::Object(definitions));
    }
    if dynamic {
        map.insert(
            "$schema".into(),
            json!("https://json-schema.org/draft/2020-12/schema"),
        );
        map.insert("$dynamicAnchor".into(), json!("node"));
        // In 2020-12 `definitions` is still a valid location for `$ref`s.
    } else if rng.random_bool(0.5) {
        map.insert(
            "$schema".into(),
            json!("http://json-schema.org/draft-07/schema#"),
        );
    }
    root
}

fn json_node(rng: &mut TestRng, shape: Shape, depth: usize, defs: usize, dynamic: bool) -> Value {
    let choice = if depth == 0 {
        rng.random_range(0..4)
    } else {
        rng.random_range(0..13)
    };
    let sub = |rng: &mut TestRng| json_node(rng, shape, depth.saturating_sub(1), defs, dynamic);
    match choice {
        0 => json!({"type": pick(rng, &["string", "integer", "number", "boolean", "null"])}),
        1 => json!({"$ref": "#"}),
        2 if defs > 0 => json!({"$ref": format!("#/definitions/D{}", rng.random_range(0..defs))}),
        3 => {
            json!({"enum": (0..rng.random_range(1..5)).map(|i| json!(format!("v{i}"))).collect::<Vec<_>>()})
        }
        4..=6 => {
            let n = rng.random_range(0..=shape.width);
            let properties: Map<String, Value> =
                (0..n).map(|i| (format!("p{i}"), sub(rng))).collect();
            let required: Vec<Value> = (0..n)
                .filter(|_| rng.random_bool(0.3))
                .map(|i| json!(format!("p{i}")))
                .collect();
            let mut object = json!({"type": "object", "properties": properties});
            if !required.is_empty() {
                object["required"] = Value::Array(required);
            }
            match rng.random_range(0..4) {
                0 => object["additionalProperties"] = json!(false),
                1 => object["additionalProperties"] = sub(rng),
                _ => {}
            }
            object
        }
        7 => json!({"type": "array", "items": sub(rng)}),
        8 | 9 => {
            let keyword = *pick(rng, &["anyOf", "oneOf", "allOf"]);
            let branches: Vec<Value> = (0..rng.random_range(1..=shape.width.max(2)))
                .map(|_| sub(rng))
                .collect();
            json!({ keyword: branches })
        }
        10 => json!({"not": sub(rng)}),
        11 => json!({"if": sub(rng), "then": sub(rng), "else": sub(rng)}),
        12 if dynamic => json!({"type": "array", "items": {"$dynamicRef": "#node"}}),
        _ => json!({"type": "string", "maxLength": rng.random_range(1..100)}),
    }
}

/// A changed copy: a property removed, added, made required, or retyped, somewhere.
pub fn mutate_json(rng: &mut TestRng, schema: &Value) -> Value {
    let mut out = schema.clone();
    let holders = pointers_to(&out, "properties");
    if holders.is_empty() {
        if let Value::Object(map) = &mut out {
            map.insert("properties".into(), json!({"added": {"type": "string"}}));
        }
        return out;
    }
    let at = pick(rng, &holders).clone();
    let Some(Value::Object(object)) = out.pointer_mut(&at) else {
        return out;
    };
    let Some(Value::Object(properties)) = object.get_mut("properties") else {
        return out;
    };
    let keys: Vec<String> = properties.keys().cloned().collect();
    match rng.random_range(0..4) {
        0 if !keys.is_empty() => {
            properties.remove(pick(rng, &keys));
        }
        1 => {
            properties.insert("added".into(), json!({"type": "integer"}));
        }
        2 if !keys.is_empty() => {
            let key = pick(rng, &keys).clone();
            object.insert("required".into(), json!([key]));
        }
        _ if !keys.is_empty() => {
            let key = pick(rng, &keys).clone();
            properties.insert(key, json!({"type": "boolean"}));
        }
        _ => {}
    }
    out
}

// ----- Protobuf ------------------------------------------------------------------------

/// A Protobuf file as a model, printed to text: messages (nested ones too) whose fields may
/// be scalars, enums, maps, oneofs, or any message of the file including themselves.
#[derive(Clone, Debug)]
pub struct ProtoFile {
    pub messages: Vec<ProtoMessage>,
}

#[derive(Clone, Debug)]
pub struct ProtoMessage {
    pub name: String,
    pub fields: Vec<ProtoField>,
    pub nested: Vec<ProtoMessage>,
}

#[derive(Clone, Debug)]
pub struct ProtoField {
    pub name: String,
    pub ty: String,
    pub label: &'static str,
    pub number: u32,
    pub in_oneof: bool,
}

pub fn proto(rng: &mut TestRng, shape: Shape) -> ProtoFile {
    let count = rng.random_range(1..=shape.width.clamp(1, 40));
    let names: Vec<String> = (0..count).map(|i| format!("M{i}")).collect();
    let messages = names
        .iter()
        .map(|name| proto_message(rng, shape, shape.depth.min(30), name, &names))
        .collect();
    ProtoFile { messages }
}

fn proto_message(
    rng: &mut TestRng,
    shape: Shape,
    depth: usize,
    name: &str,
    names: &[String],
) -> ProtoMessage {
    let nested = if depth > 0 && rng.random_bool(0.3) {
        vec![proto_message(
            rng,
            shape,
            depth - 1,
            &format!("{name}N"),
            names,
        )]
    } else {
        Vec::new()
    };
    let fields = (0..rng.random_range(0..=shape.width.min(60)))
        .map(|i| {
            let ty = match rng.random_range(0..6) {
                0 | 1 => pick(
                    rng,
                    &["int32", "int64", "string", "bool", "bytes", "double"],
                )
                .to_string(),
                2 => "Color".to_string(),
                3 => format!("map<string, {}>", pick(rng, names)),
                _ => pick(rng, names).clone(),
            };
            let label = if ty.starts_with("map<") {
                ""
            } else {
                pick(rng, &["", "repeated ", "optional "])
            };
            let in_oneof = label.is_empty() && !ty.starts_with("map<") && rng.random_bool(0.2);
            ProtoField {
                name: format!("f{i}"),
                ty,
                label,
                number: i as u32 + 1,
                in_oneof,
            }
        })
        .collect();
    ProtoMessage {
        name: name.to_string(),
        fields,
        nested,
    }
}

impl ProtoFile {
    pub fn text(&self) -> String {
        let mut out = String::from(
            "syntax = \"proto3\";\npackage gen;\nenum Color { RED = 0; GREEN = 1; }\n",
        );
        for m in &self.messages {
            m.print(&mut out);
        }
        out
    }

    /// A changed copy: a field removed, added, renumbered or retyped.
    pub fn mutate(&self, rng: &mut TestRng) -> ProtoFile {
        let mut out = self.clone();
        let i = rng.random_range(0..out.messages.len());
        let fields = &mut out.messages[i].fields;
        match rng.random_range(0..4) {
            0 if !fields.is_empty() => {
                let j = rng.random_range(0..fields.len());
                fields.remove(j);
            }
            1 => fields.push(ProtoField {
                name: "added".into(),
                ty: "string".into(),
                label: "",
                number: 1000,
                in_oneof: false,
            }),
            2 if !fields.is_empty() => {
                let j = rng.random_range(0..fields.len());
                fields[j].number += 500;
            }
            _ if !fields.is_empty() => {
                let j = rng.random_range(0..fields.len());
                if !fields[j].ty.starts_with("map<") {
                    fields[j].ty = "int64".into();
                }
            }
            _ => {}
        }
        out
    }
}

impl ProtoMessage {
    fn print(&self, out: &mut String) {
        out.push_str(&format!("message {} {{\n", self.name));
        for n in &self.nested {
            n.print(out);
        }
        let oneof: Vec<&ProtoField> = self.fields.iter().filter(|f| f.in_oneof).collect();
        for f in self.fields.iter().filter(|f| !f.in_oneof) {
            out.push_str(&format!(
                "  {}{} {} = {};\n",
                f.label, f.ty, f.name, f.number
            ));
        }
        if !oneof.is_empty() {
            out.push_str("  oneof choice {\n");
            for f in oneof {
                out.push_str(&format!("    {} {} = {};\n", f.ty, f.name, f.number));
            }
            out.push_str("  }\n");
        }
        out.push_str("}\n");
    }
}

// ----- Iceberg -------------------------------------------------------------------------

/// Iceberg: nested structs, lists and maps, ids assigned in order (sometimes starting near
/// the largest id allowed); no recursion exists in the format, so depth and width are what
/// a hostile table schema can grow.
pub struct Iceberg {
    next: i64,
}

const ICEBERG_PRIMITIVES: [&str; 12] = [
    "int",
    "long",
    "float",
    "double",
    "string",
    "boolean",
    "date",
    "timestamptz",
    "binary",
    "decimal(9, 2)",
    "decimal(18,2)",
    "fixed[16]",
];

impl Iceberg {
    pub fn schema(rng: &mut TestRng, shape: Shape) -> Value {
        let start = if rng.random_bool(0.1) {
            2_147_483_447 - 10_000
        } else {
            1
        };
        let mut g = Iceberg { next: start };
        let fields = g.fields(rng, shape, shape.depth);
        json!({"type": "struct", "schema-id": 0, "fields": fields})
    }

    fn id(&mut self) -> i64 {
        self.next += 1;
        self.next
    }

    fn fields(&mut self, rng: &mut TestRng, shape: Shape, depth: usize) -> Vec<Value> {
        (0..shape.width.max(1))
            .map(|i| {
                let id = self.id();
                let ty = self.ty(rng, shape, depth);
                json!({"id": id, "name": format!("c{i}"), "required": rng.random_bool(0.3), "type": ty})
            })
            .collect()
    }

    fn ty(&mut self, rng: &mut TestRng, shape: Shape, depth: usize) -> Value {
        if depth == 0 || rng.random_bool(0.5) {
            return json!(pick(rng, &ICEBERG_PRIMITIVES));
        }
        match rng.random_range(0..3) {
            0 => {
                json!({"type": "struct", "fields": self.fields(rng, Shape { width: shape.width.min(4), ..shape }, depth - 1)})
            }
            1 => {
                let element_id = self.id();
                json!({"type": "list", "element-id": element_id, "element-required": rng.random_bool(0.5), "element": self.ty(rng, shape, depth - 1)})
            }
            _ => {
                let (key_id, value_id) = (self.id(), self.id());
                json!({"type": "map", "key-id": key_id, "key": "string", "value-id": value_id, "value-required": false, "value": self.ty(rng, shape, depth - 1)})
            }
        }
    }
}

/// A next version: a few random evolution steps on top-level or nested fields (add, drop,
/// rename, retype, require, reorder, reuse an id).
pub fn mutate_iceberg(rng: &mut TestRng, schema: &Value) -> Value {
    let mut new = schema.clone();
    let mut structs = pointers_to(&new, "fields");
    structs.push("/fields".into());
    for _ in 0..rng.random_range(1..4) {
        let at = pick(rng, &structs).clone();
        let Some(fields) = new.pointer_mut(&at).and_then(Value::as_array_mut) else {
            continue;
        };
        let n = fields.len();
        match rng.random_range(0..7) {
            0 => fields.push(json!({"id": 2_000_000_000 + rng.random_range(0..1000), "name": format!("added{}", rng.random_range(0..1000)), "required": rng.random_bool(0.2), "type": "string"})),
            1 if n > 0 => {
                fields.remove(rng.random_range(0..n));
            }
            2 if n > 0 => fields[rng.random_range(0..n)]["name"] = json!(format!("renamed{}", rng.random_range(0..1000))),
            3 if n > 0 => fields[rng.random_range(0..n)]["type"] = json!(pick(rng, &ICEBERG_PRIMITIVES)),
            4 if n > 0 => fields[rng.random_range(0..n)]["required"] = json!(rng.random_bool(0.5)),
            5 if n > 1 => fields.swap(0, n - 1),
            6 if n > 0 => {
                let id = fields[0]["id"].clone();
                fields.push(json!({"id": id, "name": "reused", "required": false, "type": "int"}));
            }
            _ => {}
        }
    }
    new
}

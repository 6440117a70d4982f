//! Bounds on the size and shape of one schema, for what cannot be walked in linear time and
//! constant stack.
//!
//! Most walks over a schema are linear (each node once, cycles cut by visited sets or memos).
//! A few costs are not: nesting depth sets how deep the recursive walks go, and the number of
//! named types, fields, enum symbols and union branches multiplies into the pairwise
//! comparisons. Each of those gets a limit here, checked once while parsing, so that a schema
//! that passes parsing can be judged in bounded stack and memory. The defaults are far above
//! what real schemas use (the largest public ones we measured: Kubernetes' OpenAPI
//! definitions, about 700 named types nested at most ~20 deep through `$ref`s; FHIR's JSON
//! Schema, ~900 definitions and enums of a few hundred symbols; Avro schemas of large event
//! platforms, a few thousand fields), so only hostile or generated-gone-wrong input meets
//! them.

use crate::format::{SchemaError, SchemaErrorKind};
use std::fmt;

/// The limits one parse enforces. `Limits::default()` is what the registry and the command
/// line use unless configured otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// How deep types may nest, counting each named-type reference, `$ref` hop or message
    /// field that leads into another structure (cycles do not count: a recursive type is one
    /// level per distinct type on the way).
    pub max_depth: usize,
    /// Named types in one schema with its references: Avro records, enums and fixed, JSON
    /// Schema definitions and subschemas reached by `$ref`, Protobuf messages and enums.
    pub max_named_types: usize,
    /// Fields (JSON Schema properties) in one schema, over all its types.
    pub max_fields: usize,
    /// Symbols of one enum (JSON Schema: values of one `enum`).
    pub max_enum_symbols: usize,
    /// Branches of one Avro union or JSON Schema `anyOf`/`oneOf`/`allOf`.
    pub max_branches: usize,
    /// Nesting of braces and brackets in Protobuf text: message bodies and option aggregate
    /// values (`option (o) = { a { b { ... } } }`).
    pub max_protobuf_nesting: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_depth: 64,
            max_named_types: 20_000,
            max_fields: 100_000,
            max_enum_symbols: 50_000,
            max_branches: 2_500,
            max_protobuf_nesting: 64,
        }
    }
}

/// Which limit a schema met; the names are the ones the flags and the documentation use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Depth,
    NamedTypes,
    Fields,
    EnumSymbols,
    Branches,
    ProtobufNesting,
}

impl Limit {
    pub const ALL: [Limit; 6] = [
        Limit::Depth,
        Limit::NamedTypes,
        Limit::Fields,
        Limit::EnumSymbols,
        Limit::Branches,
        Limit::ProtobufNesting,
    ];

    /// The limit's name, as in `--max-depth` and in error messages.
    pub fn name(self) -> &'static str {
        match self {
            Limit::Depth => "max-depth",
            Limit::NamedTypes => "max-named-types",
            Limit::Fields => "max-fields",
            Limit::EnumSymbols => "max-enum-symbols",
            Limit::Branches => "max-branches",
            Limit::ProtobufNesting => "max-protobuf-nesting",
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Limits {
    /// The value of one limit.
    pub fn get(&self, limit: Limit) -> usize {
        match limit {
            Limit::Depth => self.max_depth,
            Limit::NamedTypes => self.max_named_types,
            Limit::Fields => self.max_fields,
            Limit::EnumSymbols => self.max_enum_symbols,
            Limit::Branches => self.max_branches,
            Limit::ProtobufNesting => self.max_protobuf_nesting,
        }
    }

    /// `Ok` when `count` is within `limit`, else the error naming the limit, its value and
    /// the path where it was met.
    pub fn check(&self, limit: Limit, count: usize, path: &str) -> Result<(), SchemaError> {
        let max = self.get(limit);
        if count <= max {
            return Ok(());
        }
        Err(exceeded(limit, max, count, path))
    }
}

fn exceeded(limit: Limit, max: usize, count: usize, path: &str) -> SchemaError {
    SchemaError::new(
        SchemaErrorKind::LimitExceeded,
        path,
        format!(
            "The schema exceeds the limit {} = {max} (found {count}); the limit keeps every check bounded and can be raised on the server and the command line.",
            limit.name()
        ),
    )
}

/// A counter for one limit over a walk: `add` fails as soon as the total passes the limit.
pub struct Counter {
    limit: Limit,
    max: usize,
    count: usize,
}

impl Counter {
    pub fn new(limits: &Limits, limit: Limit) -> Counter {
        Counter {
            limit,
            max: limits.get(limit),
            count: 0,
        }
    }

    pub fn add(&mut self, n: usize, path: &str) -> Result<(), SchemaError> {
        self.count = self.count.saturating_add(n);
        if self.count <= self.max {
            return Ok(());
        }
        Err(exceeded(self.limit, self.max, self.count, path))
    }
}

/// The deepest nesting of `{`, `[` and `<` in `text` (with the byte offset where it is
/// reached), outside string literals and comments; stops counting at `cap + 1`. For text handed to a parser we do not
/// control, so that its recursion is bounded before it starts.
pub fn bracket_depth(text: &str, cap: usize) -> (usize, usize) {
    let bytes = text.as_bytes();
    let (mut depth, mut deepest, mut at) = (0usize, 0usize, 0usize);
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' | b'\'' => {
                let quote = bytes[i];
                i += 1;
                while i < bytes.len() && bytes[i] != quote && bytes[i] != b'\n' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'{' | b'[' | b'<' => {
                depth += 1;
                if depth > deepest {
                    deepest = depth;
                    at = i;
                    if deepest > cap {
                        return (deepest, at);
                    }
                }
            }
            b'}' | b']' | b'>' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    (deepest, at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_names_the_limit_value_and_path() {
        let limits = Limits {
            max_enum_symbols: 3,
            ..Limits::default()
        };
        assert!(limits.check(Limit::EnumSymbols, 3, "/symbols").is_ok());
        let err = limits
            .check(Limit::EnumSymbols, 4, "/symbols")
            .expect_err("over the limit");
        assert_eq!(err.kind, SchemaErrorKind::LimitExceeded);
        assert_eq!(err.path, "/symbols");
        assert!(err.message.contains("max-enum-symbols = 3"), "{err}");
        assert!(err.message.contains("found 4"), "{err}");
    }

    #[test]
    fn counter_fails_once_the_total_passes() {
        let limits = Limits {
            max_fields: 5,
            ..Limits::default()
        };
        let mut fields = Counter::new(&limits, Limit::Fields);
        assert!(fields.add(3, "/a").is_ok());
        assert!(fields.add(2, "/b").is_ok());
        let err = fields.add(1, "/c").expect_err("sixth field");
        assert_eq!(err.path, "/c");
        assert!(err.message.contains("max-fields = 5"), "{err}");
    }

    #[test]
    fn bracket_depth_skips_strings_and_comments() {
        assert_eq!(bracket_depth("a { b { c } } { }", 10).0, 2);
        assert_eq!(bracket_depth(r#"x = "{{{{" // {{{{"#, 10).0, 0);
        assert_eq!(bracket_depth("/* {{{ */ { }", 10).0, 1);
        let deep = format!("{}{}", "{".repeat(1000), "}".repeat(1000));
        let (depth, at) = bracket_depth(&deep, 64);
        assert_eq!((depth, at), (65, 64), "stops counting just past the cap");
    }
}

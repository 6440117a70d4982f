//! Compiling `.proto` text (or serialized descriptors) into a descriptor pool, without protoc.

use crate::builtin;
use base64::Engine;
use covenant_engine::{Limits, Reference, SchemaError, SchemaErrorKind};
use prost::Message;
use prost_reflect::DescriptorPool;
use prost_types::FileDescriptorProto;
use protox::file::{ChainFileResolver, File, FileResolver, GoogleFileResolver};
use std::collections::HashMap;

/// One file's content as a registry may hold it.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    Text(String),
    Descriptor(Box<FileDescriptorProto>),
}

impl Source {
    /// Confluent accepts either `.proto` text or a base64 `FileDescriptorProto`; text that is not
    /// valid base64 (anything with spaces or `;`) can only be text.
    pub(crate) fn detect(text: &str) -> Source {
        match decode_descriptor(text) {
            Some(fd) => Source::Descriptor(Box::new(fd)),
            None => Source::Text(text.to_string()),
        }
    }
}

/// Decodes a base64 `FileDescriptorProto`; `None` when `text` is not one.
pub(crate) fn decode_descriptor(text: &str) -> Option<FileDescriptorProto> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return None;
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(trimmed)
        .ok()?;
    FileDescriptorProto::decode(bytes.as_slice()).ok()
}

struct MemResolver(HashMap<String, Source>);

impl FileResolver for MemResolver {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        match self.0.get(name) {
            Some(Source::Text(text)) => File::from_source(name, text),
            Some(Source::Descriptor(fd)) => {
                let mut fd = (**fd).clone();
                fd.name = Some(name.to_string());
                Ok(File::from_file_descriptor_proto(fd))
            }
            None => Err(protox::Error::file_not_found(name)),
        }
    }
}

/// The file name given to a registry schema's own text; errors point into it.
pub(crate) fn main_file_name(references: &[Reference]) -> String {
    let mut name = String::from("schema.proto");
    let mut n = 1;
    while references.iter().any(|r| r.name == name) {
        n += 1;
        name = format!("schema{n}.proto");
    }
    name
}

/// Compiles `own` files (name, source) with `references` and the built-in imports available.
pub(crate) fn compile(
    own: &[(String, Source)],
    references: &[Reference],
    limits: &Limits,
) -> Result<DescriptorPool, SchemaError> {
    let mut files: HashMap<String, Source> = HashMap::new();
    for r in references {
        // An empty text for a well-known import means "the registry's own copy".
        if r.schema.trim().is_empty() {
            continue;
        }
        files.insert(r.name.clone(), Source::detect(&r.schema));
    }
    for (name, source) in own {
        files.insert(name.clone(), source.clone());
    }
    for (name, source) in &files {
        if let Source::Text(text) = source {
            crate::limits::prescan(name, text, limits)?;
        }
    }
    let builtins: HashMap<String, Source> = builtin::FILES
        .iter()
        .map(|(n, t)| (n.to_string(), Source::Text(t.to_string())))
        .collect();
    let mut chain = ChainFileResolver::new();
    chain.add(MemResolver(files));
    chain.add(MemResolver(builtins));
    chain.add(GoogleFileResolver::new());
    let mut compiler = protox::Compiler::with_file_resolver(chain);
    compiler.include_imports(true);
    for (name, _) in own {
        compiler
            .open_file(name)
            .map_err(|e| to_schema_error(&e, name))?;
    }
    let pool = compiler.descriptor_pool();
    crate::limits::check_pool(&pool, limits)?;
    Ok(pool)
}

/// Turns a protox error into a typed error whose path is `file:line:column` where known.
fn to_schema_error(err: &protox::Error, fallback_file: &str) -> SchemaError {
    let message = err.to_string();
    let debug = format!("{err:?}");
    let (path, _) = split_location(&debug).unwrap_or_else(|| {
        (
            err.file().unwrap_or(fallback_file).to_string(),
            String::new(),
        )
    });
    let lower = message.to_ascii_lowercase();
    let kind = if err.is_parse() {
        SchemaErrorKind::Syntax
    } else if err.is_file_not_found() || lower.contains("not found") || lower.contains("unknown") {
        SchemaErrorKind::UnknownType
    } else if lower.contains("already defined") || lower.contains("duplicate") {
        SchemaErrorKind::Duplicate
    } else {
        SchemaErrorKind::Invalid
    };
    SchemaError::new(kind, path, message)
}

/// Splits `file.proto:3:14: message` into (`file.proto:3:14`, `message`).
fn split_location(text: &str) -> Option<(String, String)> {
    let mut parts = text.splitn(4, ':');
    let file = parts.next()?;
    let line = parts.next()?;
    let col = parts.next()?;
    let rest = parts.next()?;
    if file.is_empty()
        || file.contains(' ')
        || line.is_empty()
        || !line.chars().all(|c| c.is_ascii_digit())
        || col.is_empty()
        || !col.chars().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    Some((format!("{file}:{line}:{col}"), rest.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_error_has_file_line_column() {
        let own = vec![(
            "schema.proto".to_string(),
            Source::Text("syntax = \"proto3\";\nmessage A {\n  string a = 1\n}\n".into()),
        )];
        let err = compile(&own, &[], &Limits::default()).unwrap_err();
        assert_eq!(err.kind, SchemaErrorKind::Syntax);
        assert!(err.path.starts_with("schema.proto:"), "{}", err.path);
        assert_eq!(err.path.split(':').count(), 3, "{}", err.path);
    }

    #[test]
    fn missing_import_is_unknown_type() {
        let own = vec![(
            "schema.proto".to_string(),
            Source::Text("syntax = \"proto3\";\nimport \"nope.proto\";\n".into()),
        )];
        let err = compile(&own, &[], &Limits::default()).unwrap_err();
        assert_eq!(err.kind, SchemaErrorKind::UnknownType);
        assert!(err.message.contains("nope.proto"));
    }

    #[test]
    fn builtin_confluent_imports_resolve() {
        let own = vec![(
            "schema.proto".to_string(),
            Source::Text(
                "syntax = \"proto3\";\nimport \"confluent/meta.proto\";\nimport \"confluent/type/decimal.proto\";\nmessage A {\n  confluent.type.Decimal d = 1 [(confluent.field_meta).doc = \"x\"];\n}\n"
                    .into(),
            ),
        )];
        let pool = compile(&own, &[], &Limits::default()).unwrap();
        assert!(pool.get_message_by_name("A").is_some());
    }
}

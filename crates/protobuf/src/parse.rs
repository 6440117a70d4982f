//! Compiling `.proto` text (or serialized descriptors) into a descriptor pool, without protoc.

use crate::builtin;
use base64::Engine;
use covenant_engine::{Limits, Reference, SchemaError, SchemaErrorKind};
use prost::Message;
use prost_reflect::DescriptorPool;
use prost_types::{FileDescriptorProto, SourceCodeInfo};
use protox::file::{ChainFileResolver, File, FileResolver, GoogleFileResolver};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

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

/// The source info (positions and comments) of the files compiled from text, by file name:
/// of their declarations only when our parser read them (`text::parse_declarations`).
///
/// Kept beside the descriptor pool rather than in it: `prost-reflect` converts and copies every
/// location of a file while building its pool (a location and three allocations per element
/// and per part of one), a sixth of the time and a quarter of the memory of compiling a large
/// file, and nothing in the pool reads them once the file has compiled.
pub(crate) type SourceInfos = HashMap<String, SourceCodeInfo>;

/// The source info locations of `file`: kept aside for a file compiled from text, in the
/// descriptor for one given as a descriptor (empty when it has none).
pub(crate) fn locations_of<'a>(
    source_infos: &'a SourceInfos,
    file: &'a prost_reflect::FileDescriptor,
) -> &'a [prost_types::source_code_info::Location] {
    let info = match source_infos.get(file.name()) {
        Some(info) => Some(info),
        None => file.file_descriptor_proto().source_code_info.as_ref(),
    };
    info.map_or(&[][..], |info| &info.location[..])
}

/// Hands protox the files by name; their source info is taken out into `aside`. Custom
/// options named in `undefined` are left out of text files.
struct MemResolver {
    files: Arc<HashMap<String, Source>>,
    aside: Arc<Mutex<SourceInfos>>,
    undefined: Arc<HashSet<String>>,
}

impl MemResolver {
    fn new(files: Arc<HashMap<String, Source>>, undefined: Arc<HashSet<String>>) -> MemResolver {
        MemResolver {
            files,
            aside: Arc::default(),
            undefined,
        }
    }
}

impl FileResolver for MemResolver {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        match self.files.get(name) {
            Some(Source::Text(text)) => {
                let mut fd = match crate::text::parse_declarations(name, text) {
                    Some(mut fd) => {
                        crate::qualify::qualify_local_types(&mut fd);
                        fd
                    }
                    None => protox_parse::parse(name, text)?,
                };
                if !self.undefined.is_empty() {
                    crate::options::drop_custom_options(&mut fd, &self.undefined);
                }
                if let Some(info) = fd.source_code_info.take() {
                    lock(&self.aside).insert(name.to_string(), info);
                }
                Ok(File::from_file_descriptor_proto(fd))
            }
            // A descriptor's own source info goes aside too: in the pool, each error would
            // search all of it.
            Some(Source::Descriptor(fd)) => {
                let mut fd = (**fd).clone();
                fd.name = Some(name.to_string());
                if let Some(info) = fd.source_code_info.take() {
                    lock(&self.aside).insert(name.to_string(), info);
                }
                Ok(File::from_file_descriptor_proto(fd))
            }
            None => Err(protox::Error::file_not_found(name)),
        }
    }
}

/// A text file's descriptor with all of its source info (an error may be anywhere): from our
/// parser when the text is in its shape, else from protox's.
fn parse_text(name: &str, text: &str) -> Result<FileDescriptorProto, protox::Error> {
    match crate::text::parse(name, text) {
        Some(fd) => Ok(fd),
        None => Ok(protox_parse::parse(name, text)?),
    }
}

fn lock(infos: &Mutex<SourceInfos>) -> std::sync::MutexGuard<'_, SourceInfos> {
    infos
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The name a schema's own file is compiled under: `schema.proto`, or `schemaN.proto` when a
/// reference already has that name. Errors locate themselves in this file.
pub fn main_file_name(references: &[Reference]) -> String {
    let mut name = String::from("schema.proto");
    let mut n = 1;
    while references.iter().any(|r| r.name == name) {
        n += 1;
        name = format!("schema{n}.proto");
    }
    name
}

/// A compiled schema's descriptors and the source info of its text files.
#[derive(Debug)]
pub(crate) struct Compiled {
    pub pool: DescriptorPool,
    pub source_infos: SourceInfos,
}

/// How many distinct undefined custom options are left out before the schema is refused.
const MAX_UNDEFINED_OPTIONS: usize = 32;

/// Compiles `own` files (name, source) with `references` and the built-in imports available.
pub(crate) fn compile(
    own: &[(String, Source)],
    references: &[Reference],
    limits: &Limits,
) -> Result<Compiled, SchemaError> {
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
    let files = Arc::new(files);
    // Confluent reads only the options it knows and ignores the others, so a custom option
    // that nothing defines is left out rather than refused; each pass leaves out one more.
    let mut undefined: HashSet<String> = HashSet::new();
    let (pool, source_infos) = loop {
        match compile_files(own, files.clone(), Arc::new(undefined.clone())) {
            Ok(compiled) => break compiled,
            Err((e, file)) if e.is_parse() || e.is_file_not_found() => {
                return Err(to_schema_error(&e, file));
            }
            Err((e, file)) => {
                let name = crate::options::undefined_option(&e.to_string(), &files);
                let retry = undefined.len() < MAX_UNDEFINED_OPTIONS
                    && name.is_some_and(|name| undefined.insert(name));
                if !retry {
                    return Err(locate_pool_error(&files, &e, file, &undefined));
                }
            }
        }
    };
    crate::limits::check_pool(&pool, limits)?;
    Ok(Compiled { pool, source_infos })
}

/// A compiler over `files`, the built-in imports and Google's, and where the source info of
/// text files goes.
fn compiler(
    files: Arc<HashMap<String, Source>>,
    undefined: Arc<HashSet<String>>,
) -> (protox::Compiler, [Arc<Mutex<SourceInfos>>; 2]) {
    let builtins: Arc<HashMap<String, Source>> = Arc::new(
        builtin::FILES
            .iter()
            .map(|(n, t)| (n.to_string(), Source::Text(t.to_string())))
            .collect(),
    );
    let own_files = MemResolver::new(files, undefined);
    let builtin_files = MemResolver::new(builtins, Arc::default());
    let aside = [own_files.aside.clone(), builtin_files.aside.clone()];
    let mut chain = ChainFileResolver::new();
    chain.add(own_files);
    chain.add(builtin_files);
    chain.add(WellKnownFiles::default());
    let mut compiler = protox::Compiler::with_file_resolver(chain);
    compiler.include_imports(true);
    (compiler, aside)
}

/// Google's well-known files (`google/protobuf/*.proto`), from `prost-reflect`'s global pool,
/// which is built on the first import of one: building it was a quarter of the instructions
/// of a `covenant check` of two small files, most of which import none.
#[derive(Default)]
struct WellKnownFiles(OnceLock<GoogleFileResolver>);

impl FileResolver for WellKnownFiles {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        if !name.starts_with("google/protobuf/") {
            return Err(protox::Error::file_not_found(name));
        }
        self.0.get_or_init(GoogleFileResolver::new).open_file(name)
    }
}

/// The pool and source info of `own`, or the first error with the own file it came from.
fn compile_files(
    own: &[(String, Source)],
    files: Arc<HashMap<String, Source>>,
    undefined: Arc<HashSet<String>>,
) -> Result<(DescriptorPool, SourceInfos), (protox::Error, &str)> {
    let (mut compiler, aside) = compiler(files, undefined);
    for (name, _) in own {
        compiler.open_file(name).map_err(|e| (e, name.as_str()))?;
    }
    let pool = compiler.descriptor_pool();
    drop(compiler);
    let mut source_infos = SourceInfos::new();
    for infos in aside {
        source_infos.extend(std::mem::take(&mut *lock(&infos)));
    }
    Ok((pool, source_infos))
}

/// The pool's first error, located. The source info was kept out of the pool, so the file
/// that failed is added once more, without it, to a pool of what it imports; that names the
/// error's path, and the file's source info gives its line and column. Letting the pool
/// locate errors itself searched every location for each error: a file with 20,000 unknown
/// types took 15 seconds.
fn locate_pool_error(
    files: &Arc<HashMap<String, Source>>,
    error: &protox::Error,
    own_file: &str,
    undefined: &HashSet<String>,
) -> SchemaError {
    let name = error.file().unwrap_or(own_file);
    let located = || -> Option<SchemaError> {
        let mut fd = match files.get(name)? {
            Source::Text(text) => {
                let mut fd = parse_text(name, text).ok()?;
                crate::options::drop_custom_options(&mut fd, undefined);
                fd
            }
            Source::Descriptor(fd) => {
                let mut fd = (**fd).clone();
                fd.name = Some(name.to_string());
                fd
            }
        };
        let info = fd.source_code_info.take()?;
        let (mut compiler, _) = compiler(files.clone(), Arc::new(undefined.clone()));
        for import in &fd.dependency {
            compiler.open_file(import).ok()?;
        }
        let mut pool = compiler.descriptor_pool();
        let err = pool.add_file_descriptor_proto(fd).err()?;
        let path = err.path()?;
        let location = info.location.iter().find(|l| l.path == path)?;
        let (line, column) = (location.span.first()?, location.span.get(1)?);
        let message = err.to_string();
        let file = err.file().unwrap_or(name);
        Some(SchemaError::new(
            error_kind(&message, false, false),
            format!("{file}:{}:{}", line + 1, column + 1),
            message,
        ))
    };
    located().unwrap_or_else(|| to_schema_error(error, own_file))
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
    let kind = error_kind(&message, err.is_parse(), err.is_file_not_found());
    SchemaError::new(kind, path, message)
}

/// The pool's error kinds are private to prost-reflect; its messages are what it gives.
fn error_kind(message: &str, is_parse: bool, is_file_not_found: bool) -> SchemaErrorKind {
    let lower = message.to_ascii_lowercase();
    if is_parse {
        SchemaErrorKind::Syntax
    } else if is_file_not_found
        || lower.contains("not found")
        || lower.contains("unknown")
        || lower.contains("is not defined")
    {
        SchemaErrorKind::UnknownType
    } else if lower.contains("already defined")
        || lower.contains("already used")
        || lower.contains("already been used")
        || lower.contains("duplicate")
    {
        SchemaErrorKind::Duplicate
    } else if lower.contains("invalid default value") {
        SchemaErrorKind::InvalidDefault
    } else {
        SchemaErrorKind::Invalid
    }
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

    /// The pool finds this error, so it is located with the source info that the normal
    /// compile keeps out of the pool.
    #[test]
    fn unknown_field_type_has_file_line_column() {
        let own = vec![(
            "schema.proto".to_string(),
            Source::Text("syntax = \"proto3\";\nmessage A {\n  Missing m = 1;\n}\n".into()),
        )];
        let err = compile(&own, &[], &Limits::default()).unwrap_err();
        assert_eq!(err.path, "schema.proto:3:3", "{err:?}");
        assert!(err.message.contains("Missing"), "{err:?}");
    }

    #[test]
    fn source_info_is_kept_beside_the_pool() {
        let own = vec![(
            "schema.proto".to_string(),
            Source::Text(
                "syntax = \"proto3\";\n// An order.\nmessage A {\n  int32 a = 1;\n}\n".into(),
            ),
        )];
        let compiled = compile(&own, &[], &Limits::default()).unwrap();
        let file = compiled.pool.get_file_by_name("schema.proto").unwrap();
        assert!(file.file_descriptor_proto().source_code_info.is_none());
        let info = &compiled.source_infos["schema.proto"];
        assert!(
            info.location
                .iter()
                .any(|l| l.path == [4, 0] && l.leading_comments.as_deref() == Some(" An order.\n"))
        );
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

    fn error_of(text: &str) -> SchemaError {
        let own = vec![("schema.proto".to_string(), Source::Text(text.into()))];
        compile(&own, &[], &Limits::default()).unwrap_err()
    }

    #[test]
    fn pool_errors_have_their_kind() {
        let undefined = error_of("syntax = \"proto3\";\nmessage A { Missing m = 1; }\n");
        assert_eq!(undefined.kind, SchemaErrorKind::UnknownType, "{undefined}");
        assert!(undefined.message.contains("Missing"), "{undefined}");
        let default = error_of(
            "syntax = \"proto2\";\nenum E { A = 0; }\nmessage M { optional E e = 1 [default = NOPE]; }\n",
        );
        assert_eq!(default.kind, SchemaErrorKind::InvalidDefault, "{default}");
        let twice = error_of("syntax = \"proto3\";\nmessage A { int32 a = 1; int32 b = 1; }\n");
        assert_eq!(twice.kind, SchemaErrorKind::Duplicate, "{twice}");
        let first = error_of("syntax = \"proto3\";\nenum E { A = 1; }\n");
        assert_eq!(first.kind, SchemaErrorKind::Invalid, "{first}");
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
        let pool = compile(&own, &[], &Limits::default()).unwrap().pool;
        assert!(pool.get_message_by_name("A").is_some());
    }
}

//! The line and column of a finding's path in the `.proto` text, from the parser's source
//! info (`SourceCodeInfo` locations keyed by descriptor paths).

use crate::ProtobufSchema;
use crate::parse::SourceInfos;
use covenant_engine::Position;
use prost_reflect::FileDescriptor;
use prost_types::source_code_info::Location;
use prost_types::{DescriptorProto, EnumDescriptorProto, FileDescriptorProto};
use std::sync::Arc;

// Field numbers of descriptor.proto, as `SourceCodeInfo` paths use them.
const FILE_MESSAGES: i32 = 4;
const FILE_ENUMS: i32 = 5;
const FILE_SERVICES: i32 = 6;
const FILE_EXTENSIONS: i32 = 7;
const MESSAGE_FIELDS: i32 = 2;
const MESSAGE_NESTED: i32 = 3;
const MESSAGE_ENUMS: i32 = 4;
const MESSAGE_EXTENSIONS: i32 = 6;
const MESSAGE_ONEOFS: i32 = 8;
const MESSAGE_RESERVED_RANGES: i32 = 9;
const ENUM_VALUES: i32 = 2;
const ENUM_RESERVED_RANGES: i32 = 4;
const SERVICE_METHODS: i32 = 2;

/// Where the element a finding's `path` names (see the crate's path table) is declared in
/// `text`; `None` for paths without one place (`/`, file sets) or text that does not parse.
/// To locate several paths in one text, build a [`Locator`] once.
pub fn locate(text: &str, path: &str) -> Option<Position> {
    Locator::new(text).locate(path)
}

/// One `.proto` text parsed once, to locate many findings in it: a report may hold thousands
/// of findings, and parsing a large file again for each one cost far more than the check.
pub struct Locator {
    file: Option<Parsed>,
    /// The file's locations in path order, as indexes; `None` when they already are in that
    /// order, as the parser leaves them.
    order: Option<Vec<usize>>,
}

/// The file's descriptor and source info: parsed here, or those a schema was compiled into.
enum Parsed {
    Own(Box<FileDescriptorProto>),
    Compiled {
        file: FileDescriptor,
        source_infos: Arc<SourceInfos>,
    },
}

impl Parsed {
    fn proto(&self) -> &FileDescriptorProto {
        match self {
            Parsed::Own(file) => file,
            Parsed::Compiled { file, .. } => file.file_descriptor_proto(),
        }
    }

    fn locations(&self) -> &[Location] {
        match self {
            Parsed::Own(file) => file
                .source_code_info
                .as_ref()
                .map_or(&[][..], |info| &info.location[..]),
            Parsed::Compiled { file, source_infos } => {
                crate::parse::locations_of(source_infos, file)
            }
        }
    }
}

impl Locator {
    /// Parses `text`; a text that does not parse locates nothing.
    pub fn new(text: &str) -> Locator {
        let file = crate::text::parse_declarations("schema.proto", text)
            .or_else(|| protox_parse::parse("schema.proto", text).ok());
        Locator::index(file.map(|f| Parsed::Own(Box::new(f))))
    }

    /// Locates in `text` through `schema` when `schema` was compiled from exactly that text,
    /// which spares parsing it again; otherwise as [`Locator::new`].
    pub fn for_schema(schema: &ProtobufSchema, text: &str) -> Locator {
        match schema.main_file() {
            Some(file) if !schema.is_set() && schema.text() == text => {
                Locator::index(Some(Parsed::Compiled {
                    file,
                    source_infos: schema.source_infos.clone(),
                }))
            }
            _ => Locator::new(text),
        }
    }

    /// Orders the locations by path unless they are (a stable sort: the first location of a
    /// path is its declaration, as a search from the start finds it).
    fn index(file: Option<Parsed>) -> Locator {
        let locations = file.as_ref().map_or(&[][..], Parsed::locations);
        let order = if locations.is_sorted_by(|a, b| a.path <= b.path) {
            None
        } else {
            let mut order: Vec<usize> = (0..locations.len()).collect();
            order.sort_by(|&a, &b| locations[a].path.cmp(&locations[b].path));
            Some(order)
        };
        Locator { file, order }
    }

    /// Where the element `path` names is declared, as [`locate`] says.
    pub fn locate(&self, path: &str) -> Option<Position> {
        let file = self.file.as_ref()?;
        let target = descriptor_path(file.proto(), path)?;
        let locations = file.locations();
        let first = match &self.order {
            None => locations.get(locations.partition_point(|l| l.path < target)),
            Some(order) => order
                .get(order.partition_point(|&i| locations[i].path < target))
                .map(|&i| &locations[i]),
        };
        let location = first.filter(|l| l.path == target)?;
        let (line, column) = (location.span.first()?, location.span.get(1)?);
        Some(Position {
            line: usize::try_from(*line).ok()? + 1,
            column: usize::try_from(*column).ok()? + 1,
        })
    }
}

/// `full_name` with the scope `scope` (a package or a message's full name) taken off its
/// front: `acme.Order.Line` in `acme` is `Order.Line`. Names are compared in place, as a
/// report locates each of its findings among every message of the file.
fn within<'a>(full_name: &'a str, scope: &str) -> Option<&'a str> {
    if scope.is_empty() {
        return Some(full_name);
    }
    full_name.strip_prefix(scope)?.strip_prefix('.')
}

/// The descriptor path of the element `path` names.
fn descriptor_path(file: &FileDescriptorProto, path: &str) -> Option<Vec<i32>> {
    let rest = path.strip_prefix('/')?;
    let package = file.package();
    if let Some(name) = rest.strip_prefix("extensions/") {
        let name = within(name, package)?;
        let i = file.extension.iter().position(|e| e.name() == name)?;
        return Some(vec![FILE_EXTENSIONS, i as i32]);
    }
    let (element, member) = match rest.split_once('/') {
        Some((element, member)) => (element, Some(member)),
        None => (rest, None),
    };
    let element = within(element, package)?;
    for (i, m) in file.message_type.iter().enumerate() {
        if let Some(found) = in_message(m, vec![FILE_MESSAGES, i as i32], element, member) {
            return Some(found);
        }
    }
    if let Some(i) = file.enum_type.iter().position(|e| e.name() == element) {
        return Some(in_enum(
            &file.enum_type[i],
            vec![FILE_ENUMS, i as i32],
            member,
        ));
    }
    let i = file.service.iter().position(|s| s.name() == element)?;
    let mut at = vec![FILE_SERVICES, i as i32];
    if let Some(name) = member.and_then(|m| m.strip_prefix("methods/"))
        && let Some(j) = file.service[i].method.iter().position(|m| m.name() == name)
    {
        at.extend([SERVICE_METHODS, j as i32]);
    }
    Some(at)
}

/// The descriptor path of `element`, named relative to the scope `m` is declared in, if it
/// is `m` or declared inside it.
fn in_message(
    m: &DescriptorProto,
    at: Vec<i32>,
    element: &str,
    member: Option<&str>,
) -> Option<Vec<i32>> {
    if element == m.name() {
        return Some(message_member(m, at, member));
    }
    let inside = within(element, m.name())?;
    for (i, nested) in m.nested_type.iter().enumerate() {
        let mut inner = at.clone();
        inner.extend([MESSAGE_NESTED, i as i32]);
        if let Some(found) = in_message(nested, inner, inside, member) {
            return Some(found);
        }
    }
    let i = m.enum_type.iter().position(|e| e.name() == inside)?;
    let mut inner = at;
    inner.extend([MESSAGE_ENUMS, i as i32]);
    Some(in_enum(&m.enum_type[i], inner, member))
}

/// A member of a message; an unknown member locates the message itself.
fn message_member(m: &DescriptorProto, mut at: Vec<i32>, member: Option<&str>) -> Vec<i32> {
    let Some(member) = member else { return at };
    let found = if let Some(name) = member.strip_prefix("fields/") {
        m.field
            .iter()
            .position(|f| f.name() == name)
            .map(|i| [MESSAGE_FIELDS, i as i32])
            .or_else(|| {
                m.extension
                    .iter()
                    .position(|f| f.name() == name)
                    .map(|i| [MESSAGE_EXTENSIONS, i as i32])
            })
    } else if let Some(name) = member.strip_prefix("oneofs/") {
        m.oneof_decl
            .iter()
            .position(|o| o.name() == name)
            .map(|i| [MESSAGE_ONEOFS, i as i32])
    } else if member == "reserved" && !m.reserved_range.is_empty() {
        Some([MESSAGE_RESERVED_RANGES, 0])
    } else {
        None
    };
    if let Some(step) = found {
        at.extend(step);
    }
    at
}

fn in_enum(e: &EnumDescriptorProto, mut at: Vec<i32>, member: Option<&str>) -> Vec<i32> {
    let found = match member {
        Some(m) if m.starts_with("values/") => {
            let name = &m["values/".len()..];
            e.value
                .iter()
                .position(|v| v.name() == name)
                .map(|i| [ENUM_VALUES, i as i32])
        }
        Some("reserved") if !e.reserved_range.is_empty() => Some([ENUM_RESERVED_RANGES, 0]),
        _ => None,
    };
    if let Some(step) = found {
        at.extend(step);
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "syntax = \"proto3\";\npackage acme;\n\nmessage Order {\n  string id = 1;\n  message Line {\n    int64 qty = 1;\n  }\n  oneof payment {\n    string card = 2;\n  }\n  reserved 7;\n}\n\nenum Status {\n  STATUS_UNSPECIFIED = 0;\n  STATUS_OPEN = 1;\n}\n\nservice Orders {\n  rpc Place(Order) returns (Order);\n}\n";

    fn at(path: &str) -> Option<(usize, usize)> {
        locate(TEXT, path).map(|p| (p.line, p.column))
    }

    #[test]
    fn elements_are_found_where_they_are_declared() {
        assert_eq!(at("/acme.Order"), Some((4, 1)));
        assert_eq!(at("/acme.Order/fields/id"), Some((5, 3)));
        assert_eq!(at("/acme.Order.Line/fields/qty"), Some((7, 5)));
        assert_eq!(at("/acme.Order/fields/card"), Some((10, 5)));
        assert_eq!(at("/acme.Order/oneofs/payment"), Some((9, 3)));
        assert_eq!(at("/acme.Order/reserved"), Some((12, 12)));
        assert_eq!(at("/acme.Status/values/STATUS_OPEN"), Some((17, 3)));
        assert_eq!(at("/acme.Orders/methods/Place"), Some((21, 3)));
    }

    #[test]
    fn a_missing_member_locates_its_parent_and_unknown_elements_nothing() {
        assert_eq!(at("/acme.Order/fields/gone"), Some((4, 1)));
        assert_eq!(at("/acme.Nope"), None);
        assert_eq!(at("/"), None);
        assert_eq!(locate("not proto", "/acme.Order"), None);
    }

    const PATHS: [&str; 9] = [
        "/acme.Order",
        "/acme.Order/fields/id",
        "/acme.Order.Line/fields/qty",
        "/acme.Order/oneofs/payment",
        "/acme.Order/reserved",
        "/acme.Status/values/STATUS_OPEN",
        "/acme.Orders/methods/Place",
        "/acme.Order/fields/gone",
        "/acme.Nope",
    ];

    #[test]
    fn a_compiled_schema_locates_with_the_source_info_kept_beside_its_pool() {
        let schema = <crate::ProtobufFormat as covenant_engine::Format>::parse_with(
            TEXT,
            &[],
            &covenant_engine::Limits::default(),
        )
        .unwrap();
        let compiled = Locator::for_schema(&schema, TEXT);
        assert!(matches!(compiled.file, Some(Parsed::Compiled { .. })));
        for path in PATHS {
            assert_eq!(compiled.locate(path), locate(TEXT, path), "{path}");
        }
        assert_eq!(
            compiled
                .locate("/acme.Order/fields/id")
                .map(|p| (p.line, p.column)),
            Some((5, 3))
        );
    }

    /// A descriptor sent with its own source info may list locations in any order.
    #[test]
    fn locations_out_of_path_order_locate_alike() {
        let mut file = protox_parse::parse("schema.proto", TEXT).unwrap();
        let info = file.source_code_info.as_mut().unwrap();
        // Stable: locations of one path keep their order.
        info.location.sort_by(|a, b| b.path.cmp(&a.path));
        let shuffled = Locator::index(Some(Parsed::Own(Box::new(file))));
        assert!(shuffled.order.is_some());
        assert!(Locator::new(TEXT).order.is_none(), "the parser sorts them");
        for path in PATHS {
            assert_eq!(shuffled.locate(path), locate(TEXT, path), "{path}");
        }
    }
}

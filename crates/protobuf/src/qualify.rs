//! Field types written as a simple name (`Status`), qualified from the root (`.pkg.Status`)
//! before the descriptor reaches `prost-reflect`'s pool, wherever the answer is already
//! certain from the file itself.
//!
//! The pool resolves a relative name by trying each enclosing scope from the field's own
//! outward, formatting and looking up a name at each: about 4,700 instructions per field of a
//! message or enum type in a large file, against one lookup for a name given from the root.
//! Both give the same descriptor, so this is only a shortcut, and it must answer exactly as
//! the pool does:
//! - a scope that holds a message or enum of that name wins; a field, oneof, value or service
//!   of that name is passed over, as the pool passes over a definition of the wrong kind;
//! - nothing outside the file can be defined inside one of its messages (another file would
//!   have to define the same message, which the pool refuses before it resolves anything), so
//!   a name missing there is missing;
//! - at the package and above, a file that imports others may find the name in them, so a
//!   name the file does not define there is left as written; a file without imports sees only
//!   its own definitions.
//!
//! Dotted names (`a.B`) and names the file cannot settle are left to the pool, which also
//! words any error.

use prost_types::{DescriptorProto, FileDescriptorProto};
use std::collections::HashSet;

/// Full names of the messages and enums a file defines.
type Names = HashSet<String, foldhash::fast::RandomState>;

/// Qualifies the simple field type names of `file` that its own definitions settle.
pub(crate) fn qualify_local_types(file: &mut FileDescriptorProto) {
    let package = file.package().to_string();
    let mut defined = Names::default();
    for message in &file.message_type {
        collect(&package, message, &mut defined);
    }
    for e in &file.enum_type {
        defined.insert(join(&package, e.name()));
    }
    let scopes = Scopes {
        package: &package,
        defined: &defined,
        sees_only_itself: file.dependency.is_empty(),
    };
    for message in &mut file.message_type {
        scopes.qualify(&join(&package, message.name()), message);
    }
}

/// Every message and enum `message` declares, itself included, by full name.
fn collect(parent: &str, message: &DescriptorProto, defined: &mut Names) {
    let name = join(parent, message.name());
    for nested in &message.nested_type {
        collect(&name, nested, defined);
    }
    for e in &message.enum_type {
        defined.insert(join(&name, e.name()));
    }
    defined.insert(name);
}

struct Scopes<'a> {
    package: &'a str,
    defined: &'a Names,
    sees_only_itself: bool,
}

impl Scopes<'_> {
    /// Qualifies the fields of `message` (named `full`) and of the messages it declares.
    fn qualify(&self, full: &str, message: &mut DescriptorProto) {
        let mut candidate = String::new();
        for field in &mut message.field {
            let Some(written) = field.type_name.as_deref() else {
                continue;
            };
            if written.is_empty() || written.contains('.') {
                continue;
            }
            let scope = join(full, field.name());
            if let Some(found) = self.resolve(&scope, written, &mut candidate) {
                field.type_name = Some(found);
            }
        }
        for nested in &mut message.nested_type {
            self.qualify(&join(full, nested.name()), nested);
        }
    }

    /// `name` as the pool would resolve it from `scope`, from the root; `None` when the
    /// file alone cannot tell.
    fn resolve(&self, scope: &str, name: &str, candidate: &mut String) -> Option<String> {
        let mut parent = Some(scope);
        while let Some(p) = parent {
            candidate.clear();
            if !p.is_empty() {
                candidate.push_str(p);
                candidate.push('.');
            }
            candidate.push_str(name);
            if self.defined.contains(candidate.as_str()) {
                // Not `format!`: its machinery was most of this pass's time.
                return Some([".", candidate.as_str()].concat());
            }
            // At the package and above, the definitions of imported files count too.
            let in_a_message = p.len() > self.package.len();
            if !in_a_message && !self.sees_only_itself {
                return None;
            }
            parent = match p.rfind('.') {
                Some(i) => Some(&p[..i]),
                None if p.is_empty() => None,
                None => Some(""),
            };
        }
        None
    }
}

fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        [parent, ".", name].concat()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qualified(text: &str) -> Vec<(String, String)> {
        let mut file = crate::text::parse("schema.proto", text).expect("in the parser's shape");
        qualify_local_types(&mut file);
        let mut out = Vec::new();
        let mut stack: Vec<&DescriptorProto> = file.message_type.iter().collect();
        while let Some(m) = stack.pop() {
            for f in &m.field {
                out.push((f.name().to_string(), f.type_name().to_string()));
            }
            stack.extend(&m.nested_type);
        }
        out.sort();
        out
    }

    fn pair(field: &str, ty: &str) -> (String, String) {
        (field.to_string(), ty.to_string())
    }

    #[test]
    fn the_nearest_message_or_enum_wins_and_other_kinds_are_passed_over() {
        let text = "syntax = \"proto3\";\npackage p;\nenum Status { S0 = 0; }\nmessage A {\n  message Status { int32 x = 1; }\n  Status inner = 1;\n  B outer = 2;\n  int32 S0 = 3;\n}\nmessage B {\n  int32 Status = 1;\n  Status s = 2;\n  map<string, Status> m = 3;\n}\n";
        let got = qualified(text);
        assert!(got.contains(&pair("inner", ".p.A.Status")), "{got:?}");
        assert!(got.contains(&pair("outer", ".p.B")), "{got:?}");
        // A field named `Status` in B is not a type: the enum at the package wins.
        assert!(got.contains(&pair("s", ".p.Status")), "{got:?}");
        // The map's entry and its value.
        assert!(got.contains(&pair("m", ".p.B.MEntry")), "{got:?}");
        assert!(got.contains(&pair("value", ".p.Status")), "{got:?}");
    }

    #[test]
    fn names_the_file_cannot_settle_are_left_as_written() {
        // With an import, a name not defined in the file at the package may come from it.
        let text = "syntax = \"proto3\";\npackage p;\nimport \"other.proto\";\nmessage A {\n  message In { int32 x = 1; }\n  In here = 1;\n  Elsewhere there = 2;\n  q.Dotted dotted = 3;\n  A self = 4;\n}\n";
        let got = qualified(text);
        assert!(got.contains(&pair("here", ".p.A.In")), "{got:?}");
        assert!(got.contains(&pair("self", ".p.A")), "{got:?}");
        assert!(got.contains(&pair("there", "Elsewhere")), "{got:?}");
        assert!(got.contains(&pair("dotted", "q.Dotted")), "{got:?}");
        // Without imports and without a package, the root is the package.
        let got = qualified(
            "syntax = \"proto3\";\nmessage A { B b = 1; Missing m = 2; }\nmessage B {}\n",
        );
        assert!(got.contains(&pair("b", ".B")), "{got:?}");
        assert!(got.contains(&pair("m", "Missing")), "{got:?}");
    }
}

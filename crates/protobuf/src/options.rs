//! Custom options that nothing defines.
//!
//! Confluent builds its descriptors from the options it knows (`deprecated`, `packed`,
//! `features`, its own `confluent.*_meta`, ...) and passes over every other option, defined or
//! not. A schema that sets a custom option without defining or importing it is therefore
//! accepted there; here the option is left out of the compiled file instead of refusing it.

use crate::parse::Source;
use prost_types::{DescriptorProto, FileDescriptorProto, UninterpretedOption};
use std::collections::{HashMap, HashSet};

/// The custom option an error of the compiler is about, when the error says its name is not
/// defined and a text file sets an option of that name.
pub(crate) fn undefined_option(message: &str, files: &HashMap<String, Source>) -> Option<String> {
    let rest = message.split("name '").nth(1)?;
    let (name, tail) = rest.split_once('\'')?;
    if !tail.trim_start().starts_with("is not defined") || name.is_empty() {
        return None;
    }
    let name = name.trim_start_matches('.');
    let set = files.values().any(|source| match source {
        Source::Text(text) => {
            text.contains(&format!("({name})")) || text.contains(&format!("(.{name})"))
        }
        Source::Descriptor(_) => false,
    });
    set.then(|| name.to_string())
}

/// Whether an option's name starts with the custom option `name` (as written, relative or
/// absolute, or as the error gave it).
fn names(option: &UninterpretedOption, undefined: &HashSet<String>) -> bool {
    let Some(first) = option.name.first().filter(|p| p.is_extension) else {
        return false;
    };
    let written = first.name_part.trim_start_matches('.');
    undefined.iter().any(|name| {
        written == name
            || written.ends_with(&format!(".{name}"))
            || name.ends_with(&format!(".{written}"))
    })
}

macro_rules! drop_in {
    ($options:expr, $undefined:expr) => {
        if let Some(options) = $options.as_mut() {
            options
                .uninterpreted_option
                .retain(|o| !names(o, $undefined));
        }
    };
}

/// Leaves the custom options named in `undefined` out of every element of `fd`.
pub(crate) fn drop_custom_options(fd: &mut FileDescriptorProto, undefined: &HashSet<String>) {
    if undefined.is_empty() {
        return;
    }
    drop_in!(fd.options, undefined);
    for m in &mut fd.message_type {
        in_message(m, undefined);
    }
    for e in &mut fd.enum_type {
        drop_in!(e.options, undefined);
        for v in &mut e.value {
            drop_in!(v.options, undefined);
        }
    }
    for f in &mut fd.extension {
        drop_in!(f.options, undefined);
    }
    for s in &mut fd.service {
        drop_in!(s.options, undefined);
        for m in &mut s.method {
            drop_in!(m.options, undefined);
        }
    }
}

fn in_message(m: &mut DescriptorProto, undefined: &HashSet<String>) {
    drop_in!(m.options, undefined);
    for f in m.field.iter_mut().chain(m.extension.iter_mut()) {
        drop_in!(f.options, undefined);
    }
    for o in &mut m.oneof_decl {
        drop_in!(o.options, undefined);
    }
    for r in &mut m.extension_range {
        drop_in!(r.options, undefined);
    }
    for e in &mut m.enum_type {
        drop_in!(e.options, undefined);
        for v in &mut e.value {
            drop_in!(v.options, undefined);
        }
    }
    for n in &mut m.nested_type {
        in_message(n, undefined);
    }
}

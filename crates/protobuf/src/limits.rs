//! Size and shape limits for Protobuf schemas (see [`covenant_engine::Limits`]).
//!
//! The `.proto` text is parsed by `protox`, a crate we do not control, whose parser recurses
//! once per nesting level of message bodies and option aggregate values
//! (`option (o) = { a { b { ... } } };`) and overflows the stack on deep enough text. A cheap
//! scan of the brackets bounds that nesting before the text is handed over; the other limits
//! are counted on the compiled descriptors.

use covenant_engine::{Counter, Limit, Limits, SchemaError, bracket_depth};
use prost_reflect::{DescriptorPool, Kind, MessageDescriptor};
use std::collections::HashMap;

/// Refuses text nested deeper than `limits.max_protobuf_nesting`, at `file:line:column`.
pub(crate) fn prescan(file: &str, text: &str, limits: &Limits) -> Result<(), SchemaError> {
    let max = limits.max_protobuf_nesting;
    let (depth, at) = bracket_depth(text, max);
    if depth <= max {
        return Ok(());
    }
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    limits.check(
        Limit::ProtobufNesting,
        depth,
        &format!("{file}:{line}:{column}"),
    )
}

/// Counts messages and enums, fields and enum values of the compiled pool, and the depth of
/// message fields leading into other messages.
pub(crate) fn check_pool(pool: &DescriptorPool, limits: &Limits) -> Result<(), SchemaError> {
    let mut types = Counter::new(limits, Limit::NamedTypes);
    let mut fields = Counter::new(limits, Limit::Fields);
    for message in pool.all_messages() {
        let path = format!("/{}", message.full_name());
        types.add(1, &path)?;
        fields.add(message.fields().len(), &path)?;
    }
    for e in pool.all_enums() {
        let path = format!("/{}", e.full_name());
        types.add(1, &path)?;
        limits.check(Limit::EnumSymbols, e.values().len(), &path)?;
    }
    let (depth, at) = message_depth(pool);
    limits.check(Limit::Depth, depth, &format!("/{at}"))
}

/// The most messages on one path through message-typed fields without repeating a message,
/// and the message where that path ends. An explicit stack, since the depth is what is
/// being bounded.
fn message_depth(pool: &DescriptorPool) -> (usize, String) {
    let messages: Vec<MessageDescriptor> = pool.all_messages().collect();
    let index: HashMap<String, usize> = messages
        .iter()
        .enumerate()
        .map(|(i, m)| (m.full_name().to_string(), i))
        .collect();
    let children: Vec<Vec<usize>> = messages
        .iter()
        .map(|m| {
            m.fields()
                .filter_map(|f| match f.kind() {
                    Kind::Message(t) => index.get(t.full_name()).copied(),
                    _ => None,
                })
                .collect()
        })
        .collect();
    const NEW: u8 = 0;
    const OPEN: u8 = 1;
    const DONE: u8 = 2;
    let n = messages.len();
    let mut state = vec![NEW; n];
    let mut height = vec![0usize; n];
    let mut bottom: Vec<usize> = (0..n).collect();
    for start in 0..n {
        if state[start] != NEW {
            continue;
        }
        state[start] = OPEN;
        let mut stack = vec![(start, 0usize)];
        while let Some(&mut (id, ref mut next)) = stack.last_mut() {
            if let Some(&child) = children[id].get(*next) {
                *next += 1;
                if state[child] == NEW {
                    state[child] = OPEN;
                    stack.push((child, 0));
                }
                continue;
            }
            let best = children[id]
                .iter()
                .filter(|c| state[**c] == DONE)
                .max_by_key(|c| height[**c]);
            (height[id], bottom[id]) = match best {
                Some(&c) => (height[c] + 1, bottom[c]),
                None => (1, id),
            };
            state[id] = DONE;
            stack.pop();
        }
    }
    match (0..n).max_by_key(|i| height[*i]) {
        Some(top) => (height[top], messages[bottom[top]].full_name().to_string()),
        None => (0, String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProtobufFormat;
    use covenant_engine::{Format, SchemaErrorKind};

    fn option_nested(n: usize) -> String {
        format!(
            "syntax = \"proto2\";\nimport \"google/protobuf/descriptor.proto\";\nmessage O {{ optional O o = 1; optional int32 v = 2; }}\nextend google.protobuf.MessageOptions {{ optional O opt = 50001; }}\nmessage M {{ option (opt) = {{ {}v: 1{} }}; optional int32 x = 1; }}\n",
            "o { ".repeat(n),
            " }".repeat(n)
        )
    }

    #[test]
    fn option_aggregates_nested_past_the_limit_are_refused_before_protox_sees_them() {
        assert!(ProtobufFormat::parse(&option_nested(10), &[]).is_ok());
        let err = ProtobufFormat::parse(&option_nested(1000), &[]).expect_err("too deep");
        assert_eq!(err.kind, SchemaErrorKind::LimitExceeded);
        assert!(err.message.contains("max-protobuf-nesting = 64"), "{err}");
        assert!(err.path.starts_with("schema.proto:5:"), "{}", err.path);
    }

    #[test]
    fn recursion_is_one_level_and_chains_count() {
        let recursive = "syntax = \"proto3\";\nmessage A { B b = 1; }\nmessage B { A a = 1; }\n";
        assert!(ProtobufFormat::parse(recursive, &[]).is_ok());
        let chain: String = (1..=10)
            .map(|i| format!("message M{i} {{ M{} p = 1; }}\n", i - 1))
            .collect();
        let text = format!("syntax = \"proto3\";\nmessage M0 {{ int32 x = 1; }}\n{chain}");
        let limits = Limits {
            max_depth: 10,
            ..Limits::default()
        };
        let err = ProtobufFormat::parse_with(&text, &[], &limits).expect_err("11 deep");
        assert!(err.message.contains("max-depth = 10"), "{err}");
        assert_eq!(err.path, "/M0");
    }
}

//! The nesting depth of a parsed schema, counted in records: how deep the compatibility
//! check, the field-tree lowering and the canonical forms will recurse.
//!
//! Text nesting is already bounded by the JSON parser, but named types referred to by name
//! nest without nesting the text (a chain of records each holding the previous one), so the
//! depth is measured on the type graph. A recursive type counts once per distinct record on
//! the way, like the walks that cut recursion at a type already entered.

use crate::model::{Arena, Kind, NodeId};
use covenant_engine::{Limit, Limits, SchemaError};

/// Refuses a schema whose records nest deeper than `limits.max_depth`.
pub fn check(arena: &Arena, limits: &Limits) -> Result<(), SchemaError> {
    let (depth, deepest) = records_depth(arena);
    let path = arena
        .kind(deepest)
        .named()
        .map(|n| format!("/{}", n.name.full()))
        .unwrap_or_else(|| "/".to_string());
    limits.check(Limit::Depth, depth, &path)
}

/// The largest number of records on one path from the root without repeating a node, and
/// the node where it ends. An explicit stack, since the depth is what is being bounded.
fn records_depth(arena: &Arena) -> (usize, NodeId) {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        New,
        Open,
        Done,
    }
    let n = arena.nodes.len();
    let mut state = vec![State::New; n];
    let mut height = vec![0usize; n];
    let mut bottom: Vec<NodeId> = (0..n).collect();
    let mut stack: Vec<(NodeId, usize)> = vec![(arena.root, 0)];
    state[arena.root] = State::Open;
    while let Some(&mut (id, ref mut next)) = stack.last_mut() {
        let children = children(arena.kind(id));
        if let Some(&child) = children.get(*next) {
            *next += 1;
            if state[child] == State::New {
                state[child] = State::Open;
                stack.push((child, 0));
            }
            continue;
        }
        let own = usize::from(matches!(arena.kind(id), Kind::Record(_)));
        let best = children
            .iter()
            .filter(|c| state[**c] == State::Done)
            .max_by_key(|c| height[**c]);
        if let Some(&c) = best {
            height[id] = height[c] + own;
            bottom[id] = bottom[c];
        } else {
            height[id] = own;
        }
        state[id] = State::Done;
        stack.pop();
    }
    (height[arena.root], bottom[arena.root])
}

fn children(kind: &Kind) -> Vec<NodeId> {
    match kind {
        Kind::Array(i) | Kind::Map(i) => vec![*i],
        Kind::Union(b) => b.clone(),
        Kind::Record(r) => r.fields.iter().map(|f| f.ty).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    fn chain(n: usize) -> String {
        let mut types = vec![r#"{"type":"record","name":"R0","fields":[]}"#.to_string()];
        for i in 1..n {
            types.push(format!(
                r#"{{"type":"record","name":"R{i}","fields":[{{"name":"p","type":"R{}"}}]}}"#,
                i - 1
            ));
        }
        format!("[{}]", types.join(","))
    }

    #[test]
    fn named_references_count_and_recursion_does_not() {
        let arena = parse(&chain(10), &[], &Limits::default()).expect("parses");
        assert_eq!(records_depth(&arena).0, 10);
        let list = r#"{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]}]}"#;
        let arena = parse(list, &[], &Limits::default()).expect("parses");
        assert_eq!(records_depth(&arena).0, 1);
    }

    #[test]
    fn a_chain_past_the_limit_is_refused_naming_it() {
        let limits = Limits {
            max_depth: 5,
            ..Limits::default()
        };
        assert!(parse(&chain(5), &[], &limits).is_ok());
        let err = parse(&chain(6), &[], &limits).expect_err("too deep");
        assert!(err.message.contains("max-depth = 5"), "{err}");
        assert_eq!(err.path, "/R0");
    }
}

//! Structural hashes of the nodes of a parsed schema, so that the compatibility walk can
//! answer a (reader, writer) pair of identical sub-schemas at once: a schema always reads
//! itself, with no finding, so such a pair needs no walk.
//!
//! The hash covers everything the compatibility walk reads (kinds, names and aliases, field
//! names, aliases and whether they have defaults, enum symbols and default, fixed sizes,
//! logical types, the children's hashes, and whether a record is an error) and nothing it
//! ignores (docs, other attributes), so two nodes with equal hashes get the same verdict and
//! findings against any third node.
//! It is the engine's keyed 128-bit hash ([`covenant_engine::shape`]): a schema author who
//! cannot see the key cannot construct two different sub-schemas that collide.
//!
//! Only nodes that reach no cycle get a hash. A recursive type's hash would depend on where
//! its walk started, and recursion is rare enough that walking it is fine.

use crate::model::{Arena, Field, Kind, Logical, Named, NodeId};
use covenant_engine::shape::Hasher128;
use siphasher::sip128::SipHasher13;
use std::hash::Hash;

/// A node's structural hash; `None` for a node that reaches a cycle of named types.
pub type Shape = Option<u128>;

/// Structural hashes of one arena's nodes.
#[derive(Debug, Clone, Default)]
pub struct Shapes {
    /// Each node's hash, indexed like `Arena::nodes`.
    pub nodes: Vec<Shape>,
    /// For a record, one hash per field covering that field and every field before it (name,
    /// aliases, whether it has a default, type), as far as the fields' types reach no cycle:
    /// two records whose hashes agree up to field `i` have the same first `i + 1` fields, so
    /// the check skips them (the usual evolution adds fields at the end). Empty for other
    /// nodes.
    pub prefixes: Vec<Box<[u128]>>,
}

impl Shapes {
    /// How many leading fields two records share, by their prefix hashes.
    pub fn common_fields(&self, id: NodeId, other: &Shapes, other_id: NodeId) -> usize {
        covenant_engine::shape::common_prefix(&self.prefixes[id], &other.prefixes[other_id])
    }
}

/// The shapes of every node of `arena`.
pub fn compute(arena: &Arena) -> Shapes {
    let n = arena.nodes.len();
    let mut walk = Walk {
        arena,
        state: vec![State::New; n],
        prefixes: vec![Box::default(); n],
    };
    for id in 0..n {
        walk.shape(id);
    }
    let nodes = walk
        .state
        .into_iter()
        .map(|s| match s {
            State::Done(shape) => shape,
            _ => None,
        })
        .collect();
    Shapes {
        nodes,
        prefixes: walk.prefixes,
    }
}

#[derive(Clone, Copy)]
enum State {
    New,
    Open,
    Done(Shape),
}

struct Walk<'a> {
    arena: &'a Arena,
    state: Vec<State>,
    prefixes: Vec<Box<[u128]>>,
}

impl Walk<'_> {
    /// Recursion is bounded: parsing refuses text nested deeper than `MAX_DEPTH`, and a named
    /// type referred to by name is a node already open (a cycle) or already done.
    fn shape(&mut self, id: NodeId) -> Shape {
        match self.state[id] {
            State::Done(shape) => return shape,
            State::Open => return None,
            State::New => {}
        }
        self.state[id] = State::Open;
        let shape = self.hash_node(id);
        self.state[id] = State::Done(shape);
        shape
    }

    fn hasher(&self) -> SipHasher13 {
        covenant_engine::shape::hasher()
    }

    fn hash_node(&mut self, id: NodeId) -> Shape {
        let node = self.arena.node(id);
        let mut h = self.hasher();
        std::mem::discriminant(&node.kind).hash(&mut h);
        hash_logical(node.logical.as_ref(), &mut h);
        match &node.kind {
            Kind::Array(child) | Kind::Map(child) => self.shape(*child)?.hash(&mut h),
            Kind::Union(branches) => {
                branches.len().hash(&mut h);
                for b in branches {
                    self.shape(*b)?.hash(&mut h);
                }
            }
            Kind::Record(r) => {
                hash_named(&r.named, &mut h);
                r.is_error.hash(&mut h);
                r.fields.len().hash(&mut h);
                self.fields(id, &r.fields)?.hash(&mut h);
            }
            Kind::Enum(e) => {
                hash_named(&e.named, &mut h);
                e.symbols.hash(&mut h);
                e.default.hash(&mut h);
            }
            Kind::Fixed(f) => {
                hash_named(&f.named, &mut h);
                f.size.hash(&mut h);
            }
            _ => {}
        }
        Some(h.finish128().as_u128())
    }
}

impl Walk<'_> {
    /// The hash chain over a record's fields, kept in `prefixes`; `None` when a field's type
    /// reaches a cycle (the chain then stops before that field).
    fn fields(&mut self, id: NodeId, fields: &[Field]) -> Option<u128> {
        let mut chain = Vec::with_capacity(fields.len());
        let mut last = 0u128;
        let mut complete = true;
        for f in fields {
            let Some(ty) = self.shape(f.ty) else {
                complete = false;
                break;
            };
            let mut h = self.hasher();
            last.hash(&mut h);
            f.name.hash(&mut h);
            f.aliases.hash(&mut h);
            f.default.is_some().hash(&mut h);
            ty.hash(&mut h);
            last = h.finish128().as_u128();
            chain.push(last);
        }
        self.prefixes[id] = chain.into_boxed_slice();
        complete.then_some(last)
    }
}

fn hash_named(named: &Named, h: &mut SipHasher13) {
    named.name.name.hash(h);
    named.name.namespace.hash(h);
    named.aliases.hash(h);
}

fn hash_logical(logical: Option<&Logical>, h: &mut SipHasher13) {
    match logical {
        None => 0u8.hash(h),
        Some(l) => {
            1u8.hash(h);
            l.name().hash(h);
            if let Logical::Decimal { precision, scale } = l {
                precision.hash(h);
                scale.hash(h);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AvroFormat;
    use covenant_engine::Format;

    fn root_shape(text: &str) -> Shape {
        let s = AvroFormat::parse(text, &[]).expect("parses");
        compute(&s.arena).nodes[s.arena.root]
    }

    #[test]
    fn equal_structure_hashes_equal_and_docs_do_not_count() {
        let a = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}"#;
        let b = r#"{"type":"record","name":"R","doc":"x","fields":[{"name":"a","type":"int","doc":"y"}]}"#;
        assert!(root_shape(a).is_some());
        assert_eq!(root_shape(a), root_shape(b));
    }

    #[test]
    fn what_the_check_reads_changes_the_hash() {
        let base = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}"#;
        let changed = [
            r#"{"type":"record","name":"S","fields":[{"name":"a","type":"int"}]}"#,
            r#"{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":"int"}]}"#,
            r#"{"type":"record","name":"R","aliases":["Q"],"fields":[{"name":"a","type":"int"}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"b","type":"int"}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"a","aliases":["b"],"type":"int"}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":1}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":"long"}]}"#,
            r#"{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"int","logicalType":"date"}}]}"#,
            r#"{"type":"error","name":"R","fields":[{"name":"a","type":"int"}]}"#,
        ];
        let shapes: Vec<Shape> = changed.iter().map(|t| root_shape(t)).collect();
        let base = root_shape(base);
        for (text, shape) in changed.iter().zip(&shapes) {
            assert_ne!(*shape, base, "{text}");
        }
        let e = |s: &str| root_shape(&format!(r#"{{"type":"enum","name":"E","symbols":{s}}}"#));
        assert_ne!(e(r#"["A","B"]"#), e(r#"["B","A"]"#));
        assert_ne!(e(r#"["A"]"#), e(r#"["A","B"]"#));
        let f = |n: u32| root_shape(&format!(r#"{{"type":"fixed","name":"F","size":{n}}}"#));
        assert_ne!(f(4), f(8));
        let d = |p: u32, s: u32| {
            root_shape(&format!(
                r#"{{"type":"bytes","logicalType":"decimal","precision":{p},"scale":{s}}}"#
            ))
        };
        assert_ne!(d(10, 2), d(10, 3));
        assert_ne!(d(10, 2), d(12, 2));
        assert_ne!(
            root_shape(r#"["null","int"]"#),
            root_shape(r#"["int","null"]"#)
        );
        assert_ne!(
            root_shape(r#"{"type":"array","items":"int"}"#),
            root_shape(r#"{"type":"map","values":"int"}"#)
        );
    }

    #[test]
    fn nodes_that_reach_a_cycle_have_no_hash() {
        let text = r#"{"type":"record","name":"Outer","fields":[
            {"name":"plain","type":{"type":"record","name":"Leaf","fields":[{"name":"x","type":"int"}]}},
            {"name":"list","type":{"type":"record","name":"Node","fields":[
                {"name":"next","type":["null","Node"]}]}}]}"#;
        let s = AvroFormat::parse(text, &[]).expect("parses");
        let shapes = compute(&s.arena).nodes;
        let named = |name: &str| {
            (0..s.arena.nodes.len())
                .find(|i| {
                    s.arena
                        .kind(*i)
                        .named()
                        .is_some_and(|n| n.name.name == name)
                })
                .expect("defined")
        };
        assert!(shapes[named("Leaf")].is_some());
        assert!(shapes[named("Node")].is_none());
        assert!(shapes[s.arena.root].is_none(), "the root reaches the cycle");
    }
}

//! What one version of a schema gave numbers and names to: the part of its field tree read by
//! the rules that hold a new version against *every* earlier one (Protobuf numbers, names and
//! reservations; Iceberg field ids). It is a small fraction of the tree, so a parsed schema can
//! keep it: a registration then lowers only the version it replaces and the candidate into
//! field trees, not the subject's whole lineage.

use crate::{FieldTree, Node, NodeKind, NumberRange};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Numbering {
    /// Messages and enums (records and enums of the tree), one per path, in path order.
    pub declarations: Vec<Declaration>,
    /// Every field with a number, in the tree's depth-first order.
    pub fields: Vec<NumberedField>,
}

/// A message or enum: who holds each number and name, and what it reserved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declaration {
    pub path: String,
    /// The numbered fields of a message, or the numbered values of an enum, in declaration
    /// order.
    pub members: Vec<Member>,
    pub reserved_numbers: Vec<NumberRange>,
    pub reserved_names: Vec<String>,
    /// (number, name key, position in `members`) and (name key, position), sorted: a
    /// member's namesakes are found by two searches over small contiguous arrays instead of a
    /// scan (a subject's lineage holds hundreds of thousands of members).
    by_number: ByNumber,
    by_name: ByKey,
    /// A keyed hash of the members in order and the reservations: a declaration unchanged
    /// from one version to the next can answer nothing the earlier one did not.
    pub fingerprint: u128,
    /// No two members share a number or a name (always so for a message that compiled).
    distinct: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    pub number: i64,
    /// A message field's type as [`type_key`] keys it (0 for an enum value), so a number
    /// held under another name can be told from one held by another type.
    pub type_key: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumberedField {
    pub number: i64,
    pub name: String,
    pub type_name: String,
}

impl Numbering {
    pub fn of(tree: &FieldTree) -> Numbering {
        Numbering {
            fields: tree
                .nodes()
                .iter()
                .filter(|n| n.kind == NodeKind::Field)
                .filter_map(|n| {
                    Some(NumberedField {
                        number: n.number?,
                        name: n.name.clone(),
                        type_name: n.type_name.clone(),
                    })
                })
                .collect(),
            ..Numbering::declarations_of(tree)
        }
    }

    /// The messages and enums alone (no `fields`): what a format without field ids keeps.
    pub fn declarations_of(tree: &FieldTree) -> Numbering {
        let nodes = tree.nodes();
        // One declaration per path, the last of a path as a map collecting them keeps it.
        let declared: BTreeMap<&str, &Node> = nodes
            .iter()
            .filter(|n| matches!(n.kind, NodeKind::Record | NodeKind::Enum))
            .map(|n| (n.path.as_str(), *n))
            .collect();
        Numbering {
            declarations: declared.into_values().map(Declaration::of).collect(),
            fields: Vec::new(),
        }
    }

    /// The message or enum at `path`.
    pub fn declaration(&self, path: &str) -> Option<&Declaration> {
        let at = self
            .declarations
            .binary_search_by(|d| d.path.as_str().cmp(path))
            .ok()?;
        self.declarations.get(at)
    }
}

impl Declaration {
    fn of(node: &Node) -> Declaration {
        let members: Vec<Member> = match node.kind {
            NodeKind::Record => node
                .children
                .iter()
                .filter(|c| c.kind == NodeKind::Field)
                .filter_map(|c| {
                    Some(Member {
                        name: c.name.clone(),
                        number: c.number?,
                        type_key: type_key(c),
                    })
                })
                .collect(),
            NodeKind::Enum => node
                .enum_values
                .iter()
                .filter_map(|v| {
                    Some(Member {
                        name: v.name.clone(),
                        number: v.number?,
                        type_key: 0,
                    })
                })
                .collect(),
            _ => Vec::new(),
        };
        let (by_number, by_name) =
            sorted_positions(members.iter().map(|m| (m.number, name_key(&m.name))));
        let numbers_distinct = by_number.windows(2).all(|w| w[0].0 != w[1].0);
        let mut names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
        names.sort_unstable();
        let distinct = numbers_distinct && names.windows(2).all(|w| w[0] != w[1]);
        let fingerprint = fingerprint(node, &members);
        Declaration {
            path: node.path.clone(),
            members,
            reserved_numbers: node.reserved_numbers.clone(),
            reserved_names: node.reserved_names.clone(),
            by_number,
            by_name,
            distinct,
            fingerprint,
        }
    }

    pub fn reserves_number(&self, number: i64) -> bool {
        self.reserved_numbers.iter().any(|r| r.contains(number))
    }

    pub fn reserves_name(&self, name: &str) -> bool {
        self.reserved_names.iter().any(|n| n == name)
    }

    /// Whether the one member holding `number` is `name`, and no other member holds either:
    /// the common case of a member unchanged since, answered by one search over numbers.
    pub fn holds_only(&self, number: i64, name: &str, key: u64) -> bool {
        self.holds_exactly(self.numbered(number), name, key)
    }

    /// Whether `holders` (the entries of one number) are one member named `name` and no other
    /// member shares a number or a name.
    fn holds_exactly(&self, holders: &[(i64, u64, u32)], name: &str, key: u64) -> bool {
        self.distinct
            && matches!(holders, [(_, k, i)] if *k == key && self.members[*i as usize].name == name)
    }

    /// The first `Some` that `visit` returns for the members holding `number` or `name`
    /// (whose [`name_key`] is `key`), each visited once, in declaration order.
    pub fn find_holding<R>(
        &self,
        number: i64,
        name: &str,
        key: u64,
        mut visit: impl FnMut(&Member) -> Option<R>,
    ) -> Option<R> {
        let numbered = self.numbered(number);
        let start = self.by_name.partition_point(|&(k, _)| k < key);
        let end = start + self.by_name[start..].partition_point(|&(k, _)| k == key);
        if numbered.is_empty() && start == end {
            // Neither held here: the common answer for a member added after this version.
            return None;
        }
        let named = self.by_name[start..end]
            .iter()
            .map(|&(_, i)| i)
            .filter(|&i| self.members[i as usize].name == name);
        let mut positions: Vec<u32> = numbered.iter().map(|&(_, _, i)| i).chain(named).collect();
        if !numbered.is_empty() && positions.len() > numbered.len() {
            positions.sort_unstable();
            positions.dedup();
        }
        positions
            .into_iter()
            .find_map(|i| visit(&self.members[i as usize]))
    }

    /// Marks in `unsettled` (one flag per candidate, reset here) the candidates this
    /// declaration may hold something against: those whose number or name it reserves, and
    /// those whose number or name key it holds, except a candidate it holds exactly as it is
    /// ([`Declaration::holds_only`]). It can hold nothing against the others, so a caller
    /// searches only for the marked ones. Both sides are sorted, so this is two merges, not
    /// a search per candidate: a subject's lineage holds every member once per version.
    pub fn mark_unsettled(&self, candidates: &Candidates<'_>, unsettled: &mut Vec<bool>) {
        unsettled.clear();
        unsettled.resize(candidates.len(), false);
        let mut at = 0;
        for &(key, i) in &candidates.by_key {
            while self.by_name.get(at).is_some_and(|&(k, _)| k < key) {
                at += 1;
            }
            unsettled[i as usize] = self.by_name.get(at).is_some_and(|&(k, _)| k == key);
        }
        let mut at = 0;
        for &(number, key, i) in &candidates.by_number {
            while self.by_number.get(at).is_some_and(|&(n, _, _)| n < number) {
                at += 1;
            }
            // `at` stays at the first holder, for a candidate sharing the number.
            let run = self.by_number[at..]
                .iter()
                .take_while(|&&(n, _, _)| n == number)
                .count();
            let holders = &self.by_number[at..at + run];
            if !holders.is_empty() {
                let name = candidates.members[i as usize].0;
                unsettled[i as usize] = !self.holds_exactly(holders, name, key);
            }
        }
        if self.reserved_numbers.is_empty() && self.reserved_names.is_empty() {
            return;
        }
        for (flag, &(name, number)) in unsettled.iter_mut().zip(&candidates.members) {
            if self.reserves_number(number) || self.reserves_name(name) {
                *flag = true;
            }
        }
    }

    /// The members holding `number`, in declaration order.
    pub fn holders_of(&self, number: i64) -> impl Iterator<Item = &Member> {
        self.numbered(number)
            .iter()
            .map(|&(_, _, i)| &self.members[i as usize])
    }

    fn numbered(&self, number: i64) -> &[(i64, u64, u32)] {
        equal_range(&self.by_number, |&(n, _, _)| n.cmp(&number))
    }
}

fn fingerprint(node: &Node, members: &[Member]) -> u128 {
    use crate::shape::Hasher128;
    use std::hash::Hash;
    let mut h = crate::shape::hasher();
    for m in members {
        m.name.hash(&mut h);
        m.number.hash(&mut h);
        m.type_key.hash(&mut h);
    }
    0u8.hash(&mut h);
    for r in &node.reserved_numbers {
        (r.start, r.end).hash(&mut h);
    }
    node.reserved_names.hash(&mut h);
    h.finish128().as_u128()
}

/// The members of a new declaration, sorted as a [`Declaration`]'s are, to be screened
/// against each earlier version with [`Declaration::mark_unsettled`].
pub struct Candidates<'a> {
    /// (name, number) in the caller's order; positions below index it.
    members: Vec<(&'a str, i64)>,
    by_number: ByNumber,
    by_key: ByKey,
}

impl<'a> Candidates<'a> {
    /// `members` as (name, number, [`name_key`] of the name).
    pub fn new(members: impl IntoIterator<Item = (&'a str, i64, u64)>) -> Candidates<'a> {
        let members: Vec<(&str, i64, u64)> = members.into_iter().collect();
        let (by_number, by_key) =
            sorted_positions(members.iter().map(|&(_, number, key)| (number, key)));
        Candidates {
            members: members
                .iter()
                .map(|&(name, number, _)| (name, number))
                .collect(),
            by_number,
            by_key,
        }
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
}

/// (number, name key, position in the members), sorted by number.
type ByNumber = Vec<(i64, u64, u32)>;
/// (name key, position in the members), sorted by key.
type ByKey = Vec<(u64, u32)>;

/// For members given as (number, name key): (number, key, position) sorted by number, and
/// (key, position) sorted by key; equal numbers or keys keep the members' order.
fn sorted_positions(members: impl Iterator<Item = (i64, u64)>) -> (ByNumber, ByKey) {
    let mut by_number: ByNumber = members
        .enumerate()
        .map(|(i, (number, key))| (number, key, i as u32))
        .collect();
    let mut by_key: ByKey = by_number.iter().map(|&(_, key, i)| (key, i)).collect();
    by_number.sort_unstable_by_key(|&(number, _, i)| (number, i));
    by_key.sort_unstable();
    (by_number, by_key)
}

/// The key a field's type (its type name and logical type) is compared by.
pub fn type_key(field: &Node) -> u64 {
    use crate::shape::Hasher128;
    use std::hash::Hash;
    let mut h = crate::shape::hasher();
    field.type_name.hash(&mut h);
    field.logical_type.hash(&mut h);
    h.finish128().as_u128() as u64
}

/// The key a member's name is searched by.
pub fn name_key(name: &str) -> u64 {
    crate::shape::of_bytes(name.as_bytes()) as u64
}

/// The entries of a sorted slice that `order` finds equal.
fn equal_range<T>(sorted: &[T], order: impl Fn(&T) -> std::cmp::Ordering) -> &[T] {
    let start = sorted.partition_point(|x| order(x).is_lt());
    let end = start + sorted[start..].partition_point(|x| order(x).is_eq());
    &sorted[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EnumValue;

    fn field(name: &str, number: i64) -> Node {
        let mut n = Node::new(NodeKind::Field, name, format!("/m/fields/{name}"), "int32");
        n.number = Some(number);
        n
    }

    fn tree() -> FieldTree {
        let mut message = Node::new(NodeKind::Record, "M", "/m", "M");
        message.children = vec![field("b", 2), field("a", 1), field("c", 3)];
        message.reserved_numbers = vec![NumberRange { start: 7, end: 9 }];
        message.reserved_names = vec!["gone".into()];
        let mut status = Node::new(NodeKind::Enum, "S", "/s", "S");
        status.enum_values = vec![
            EnumValue::new("S_UNKNOWN", Some(0)),
            EnumValue::new("S_ON", Some(1)),
            EnumValue::new("S_ALSO_ON", Some(1)),
        ];
        let mut root = Node::new(NodeKind::Schema, "", "", "");
        root.children = vec![status, message];
        FieldTree {
            format: "PROTOBUF".into(),
            root,
        }
    }

    #[test]
    fn declarations_are_found_by_path_with_members_in_declaration_order() {
        let numbering = Numbering::of(&tree());
        let paths: Vec<&str> = numbering
            .declarations
            .iter()
            .map(|d| d.path.as_str())
            .collect();
        assert_eq!(paths, ["/m", "/s"]);
        let m = numbering.declaration("/m").unwrap();
        let names: Vec<&str> = m.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["b", "a", "c"]);
        assert!(m.reserves_number(8) && !m.reserves_number(10));
        assert!(m.reserves_name("gone") && !m.reserves_name("a"));
        assert!(numbering.declaration("/nope").is_none());
        let ids: Vec<i64> = numbering.fields.iter().map(|f| f.number).collect();
        assert_eq!(ids, [2, 1, 3]);
        let declared = Numbering::declarations_of(&tree());
        assert!(declared.fields.is_empty());
        assert_eq!(declared.declarations, numbering.declarations);
    }

    #[test]
    fn a_fingerprint_changes_with_members_and_reservations_only() {
        let fingerprint =
            |tree: &FieldTree| Numbering::of(tree).declaration("/m").unwrap().fingerprint;
        let base = tree();
        let mut documented = tree();
        documented.root.children[1].children[0].doc = Some("a doc".into());
        assert_eq!(fingerprint(&base), fingerprint(&documented));
        let mut reserved = tree();
        reserved.root.children[1]
            .reserved_names
            .push("other".into());
        assert_ne!(fingerprint(&base), fingerprint(&reserved));
        let mut renumbered = tree();
        renumbered.root.children[1].children[0].number = Some(4);
        assert_ne!(fingerprint(&base), fingerprint(&renumbered));
        let mut retyped = tree();
        retyped.root.children[1].children[0].type_name = "string".into();
        assert_ne!(fingerprint(&base), fingerprint(&retyped));
        let m = Numbering::of(&retyped);
        let m = m.declaration("/m").unwrap();
        let types: Vec<bool> = m
            .holders_of(2)
            .chain(m.holders_of(1))
            .map(|h| h.type_key == type_key(&retyped.root.children[1].children[0]))
            .collect();
        assert_eq!(
            types,
            [true, false],
            "'b' became a string, 'a' is still an int32"
        );
    }

    #[test]
    fn holding_finds_namesakes_and_aliases_once_in_declaration_order() {
        let numbering = Numbering::of(&tree());
        let holding = |d: &Declaration, number: i64, name: &str| {
            let mut held = Vec::new();
            let none: Option<()> = d.find_holding(number, name, name_key(name), |m| {
                held.push((m.name.clone(), m.number));
                None
            });
            assert!(none.is_none());
            held
        };
        let s = numbering.declaration("/s").unwrap();
        assert_eq!(
            holding(s, 1, "S_ON"),
            [("S_ON".to_string(), 1), ("S_ALSO_ON".to_string(), 1)]
        );
        let m = numbering.declaration("/m").unwrap();
        assert_eq!(
            holding(m, 3, "a"),
            [("a".to_string(), 1), ("c".to_string(), 3)]
        );
        assert_eq!(holding(m, 2, "b"), [("b".to_string(), 2)]);
        assert!(holding(m, 5, "z").is_empty());
        assert_eq!(
            m.find_holding(3, "a", name_key("a"), |m| (m.number == 3)
                .then(|| m.name.clone())),
            Some("c".to_string())
        );
        let only =
            |d: &Declaration, number: i64, name: &str| d.holds_only(number, name, name_key(name));
        assert!(only(m, 1, "a"));
        assert!(!only(m, 1, "b"), "'b' holds 2, 'a' holds 1");
        assert!(!only(m, 5, "z"));
        assert!(!only(s, 0, "S_UNKNOWN"), "aliases share numbers");
    }

    /// The screen leaves out exactly the candidates no search could find anything for: held
    /// as they are, or neither held nor reserved.
    #[test]
    fn screening_marks_what_a_search_may_find() {
        let numbering = Numbering::of(&tree());
        let screened = |d: &Declaration, members: &[(&'static str, i64)]| {
            let candidates =
                Candidates::new(members.iter().map(|&(name, n)| (name, n, name_key(name))));
            let mut unsettled = vec![true; 9];
            d.mark_unsettled(&candidates, &mut unsettled);
            members
                .iter()
                .zip(unsettled)
                .filter(|(_, marked)| *marked)
                .map(|(m, _)| m.0)
                .collect::<Vec<_>>()
        };
        let m = numbering.declaration("/m").unwrap();
        let members = [
            ("a", 1),     // held as it is
            ("b", 5),     // its name is held by 2
            ("x", 3),     // its number is held by 'c'
            ("new", 20),  // neither
            ("late", 8),  // a reserved number
            ("gone", 21), // a reserved name
            ("c", 3),     // held as it is
        ];
        assert_eq!(screened(m, &members), ["b", "x", "late", "gone"]);
        // Two candidates sharing a number both meet its holder.
        assert_eq!(screened(m, &[("p", 2), ("q", 2)]), ["p", "q"]);
        // Aliases: the enum holds 1 twice, so no member of 1 is settled without a search,
        // whichever candidate comes first in number order.
        let s = numbering.declaration("/s").unwrap();
        assert_eq!(
            screened(
                s,
                &[
                    ("S_ON", 1),
                    ("S_ALSO_ON", 1),
                    ("S_UNKNOWN", 0),
                    ("S_NEW", 2)
                ]
            ),
            ["S_ON", "S_ALSO_ON", "S_UNKNOWN"]
        );
    }
}

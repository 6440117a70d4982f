//! The old and new trees indexed once, so every rule pairs elements the same way: by path.

use crate::context::{PII_FIELDS, PolicyContext, SubjectMetadata};
use covenant_engine::{FieldTree, Node, NodeKind, Numbering};
use std::cell::OnceCell;
use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

/// A node with what its position in the tree says about it.
#[derive(Debug, Clone)]
pub(crate) struct Located<'a> {
    pub node: &'a Node,
    /// Names from the root down to the node's parent, empty names skipped (`["Case", "owner"]`
    /// for `id`). Siblings share one list: a message of thousands of fields holds one, not one
    /// per field, and only references to nodes by dotted name read it.
    ancestors: Rc<[&'a str]>,
}

impl<'a> Located<'a> {
    /// The name of the record or message holding the node, without its namespace
    /// (`Case` for `acme.Case`'s fields); `None` at the root or when it has no name.
    pub fn parent_name(&self) -> Option<&'a str> {
        self.ancestors
            .last()
            .map(|n| n.rsplit('.').next().unwrap_or(n))
            .filter(|n| !n.is_empty())
    }

    /// The node's names from the root down (`Case.owner.id`).
    fn dotted(&self) -> String {
        let own = Some(self.node.name.as_str()).filter(|n| !n.is_empty());
        let names: Vec<&str> = self.ancestors.iter().copied().chain(own).collect();
        names.join(".")
    }

    /// Whether `reference` names this node: its path, a dotted name from the root with or
    /// without the root's name (`Case.owner.id`, `owner.id`), a dotted tail of it, or, for a
    /// reference without separators, its bare name.
    pub fn matches(&self, reference: &str) -> bool {
        let reference = reference.trim();
        if reference.is_empty() {
            return false;
        }
        if reference == self.node.path {
            return true;
        }
        if reference.contains('/') {
            return false;
        }
        covenant_engine::budget::charge(1);
        let dotted = self.dotted();
        dotted == reference
            || dotted.ends_with(&format!(".{reference}"))
            || (!reference.contains('.') && self.node.name == reference)
    }

    /// Every text [`Located::matches`] accepts for this node, each once: its path, its dotted
    /// name, every dotted tail of it, and its bare name. A reference names the node exactly
    /// when it is one of them, so references are found through a set instead of being tried
    /// one by one against every node.
    pub fn names(&self) -> Vec<String> {
        let mut out = vec![self.node.path.clone()];
        let dotted = self.dotted();
        if !dotted.is_empty() {
            let tails = dotted.match_indices('.').map(|(i, _)| &dotted[i + 1..]);
            for name in std::iter::once(dotted.as_str()).chain(tails) {
                out.push(name.to_string());
            }
        }
        if !self.node.name.contains('.') {
            out.push(self.node.name.clone());
        }
        // A reference with a separator names a node by its path only.
        out.retain(|n| !n.is_empty());
        let path = out.remove(0);
        out.retain(|n| !n.contains('/'));
        out.push(path);
        out.sort_unstable();
        out.dedup();
        covenant_engine::budget::charge(out.len() as u64);
        out
    }
}

/// Values recorded under references to fields (consumers, deprecations, reported reads), found
/// by the names a node answers to: one lookup per name instead of a scan of every reference
/// for every node, which made a change of many fields against many references quadratic.
pub(crate) struct ByReference<'c, V> {
    by_name: HashMap<&'c str, Vec<V>, foldhash::fast::RandomState>,
}

impl<'c, V: Clone> ByReference<'c, V> {
    pub fn of(items: impl IntoIterator<Item = (&'c str, V)>) -> ByReference<'c, V> {
        let mut by_name: HashMap<&'c str, Vec<V>, _> = HashMap::default();
        for (reference, value) in items {
            let reference = reference.trim();
            if !reference.is_empty() {
                by_name.entry(reference).or_default().push(value);
            }
        }
        ByReference { by_name }
    }

    /// The values of every reference that names `located` (see [`Located::matches`]).
    pub fn naming(&self, located: &Located<'_>) -> Vec<V> {
        if self.by_name.is_empty() {
            return Vec::new();
        }
        located
            .names()
            .iter()
            .filter_map(|name| self.by_name.get(name.as_str()))
            .flatten()
            .cloned()
            .collect()
    }
}

pub(crate) struct Pair<'a> {
    pub old: &'a FieldTree,
    pub new: &'a FieldTree,
    /// What every earlier version known (oldest first, `old` among them) numbered and named,
    /// for rules about the whole history; empty when only `old` is known.
    pub lineage: &'a [(i64, &'a Numbering)],
    /// `old`'s numbering, made when a rule asks for the history and no lineage is known.
    old_numbering: OnceCell<Numbering>,
    pub context: &'a PolicyContext,
    old_index: Index<'a>,
    new_index: Index<'a>,
    /// Positions in `old_index` and `new_index` of the nodes at the same path in both trees,
    /// in the new tree's order: a dozen rules walk them, so they are paired once.
    matched: Vec<(usize, usize)>,
    /// Positions in `new_index` of the nodes only in the new tree.
    added: Vec<usize>,
    /// The context's consumers, deprecations and reported reads by the names they use.
    consumers: OnceCell<ByReference<'a, &'a Vec<String>>>,
    deprecated: OnceCell<ByReference<'a, ()>>,
    last_used: OnceCell<ByReference<'a, i64>>,
    /// Positions in `new_index` of the fields of each type, for the consumers of an enum.
    fields_by_type: OnceCell<HashMap<&'a str, Vec<usize>, foldhash::fast::RandomState>>,
}

/// A tree's nodes in its order, each found by its path in constant time. A tree of 5,000
/// fields has paths that share long prefixes, which made an ordered map's comparisons the
/// largest cost of judging a large Protobuf change.
struct Index<'a> {
    nodes: Vec<Located<'a>>,
    /// Seeded per process: the paths are names from submitted schemas.
    by_path: HashMap<&'a str, usize, foldhash::fast::RandomState>,
}

impl<'a> Index<'a> {
    fn of(tree: &'a FieldTree) -> Index<'a> {
        // Sized once: grown by doubling, both copied and rehashed their entries several times.
        let size = tree.root.size();
        let mut nodes = Vec::with_capacity(size);
        let mut by_path = HashMap::with_capacity_and_hasher(size, Default::default());
        let mut stack: Vec<(&Node, Rc<[&str]>)> = vec![(&tree.root, Rc::from([]))];
        while let Some((node, ancestors)) = stack.pop() {
            if !node.children.is_empty() {
                let own = Some(node.name.as_str()).filter(|n| !n.is_empty());
                let theirs: Rc<[&str]> = ancestors.iter().copied().chain(own).collect();
                for child in node.children.iter().rev() {
                    stack.push((child, theirs.clone()));
                }
            }
            // The first node wins a duplicate path; formats do not produce them on valid input.
            if let Entry::Vacant(slot) = by_path.entry(node.path.as_str()) {
                slot.insert(nodes.len());
                nodes.push(Located { node, ancestors });
            }
        }
        Index { nodes, by_path }
    }

    fn position(&self, path: &str) -> Option<usize> {
        self.by_path.get(path).copied()
    }

    fn get(&self, path: &str) -> Option<&Located<'a>> {
        self.position(path).map(|i| &self.nodes[i])
    }
}

impl<'a> Pair<'a> {
    pub fn new(old: &'a FieldTree, new: &'a FieldTree, context: &'a PolicyContext) -> Pair<'a> {
        let old_index = Index::of(old);
        let new_index = Index::of(new);
        let mut matched = Vec::new();
        let mut added = Vec::new();
        for (i, located) in new_index.nodes.iter().enumerate() {
            match old_index.position(&located.node.path) {
                Some(o) => matched.push((o, i)),
                None => added.push(i),
            }
        }
        Pair {
            old,
            new,
            lineage: &[],
            old_numbering: OnceCell::new(),
            context,
            old_index,
            new_index,
            matched,
            added,
            consumers: OnceCell::new(),
            deprecated: OnceCell::new(),
            last_used: OnceCell::new(),
            fields_by_type: OnceCell::new(),
        }
    }

    /// Whether a deprecation record names the node.
    pub fn is_deprecated(&self, located: &Located<'a>) -> bool {
        let context = self.context;
        let deprecated = self
            .deprecated
            .get_or_init(|| ByReference::of(context.deprecated.iter().map(|d| (d.as_str(), ()))));
        !deprecated.naming(located).is_empty()
    }

    /// The last read reported of the node, if any.
    pub fn last_used(&self, located: &Located<'a>) -> Option<i64> {
        let context = self.context;
        let last_used = self.last_used.get_or_init(|| {
            ByReference::of(context.last_used.iter().map(|(r, at)| (r.as_str(), *at)))
        });
        last_used.naming(located).into_iter().max()
    }

    /// The earlier versions to hold the new one against, oldest first: the lineage when
    /// known, else the old tree alone (its version number unknown).
    pub fn history(&self) -> Vec<(Option<i64>, &Numbering)> {
        if self.lineage.is_empty() {
            let old = self.old_numbering.get_or_init(|| Numbering::of(self.old));
            vec![(None, old)]
        } else {
            self.lineage.iter().map(|(v, n)| (Some(*v), *n)).collect()
        }
    }

    /// The format of the new schema, as a rule spec's `format` names it.
    pub fn format(&self) -> &'static str {
        ["avro", "json", "protobuf", "iceberg"]
            .into_iter()
            .find(|name| self.new.format.eq_ignore_ascii_case(name))
            .unwrap_or("any")
    }

    pub fn old_at(&self, path: &str) -> Option<&Located<'a>> {
        self.old_index.get(path)
    }

    pub fn new_at(&self, path: &str) -> Option<&Located<'a>> {
        self.new_index.get(path)
    }

    /// Nodes present at the same path in both trees, in the new tree's order.
    pub fn matched(&self) -> Vec<(&Located<'a>, &Located<'a>)> {
        self.matched
            .iter()
            .map(|&(o, n)| (&self.old_index.nodes[o], &self.new_index.nodes[n]))
            .collect()
    }

    /// Nodes only in the new tree, in its order.
    pub fn added(&self) -> Vec<&Located<'a>> {
        self.added
            .iter()
            .map(|&n| &self.new_index.nodes[n])
            .collect()
    }

    /// Every node of the old tree, in its order.
    pub fn old_nodes(&self) -> Vec<&Located<'a>> {
        self.old_index.nodes.iter().collect()
    }

    /// Every node of the new tree, in its order.
    pub fn new_nodes(&self) -> Vec<&Located<'a>> {
        self.new_index.nodes.iter().collect()
    }

    /// The consumers recorded for a node of the new tree, sorted and without repeats. For an
    /// enum declared on its own, consumers of every field of that enum type count too.
    pub fn consumers_of(&self, located: &Located<'a>) -> Vec<String> {
        let mut targets = vec![located];
        if located.node.kind == NodeKind::Enum {
            let fields_by_type = self.fields_by_type.get_or_init(|| {
                let mut by_type: HashMap<&'a str, Vec<usize>, _> = HashMap::default();
                for (i, l) in self.new_index.nodes.iter().enumerate() {
                    if l.node.kind == NodeKind::Field {
                        by_type
                            .entry(l.node.type_name.as_str())
                            .or_default()
                            .push(i);
                    }
                }
                by_type
            });
            let fields = fields_by_type.get(located.node.type_name.as_str());
            targets.extend(
                fields
                    .into_iter()
                    .flatten()
                    .map(|&i| &self.new_index.nodes[i]),
            );
        }
        if self.context.consumers.is_empty() {
            return Vec::new();
        }
        let context = self.context;
        let by_reference = self.consumers.get_or_init(|| {
            ByReference::of(context.consumers.iter().map(|(r, c)| (r.as_str(), c)))
        });
        let mut out = BTreeSet::new();
        for target in targets {
            for consumers in by_reference.naming(target) {
                out.extend(consumers.iter().cloned());
            }
        }
        out.into_iter().collect()
    }
}

impl<'a> Pair<'a> {
    /// The consumers recorded for the node at `path`, in the new tree or, when it is gone,
    /// in the old one.
    pub fn consumers_at(&self, path: &str) -> Vec<String> {
        match self
            .new_index
            .get(path)
            .or_else(|| self.old_index.get(path))
        {
            Some(located) => self.consumers_of(located),
            None => Vec::new(),
        }
    }
}

/// The personal-data tags a node carries under `metadata`: inline tags named by the subject's
/// PII tag list, tags from the metadata's `tags` map, and the `covenant.pii.fields` list.
pub(crate) fn pii_tags_of(located: &Located<'_>, metadata: &SubjectMetadata) -> Vec<String> {
    // Most nodes of most schemas carry no tag and no metadata names any: asked for each node.
    if located.node.tags.is_empty()
        && metadata.tags.is_empty()
        && metadata.field_list(PII_FIELDS).is_empty()
    {
        return Vec::new();
    }
    let wanted = metadata.pii_tags();
    let is_pii = |tag: &str| wanted.iter().any(|w| w.eq_ignore_ascii_case(tag));
    let mut out: Vec<String> = Vec::new();
    let mut push = |tag: &str| {
        if is_pii(tag) && !out.iter().any(|t| t.eq_ignore_ascii_case(tag)) {
            out.push(tag.to_string());
        }
    };
    for tag in &located.node.tags {
        push(tag);
    }
    for (reference, tags) in &metadata.tags {
        if located.matches(reference) {
            for tag in tags {
                push(tag);
            }
        }
    }
    if metadata
        .field_list(PII_FIELDS)
        .iter()
        .any(|r| located.matches(r))
    {
        let first = wanted.first().map(String::as_str).unwrap_or("PII");
        push(first);
    }
    out
}

/// Lower-case words of an identifier: `updatedAt`, `updated_at` and `UPDATED-AT` all give
/// `["updated", "at"]`; `caseID` gives `["case", "id"]`.
pub(crate) fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = name.chars().peekable();
    let mut prev: Option<char> = None;
    while let Some(c) = chars.next() {
        let before = prev.replace(c);
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            continue;
        }
        let boundary = c.is_uppercase()
            && before.is_some_and(|p| {
                p.is_lowercase()
                    || p.is_ascii_digit()
                    || (p.is_uppercase() && chars.peek().is_some_and(|n| n.is_lowercase()))
            });
        if boundary && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        if c.is_ascii() {
            current.push(c.to_ascii_lowercase());
        } else {
            current.extend(c.to_lowercase());
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// What kind of value a field holds, when getting its type wrong corrupts data quietly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sensitivity {
    Money,
    Time,
    Identity,
}

impl Sensitivity {
    pub fn describe(self) -> &'static str {
        match self {
            Sensitivity::Money => "money or an exact amount",
            Sensitivity::Time => "a point in time",
            Sensitivity::Identity => "an identifier",
        }
    }
}

/// Money words; `tick` is the minimum price movement of an instrument (`tick_size`).
const MONEY_WORDS: [&str; 15] = [
    "amount", "price", "total", "currency", "cost", "fee", "balance", "tax", "money", "notional",
    "payment", "salary", "discount", "cents", "tick",
];
const TIME_WORDS: [&str; 5] = ["timestamp", "time", "date", "datetime", "epoch"];
const TIME_LAST_WORDS: [&str; 3] = ["at", "ts", "on"];
const ID_LAST_WORDS: [&str; 6] = ["id", "ids", "key", "uuid", "guid", "identifier"];

fn logical_sensitivity(logical: &str) -> Option<Sensitivity> {
    let l = logical.to_ascii_lowercase();
    if l.starts_with("decimal") || l.ends_with("money") || l.ends_with("google.type.decimal") {
        Some(Sensitivity::Money)
    } else if l.contains("timestamp")
        || l.starts_with("date")
        || l.starts_with("time")
        || l.starts_with("local-timestamp")
        || l.contains("duration")
        || l.ends_with("google.type.date")
        || l.ends_with("timeofday")
    {
        Some(Sensitivity::Time)
    } else if l == "uuid" {
        Some(Sensitivity::Identity)
    } else {
        None
    }
}

/// Whether a node holds money, time or identity, judged by its logical type, its annotations
/// (`currency`, `clock`, `timezone`) or the words of its name.
pub(crate) fn sensitivity(node: &Node) -> Option<Sensitivity> {
    if let Some(s) = node.logical_type.as_deref().and_then(logical_sensitivity) {
        return Some(s);
    }
    if node.type_name.starts_with("decimal") {
        return Some(Sensitivity::Money);
    }
    if node.annotations.contains_key("currency") {
        return Some(Sensitivity::Money);
    }
    if node.annotations.contains_key("clock") || node.annotations.contains_key("timezone") {
        return Some(Sensitivity::Time);
    }
    let words = words(&node.name);
    let last = words.last().map(String::as_str).unwrap_or("");
    if words.iter().any(|w| MONEY_WORDS.contains(&w.as_str())) {
        Some(Sensitivity::Money)
    } else if words.iter().any(|w| TIME_WORDS.contains(&w.as_str()))
        || (words.len() > 1 && TIME_LAST_WORDS.contains(&last))
    {
        Some(Sensitivity::Time)
    } else if ID_LAST_WORDS.contains(&last) {
        Some(Sensitivity::Identity)
    } else {
        None
    }
}

/// Docs compared for meaning: case, spacing and a final full stop do not count.
pub(crate) fn same_text(a: &str, b: &str) -> bool {
    fn norm(s: &str) -> String {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .trim_end_matches('.')
            .to_lowercase()
    }
    norm(a) == norm(b)
}

/// `'a', 'b' and 'c'`.
pub(crate) fn quoted_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| format!("'{i}'")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_camel_snake_and_acronyms() {
        assert_eq!(words("updatedAt"), ["updated", "at"]);
        assert_eq!(words("updated_at"), ["updated", "at"]);
        assert_eq!(words("caseID"), ["case", "id"]);
        assert_eq!(words("HTTPStatus"), ["http", "status"]);
        assert_eq!(words("amountMinorUnits"), ["amount", "minor", "units"]);
        assert_eq!(words("tick-size"), ["tick", "size"]);
    }

    fn field(name: &str, ty: &str) -> Node {
        Node::new(NodeKind::Field, name, format!("/fields/{name}"), ty)
    }

    #[test]
    fn sensitivity_by_name_logical_type_and_annotation() {
        assert_eq!(
            sensitivity(&field("amount", "string")),
            Some(Sensitivity::Money)
        );
        assert_eq!(
            sensitivity(&field("unitPrice", "double")),
            Some(Sensitivity::Money)
        );
        assert_eq!(
            sensitivity(&field("updatedAt", "string")),
            Some(Sensitivity::Time)
        );
        assert_eq!(
            sensitivity(&field("created_at", "long")),
            Some(Sensitivity::Time)
        );
        assert_eq!(
            sensitivity(&field("caseId", "string")),
            Some(Sensitivity::Identity)
        );
        assert_eq!(
            sensitivity(&field("key", "string")),
            Some(Sensitivity::Identity)
        );
        assert_eq!(sensitivity(&field("status", "string")), None);
        assert_eq!(sensitivity(&field("hat", "string")), None);
        assert_eq!(
            sensitivity(&field("tick_size", "string")),
            Some(Sensitivity::Money)
        );
        let mut lot = field("lot_size", "bytes");
        assert_eq!(sensitivity(&lot), None);
        lot.logical_type = Some("decimal(38,18)".into());
        assert_eq!(sensitivity(&lot), Some(Sensitivity::Money));
        let mut seen = field("seen", "long");
        seen.annotations.insert("clock".into(), "business".into());
        assert_eq!(sensitivity(&seen), Some(Sensitivity::Time));
    }

    #[test]
    fn references_match_by_path_dotted_name_and_bare_name() {
        let node = Node::new(NodeKind::Field, "id", "/fields/owner/fields/id", "string");
        let located = Located {
            node: &node,
            ancestors: Rc::from(["Case", "owner"]),
        };
        for yes in ["/fields/owner/fields/id", "Case.owner.id", "owner.id", "id"] {
            assert!(located.matches(yes), "{yes}");
        }
        for no in ["/fields/id", "Case.id", "ownerid", ""] {
            assert!(!located.matches(no), "{no}");
        }
    }

    #[test]
    fn text_comparison_ignores_spacing_case_and_full_stop() {
        assert!(same_text(
            "Time the row was updated.",
            "time the  row was updated"
        ));
        assert!(!same_text(
            "Time the row was updated",
            "Time the event happened"
        ));
    }

    #[test]
    fn quoted_lists_read_as_prose() {
        assert_eq!(quoted_list(&["a".into()]), "'a'");
        assert_eq!(
            quoted_list(&["a".into(), "b".into(), "c".into()]),
            "'a', 'b' and 'c'"
        );
    }
}

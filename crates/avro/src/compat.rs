//! Reader/writer compatibility, walking both schemas the way Java's
//! `SchemaCompatibility.ReaderWriterCompatibilityChecker` does (which is Confluent's Avro
//! check), but collecting every incompatibility with a readable path. The verdict logic is
//! Java's; the per-rule decisions and messages live in `crate::rules`.

use crate::model::{Arena, Kind, NodeId};
use crate::rules::{
    fixed_size_mismatch, logical_type_changed, missing_enum_symbols, missing_union_branch,
    name_mismatch, reader_field_missing_default_value, type_mismatch,
};
use crate::text::text;
use covenant_engine::RuleSpec;
use std::rc::Rc;

/// A finding as the walk builds it: its `path` is relative to the (reader, writer) pair it was
/// found under, so memoized results can be reused at any location, and becomes absolute as
/// the walk returns to the root.
pub type Issue = covenant_engine::Finding;

fn incompatible(issues: &[Issue]) -> bool {
    issues.iter().any(Issue::is_error)
}

/// Memo keys are pairs of node indexes chosen by the schemas' structure, not by who sends
/// them, so a fast hasher with a fixed seed is enough.
type PairMap<V> = std::collections::HashMap<(NodeId, NodeId), V, foldhash::fast::FixedState>;

/// Past this many pairs a memo moves from a list to a hash map.
const LIST_PAIRS: usize = 16;

/// What a check knows of the pairs it met. Most checks meet a handful of named pairs: a scan
/// of a short list finds them sooner than hashing, and building a hash table for every check
/// was a tenth of a small check's time; large schemas still get the map.
enum PairMemo<V> {
    List(Vec<((NodeId, NodeId), V)>),
    Map(PairMap<V>),
}

impl<V> PairMemo<V> {
    fn new() -> Self {
        PairMemo::List(Vec::new())
    }

    fn get(&self, key: &(NodeId, NodeId)) -> Option<&V> {
        match self {
            PairMemo::List(list) => list.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            PairMemo::Map(map) => map.get(key),
        }
    }

    fn get_mut(&mut self, key: &(NodeId, NodeId)) -> Option<&mut V> {
        match self {
            PairMemo::List(list) => list.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            PairMemo::Map(map) => map.get_mut(key),
        }
    }

    /// Records a pair not recorded yet.
    fn insert_new(&mut self, key: (NodeId, NodeId), value: V) {
        match self {
            PairMemo::List(list) if list.len() < LIST_PAIRS => {
                if list.capacity() == 0 {
                    list.reserve(4);
                }
                list.push((key, value));
            }
            PairMemo::List(list) => {
                let mut map: PairMap<V> = std::mem::take(list).into_iter().collect();
                map.insert(key, value);
                *self = PairMemo::Map(map);
            }
            PairMemo::Map(map) => {
                map.insert(key, value);
            }
        }
    }
}

/// What the memo knows of a pair.
#[derive(Clone)]
enum Memo {
    /// Being compared further up: met again, it counts as compatible (Java's
    /// RECURSION_IN_PROGRESS), which is what ends recursion on recursive types.
    InProgress,
    /// Compared, with these issues (`None` for none: the usual case, and no allocation).
    Done(Option<Rc<Vec<Issue>>>),
}

/// The issues under a pair: owned when nobody else holds them (they are then moved into the
/// parent's list, not copied), shared when the memo keeps them too.
enum Found {
    Owned(Vec<Issue>),
    Shared(Rc<Vec<Issue>>),
}

impl Found {
    fn none() -> Found {
        Found::Owned(Vec::new())
    }
}

pub struct Checker<'a> {
    pub r: &'a Arena,
    pub w: &'a Arena,
    /// Pairs where either side is a named type. Every cycle of the walk passes through a
    /// named type on the side that moves, so these are enough to end recursion, and an
    /// unnamed node has one parent, so it is met again only under a memoized pair.
    memo: PairMemo<Memo>,
    /// Whether a pair is compatible, for choosing union branches: only the verdict is kept,
    /// not the issues with their paths, so trying every branch of a union against every
    /// branch of another costs one entry per pair instead of all their issues.
    verdicts: PairMemo<bool>,
    /// True while `calculate` only needs a verdict (nested issues are then not collected,
    /// and errors are recorded without their messages).
    verdict_only: bool,
    /// How many pairs are being compared one inside the other.
    depth: usize,
}

/// Nested pair comparisons deeper than this spend the whole budget instead of risking the
/// stack. Parsing bounds each schema's depth, but a reader cycle and a writer cycle of
/// different lengths walk together for the product of their lengths before a pair repeats.
const MAX_PAIR_DEPTH: usize = 512;

impl<'a> Checker<'a> {
    pub fn new(r: &'a Arena, w: &'a Arena) -> Self {
        Checker {
            r,
            w,
            memo: PairMemo::new(),
            verdicts: PairMemo::new(),
            verdict_only: false,
            depth: 0,
        }
    }

    pub fn check_root(mut self) -> Vec<Issue> {
        let found = self.get(self.r.root, self.w.root);
        // Dropping the memo first leaves the root's issues owned once: no copy.
        drop(self.memo);
        match found {
            Found::Owned(issues) => issues,
            Found::Shared(rc) => Rc::try_unwrap(rc).unwrap_or_else(|shared| shared.to_vec()),
        }
    }

    fn primitives(&self, r: NodeId, w: NodeId) -> bool {
        self.r.kind(r).is_primitive() && self.w.kind(w).is_primitive()
    }

    fn memoized(&self, r: NodeId, w: NodeId) -> bool {
        self.r.kind(r).named().is_some() || self.w.kind(w).named().is_some()
    }

    fn get(&mut self, r: NodeId, w: NodeId) -> Found {
        if self.r.same_shape(r, self.w, w) {
            return Found::none();
        }
        // Primitive pairs cannot recurse; memoizing them would only cost time.
        if self.primitives(r, w) {
            return Found::Owned(self.calculate(r, w));
        }
        let memoized = self.memoized(r, w);
        if memoized {
            match self.memo.get(&(r, w)) {
                Some(Memo::Done(Some(done))) => return Found::Shared(done.clone()),
                Some(_) => return Found::none(),
                None => {}
            }
        }
        if !self.enter() {
            return Found::none();
        }
        if !memoized {
            let issues = self.calculate(r, w);
            self.depth -= 1;
            return Found::Owned(issues);
        }
        self.memo.insert_new((r, w), Memo::InProgress);
        let issues = self.calculate(r, w);
        let (done, found) = if issues.is_empty() {
            (None, Found::none())
        } else {
            let rc = Rc::new(issues);
            (Some(rc.clone()), Found::Shared(rc))
        };
        if let Some(slot) = self.memo.get_mut(&(r, w)) {
            *slot = Memo::Done(done);
        }
        self.depth -= 1;
        found
    }

    /// One more nested pair, charged to the budget; false when the walk must stop (the
    /// budget is spent, and the partial result will be discarded).
    fn enter(&mut self) -> bool {
        if self.depth >= MAX_PAIR_DEPTH {
            covenant_engine::budget::exhaust();
            return false;
        }
        if covenant_engine::budget::charge(1) {
            return false;
        }
        self.depth += 1;
        true
    }

    /// Whether a reader of `r` can read `w`, like `!incompatible(&self.get(r, w))` without
    /// keeping issues. A pair met again while in progress counts as compatible, as in `get`.
    fn compatible(&mut self, r: NodeId, w: NodeId) -> bool {
        if self.r.same_shape(r, self.w, w) {
            return true;
        }
        if self.primitives(r, w) {
            // What `calculate` decides for two primitives, without building its issues:
            // the same type (a changed logical type only warns) or a promotion.
            let (rk, wk) = (self.r.kind(r), self.w.kind(w));
            return std::mem::discriminant(rk) == std::mem::discriminant(wk)
                || type_mismatch::promotes(rk, wk);
        }
        let memoized = self.memoized(r, w);
        if memoized {
            if let Some(done) = self.verdicts.get(&(r, w)) {
                return *done;
            }
            match self.memo.get(&(r, w)) {
                Some(Memo::Done(found)) => {
                    return found.as_ref().is_none_or(|i| !incompatible(i));
                }
                Some(Memo::InProgress) => return true,
                None => {}
            }
        }
        if !self.enter() {
            return true;
        }
        if memoized {
            self.verdicts.insert_new((r, w), true);
        }
        let outer = std::mem::replace(&mut self.verdict_only, true);
        let verdict = !incompatible(&self.calculate(r, w));
        self.verdict_only = outer;
        if memoized && let Some(slot) = self.verdicts.get_mut(&(r, w)) {
            *slot = verdict;
        }
        self.depth -= 1;
        verdict
    }

    /// An error of `rule`: the issue `build` makes, or while only a verdict is wanted, a
    /// marker of the rule without path or message (which costs no allocation).
    fn error(&self, rule: &'static RuleSpec, build: impl FnOnce() -> Issue) -> Issue {
        if self.verdict_only {
            Issue::new(rule, String::new(), String::new())
        } else {
            build()
        }
    }

    fn nested(&mut self, segment: &str, r: NodeId, w: NodeId, out: &mut Vec<Issue>) {
        self.nested_with(|| segment.to_string(), r, w, out)
    }

    /// Like `nested`, building the path segment only when there is something to report.
    fn nested_with(
        &mut self,
        segment: impl FnOnce() -> String,
        r: NodeId,
        w: NodeId,
        out: &mut Vec<Issue>,
    ) {
        // A schema reads itself with no finding: identical sub-schemas need no walk.
        if self.r.same_shape(r, self.w, w) {
            return;
        }
        if self.verdict_only {
            if !self.compatible(r, w) {
                out.push(Issue::new(
                    &type_mismatch::RULE,
                    String::new(),
                    String::new(),
                ));
            }
            return;
        }
        match self.get(r, w) {
            Found::Owned(issues) => {
                if issues.is_empty() {
                    return;
                }
                let segment = segment();
                out.extend(issues.into_iter().map(|mut issue| {
                    issue.path.insert_str(0, &segment);
                    issue
                }));
            }
            Found::Shared(issues) => {
                let segment = segment();
                out.extend(issues.iter().map(|issue| Issue {
                    rule: issue.rule.clone(),
                    severity: issue.severity,
                    path: text(&[&segment, &issue.path]),
                    message: issue.message.clone(),
                    hint: issue.hint.clone(),
                    version: None,
                }));
            }
        }
    }

    fn calculate(&mut self, r: NodeId, w: NodeId) -> Vec<Issue> {
        let (rk, wk) = (self.r.kind(r), self.w.kind(w));
        let mut out = Vec::new();
        if std::mem::discriminant(rk) == std::mem::discriminant(wk) {
            match (rk, wk) {
                (Kind::Array(ri), Kind::Array(wi)) => self.nested("/items", *ri, *wi, &mut out),
                (Kind::Map(rv), Kind::Map(wv)) => self.nested("/values", *rv, *wv, &mut out),
                (Kind::Fixed(rf), Kind::Fixed(wf)) => {
                    out.extend(name_mismatch::check(&rf.named, &wf.named, "fixed"));
                    out.extend(fixed_size_mismatch::check(rf, wf));
                    out.extend(logical_type_changed::check(self.r.node(r), self.w.node(w)));
                }
                (Kind::Enum(re), Kind::Enum(we)) => {
                    out.extend(name_mismatch::check(&re.named, &we.named, "enum"));
                    out.extend(missing_enum_symbols::check(re, we));
                }
                (Kind::Record(rr), Kind::Record(wr)) => {
                    out.extend(name_mismatch::check(&rr.named, &wr.named, "record"));
                    // Java's `lookupWriterField`: same name, else a writer field named by a
                    // reader alias (Java throws when several match; we take the first). The
                    // field at the same position is tried first: it is the one when fields
                    // were only added at the end. Leading fields that are the same on both
                    // sides read each other and are skipped.
                    let same = self.r.shapes.common_fields(r, &self.w.shapes, w);
                    for (i, rf) in rr.fields.iter().enumerate().skip(same) {
                        let found = match wr.fields.get(i) {
                            Some(wf) if wf.name == rf.name => Some(wf),
                            // The writer's fields are all named like earlier reader fields.
                            _ if same == wr.fields.len() && rf.aliases.is_empty() => None,
                            _ => wr
                                .field(&rf.name)
                                .or_else(|| rf.aliases.iter().find_map(|a| wr.field(a))),
                        };
                        match found {
                            Some(wf) => self.nested_with(
                                || text(&[&"/fields/", &rf.name, &"/type"]),
                                rf.ty,
                                wf.ty,
                                &mut out,
                            ),
                            None if rf.default.is_some() => {}
                            None => {
                                if let Kind::Enum(e) = self.r.kind(rf.ty)
                                    && e.default.is_some()
                                {
                                    // Java compares the reader's enum with the writer's whole
                                    // record here, which always fails as a type mismatch.
                                    out.push(self.error(&type_mismatch::RULE, || {
                                        type_mismatch::enum_default_without_field(
                                            text(&[&"/fields/", &rf.name, &"/type"]),
                                            &rf.name,
                                            &wr.named.name,
                                        )
                                    }));
                                } else {
                                    out.push(self.error(
                                        &reader_field_missing_default_value::RULE,
                                        || {
                                            reader_field_missing_default_value::issue(
                                                text(&[&"/fields/", &rf.name]),
                                                &rf.name,
                                                &wr.named.name,
                                            )
                                        },
                                    ));
                                }
                            }
                        }
                    }
                }
                (Kind::Union(_), Kind::Union(wbs)) => {
                    for &wb in wbs {
                        if !self.compatible(r, wb) {
                            out.push(self.error(&missing_union_branch::RULE, || {
                                missing_union_branch::writer_branch(
                                    text(&[&"/", &self.w.branch_label(wb)]),
                                    &self.r.describing(r),
                                    &self.w.describing(wb),
                                )
                            }));
                        }
                    }
                }
                _ => out.extend(logical_type_changed::check(self.r.node(r), self.w.node(w))),
            }
            return out;
        }
        if let Kind::Union(wbs) = wk {
            for &wb in wbs {
                self.nested("", r, wb, &mut out);
            }
            return out;
        }
        if let Kind::Union(rbs) = rk {
            // The branch named like the writer's type first: it is the one that matches
            // when any does, which keeps a large union against its own types linear.
            let first = rbs
                .iter()
                .position(|b| same_label(self.r, *b, self.w, w))
                .unwrap_or(0);
            // That branch swapped with the first, the others in their order.
            let swapped = |i: usize| match i {
                0 => first,
                i if i == first => 0,
                i => i,
            };
            for i in (0..rbs.len()).map(swapped) {
                if self.compatible(rbs[i], w) {
                    return out;
                }
            }
            out.push(self.error(&missing_union_branch::RULE, || {
                missing_union_branch::reader_union("", &self.r.describing(r), &self.w.describing(w))
            }));
            return out;
        }
        if !type_mismatch::promotes(rk, wk) {
            out.push(self.error(&type_mismatch::RULE, || {
                type_mismatch::issue("", &self.r.describing(r), &self.w.describing(w))
            }));
        }
        out
    }
}

/// Whether two nodes have the same union branch label (`Arena::branch_label`), compared
/// without building the labels.
fn same_label(a: &Arena, a_id: NodeId, b: &Arena, b_id: NodeId) -> bool {
    let (ak, bk) = (a.kind(a_id), b.kind(b_id));
    match (ak.named(), bk.named()) {
        (Some(x), Some(y)) => {
            x.name.name == y.name.name
                && x.name.namespace.as_deref().unwrap_or("")
                    == y.name.namespace.as_deref().unwrap_or("")
        }
        (None, None) => ak.type_name() == bk.type_name(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::test_support::{findings, pair};

    fn record(fields: &str) -> String {
        format!(r#"{{"type":"record","name":"R","fields":[{fields}]}}"#)
    }

    #[test]
    fn fields_after_a_shared_prefix_are_still_judged() {
        let shared = r#"{"name":"a","type":"int"},{"name":"b","type":"string"}"#;
        let writer = record(&format!(r#"{shared},{{"name":"c","type":"int"}}"#));
        let reader = record(&format!(
            r#"{shared},{{"name":"c","type":"string"}},{{"name":"d","type":"long"}}"#
        ));
        assert_eq!(
            findings(&reader, &writer),
            vec![
                pair("TYPE_MISMATCH", "/fields/c/type"),
                pair("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/d"),
            ]
        );
    }

    #[test]
    fn a_later_reader_field_may_read_a_shared_writer_field_by_alias() {
        let writer = record(r#"{"name":"a","type":"int"}"#);
        let reader =
            record(r#"{"name":"a","type":"int"},{"name":"b","aliases":["a"],"type":"string"}"#);
        assert_eq!(
            findings(&reader, &writer),
            vec![pair("TYPE_MISMATCH", "/fields/b/type")]
        );
    }

    #[test]
    fn identical_sub_schemas_inside_different_records_have_no_findings() {
        let line = r#"{"name":"line","type":{"type":"record","name":"L","fields":[{"name":"x","type":["null","int"]}]}}"#;
        let writer = record(line);
        let reader = record(&format!(
            r#"{{"name":"z","type":"int","default":0}},{line}"#
        ));
        assert!(findings(&reader, &writer).is_empty());
        assert!(findings(&writer, &reader).is_empty());
    }

    #[test]
    fn fields_found_away_from_their_position_in_a_large_record_are_judged() {
        // Past the size where fields are found through an index.
        let fields: Vec<String> = (0..40)
            .map(|i| format!(r#"{{"name":"f{i}","type":"int"}}"#))
            .collect();
        let writer = record(&fields.join(","));
        let mut reordered = fields.clone();
        reordered.reverse();
        reordered[0] = r#"{"name":"f39","type":"string"}"#.to_string();
        let reader = record(&reordered.join(","));
        assert_eq!(
            findings(&reader, &writer),
            vec![pair("TYPE_MISMATCH", "/fields/f39/type")]
        );
    }
}

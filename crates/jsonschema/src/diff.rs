//! Reader/writer comparison with Confluent's `SchemaDiff` semantics.
//!
//! The writer is the original schema and the reader the update. Every difference is recorded
//! with its Confluent type name and path; whether it breaks compatibility is decided afterwards
//! by the policy, so compatible differences still explain themselves. Pairs of nodes are
//! memoized, and a pair met again while it is being compared is a recursive cycle that is
//! assumed compatible (then re-checked to a fixpoint, so the assumption cannot hide a break).

use crate::model::{ArrayNode, Bounded, Criterion, Kind, Model, NodeId, ObjectNode};
use crate::rules::*;
use covenant_engine::JsonPolicy;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

#[derive(Debug, Clone)]
pub struct Diff {
    pub rule: &'static Difference,
    pub path: String,
    pub message: String,
}

type Pair = (NodeId, NodeId);

struct Shared<'a> {
    w: &'a Model,
    r: &'a Model,
    policy: JsonPolicy,
    /// Whether equal source texts are equal schemas (see [`Shared::alike`]).
    texts_decide: bool,
    memo: HashMap<Pair, Vec<Diff>>,
    in_progress: HashSet<Pair>,
    seed: HashMap<Pair, Vec<Diff>>,
    optimistic: bool,
    /// Pairs being compared one inside the other, across role swaps (`not`).
    depth: usize,
    /// The memo and in-progress pairs of the other orientation (roles swapped by `not`),
    /// kept across swaps so that nested `not`s and cycles through them are memoized too.
    reverse: Orientation,
    /// `patternProperties` patterns compiled so far, shared by both orientations.
    patterns: Rc<Patterns>,
}

/// The `patternProperties` patterns of one check, each compiled once however many properties
/// it is tried against (recompiling per property made many patterns times many properties
/// cost their product in compilations). Bounded: past [`MAX_CACHED_PATTERNS`] distinct
/// patterns, further ones are compiled for each use, and charged for it.
#[derive(Default)]
struct Patterns(RefCell<HashMap<String, Option<Rc<regex::Regex>>>>);

const MAX_CACHED_PATTERNS: usize = 4_096;

impl Patterns {
    /// Whether `pattern` (an invalid one matches nothing) matches `key`. Each test is a unit
    /// of the check's work, each compilation more in proportion to the pattern's length.
    /// `None` once the budget is spent: the caller stops, and its partial result is discarded.
    fn is_match(&self, pattern: &str, key: &str) -> Option<bool> {
        if covenant_engine::budget::charge(1) {
            return None;
        }
        let cached = self.0.borrow().get(pattern).cloned();
        let re = match cached {
            Some(re) => re,
            None => {
                covenant_engine::budget::charge(16 + pattern.len() as u64);
                let re = regex::Regex::new(pattern).ok().map(Rc::new);
                let mut cache = self.0.borrow_mut();
                if cache.len() < MAX_CACHED_PATTERNS {
                    cache.insert(pattern.to_string(), re.clone());
                }
                re
            }
        };
        Some(re.is_some_and(|re| re.is_match(key)))
    }
}

/// The state of one orientation of the comparison.
#[derive(Default)]
struct Orientation {
    memo: HashMap<Pair, Vec<Diff>>,
    in_progress: HashSet<Pair>,
    seed: HashMap<Pair, Vec<Diff>>,
}

/// Nested pair comparisons deeper than this spend the whole budget instead of risking the
/// stack: two cycles of different lengths walk together for the product of their lengths
/// before a pair repeats. The walk runs on its own large stack; this bound
/// keeps well inside it.
const MAX_PAIR_DEPTH: usize = 2_000;

/// One comparison scope: a path stack and the differences found under it.
struct Ctx {
    path: Vec<String>,
    diffs: Vec<Diff>,
}

fn path_string(path: &[String]) -> String {
    format!("#/{}", path.join("/"))
}

fn rebase(prefix: &str, relative: &str) -> String {
    if relative.len() <= 2 {
        prefix.to_string()
    } else if prefix.len() <= 2 {
        relative.to_string()
    } else {
        format!("{}/{}", prefix, &relative[2..])
    }
}

fn quote(path: &str) -> String {
    format!("'{path}'")
}

impl Ctx {
    fn new() -> Ctx {
        Ctx {
            path: Vec::new(),
            diffs: Vec::new(),
        }
    }

    fn sub(&self) -> Ctx {
        Ctx {
            path: self.path.clone(),
            diffs: Vec::new(),
        }
    }

    fn add(&mut self, rule: &'static Difference, message: impl Into<String>) {
        self.diffs.push(Diff {
            rule,
            path: path_string(&self.path),
            message: message.into(),
        });
    }

    fn add_at(&mut self, attribute: &str, rule: &'static Difference, message: impl Into<String>) {
        self.path.push(attribute.to_string());
        self.add(rule, message);
        self.path.pop();
    }

    fn here(&self) -> String {
        quote(&path_string(&self.path))
    }

    fn compatible(&self, policy: JsonPolicy) -> bool {
        self.diffs.iter().all(|d| d.rule.is_compatible(policy))
    }
}

/// Every difference between `writer` (original) and `reader` (update).
/// `texts_decide` says that subschemas of the same source text mean the same (one dialect on
/// both sides, no referenced documents): see [`Shared::alike`].
pub fn compare(
    writer: &Model,
    reader: &Model,
    policy: JsonPolicy,
    texts_decide: bool,
) -> Vec<Diff> {
    let mut seed: HashMap<Pair, Vec<Diff>> = HashMap::new();
    let patterns = Rc::new(Patterns::default());
    for _ in 0..32 {
        let mut shared = Shared {
            w: writer,
            r: reader,
            policy,
            texts_decide,
            memo: HashMap::new(),
            in_progress: HashSet::new(),
            seed: seed.clone(),
            optimistic: false,
            depth: 0,
            reverse: Orientation::default(),
            patterns: patterns.clone(),
        };
        let mut ctx = Ctx::new();
        shared.compare(&mut ctx, Some(writer.root), Some(reader.root));
        let incompatible: HashMap<Pair, Vec<Diff>> = shared
            .memo
            .iter()
            .filter(|(_, d)| d.iter().any(|d| !d.rule.is_compatible(policy)))
            .map(|(k, v)| (*k, v.clone()))
            .collect();
        let same: bool =
            incompatible.len() == seed.len() && incompatible.keys().all(|k| seed.contains_key(k));
        if !shared.optimistic || same {
            return ctx.diffs;
        }
        seed = incompatible;
    }
    Vec::new()
}

fn fmt_num(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

/// Exact decimal arithmetic for `multipleOf`, which floats get wrong (0.3 / 0.1).
fn decimal(text: &str) -> Option<(i128, u32)> {
    let lower = text.to_ascii_lowercase();
    let (mantissa, exponent) = match lower.split_once('e') {
        Some((m, e)) => (m.to_string(), e.parse::<i32>().ok()?),
        None => (lower.clone(), 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((&mantissa, ""));
    let digits = format!("{int_part}{frac_part}");
    let mut value: i128 = digits.parse().ok()?;
    let mut scale = frac_part.len() as i32 - exponent;
    while scale < 0 {
        value = value.checked_mul(10)?;
        scale += 1;
    }
    Some((value, scale as u32))
}

/// Whether `a` is an integer multiple of `b`.
fn is_multiple(a: &str, b: &str) -> bool {
    let (Some((av, ascale)), Some((bv, bscale))) = (decimal(a), decimal(b)) else {
        return false;
    };
    if bv == 0 {
        return false;
    }
    let scale = ascale.max(bscale);
    let (Some(a), Some(b)) = (
        10i128
            .checked_pow(scale - ascale)
            .and_then(|f| av.checked_mul(f)),
        10i128
            .checked_pow(scale - bscale)
            .and_then(|f| bv.checked_mul(f)),
    ) else {
        return false;
    };
    a % b == 0
}

fn decimal_eq(a: &str, b: &str) -> bool {
    is_multiple(a, b)
        && is_multiple(b, a)
        && decimal(a).map(|x| x.0 > 0) == decimal(b).map(|x| x.0 > 0)
}

fn value_set(values: &[Value]) -> HashSet<String> {
    values.iter().map(crate::model::canonical).collect()
}

/// Seeded per process: the names are keys of submitted schemas.
type NameHasher = foldhash::fast::RandomState;

/// A set of property names (`required`).
type Names<'a> = HashSet<&'a str, NameHasher>;

/// Name to value, for lookups by name in keyword lists (`properties`, dependencies).
fn index<T>(pairs: &[(String, T)]) -> HashMap<&str, &T, NameHasher> {
    pairs.iter().map(|(k, v)| (k.as_str(), v)).collect()
}

/// The names of `a` then those of `b` not in `a`, each once.
fn all_keys<T>(a: &[(String, T)], b: &[(String, T)]) -> Vec<String> {
    let mut seen = HashSet::new();
    a.iter()
        .chain(b)
        .filter(|(k, _)| seen.insert(k.as_str()))
        .map(|(k, _)| k.clone())
        .collect()
}

/// Maximum bipartite matching (augmenting paths); edges are (left, right) indexes.
fn max_matching(left: usize, right: usize, edges: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut adjacency = vec![Vec::new(); left];
    for &(l, r) in edges {
        adjacency[l].push(r);
    }
    let mut match_right: Vec<Option<usize>> = vec![None; right];
    fn augment(
        l: usize,
        adjacency: &[Vec<usize>],
        seen: &mut [bool],
        match_right: &mut [Option<usize>],
    ) -> bool {
        for &r in &adjacency[l] {
            if seen[r] {
                continue;
            }
            seen[r] = true;
            if match_right[r].is_none_or(|other| augment(other, adjacency, seen, match_right)) {
                match_right[r] = Some(l);
                return true;
            }
        }
        false
    }
    for l in 0..left {
        let mut seen = vec![false; right];
        augment(l, &adjacency, &mut seen, &mut match_right);
    }
    match_right
        .iter()
        .enumerate()
        .filter_map(|(r, l)| l.map(|l| (l, r)))
        .collect()
}

/// Every keyword of the table's `BOUNDS` whose value differs between two nodes of one kind,
/// in the table's order.
fn bounds(ctx: &mut Ctx, o: &impl Bounded, u: &impl Bounded) {
    for row in BOUNDS {
        let keyword = row.keyword();
        let (a, b) = (o.bound(keyword), u.bound(keyword));
        match row {
            Bound::Upper(_, rules) | Bound::Lower(_, rules) => bound(ctx, keyword, a, b, *rules),
            Bound::Flag(_, [added, removed]) => match (a, b) {
                (None, Some(_)) => ctx.add_at(
                    keyword,
                    added,
                    format!("'{keyword}' was added at {}.", ctx.here()),
                ),
                (Some(_), None) => ctx.add_at(
                    keyword,
                    removed,
                    format!("'{keyword}' was removed at {}.", ctx.here()),
                ),
                _ => {}
            },
        }
    }
}

/// A bound's difference; `rules` are [added, removed, increased, decreased].
fn bound(
    ctx: &mut Ctx,
    keyword: &str,
    o: Option<f64>,
    u: Option<f64>,
    rules: [&'static Difference; 4],
) {
    let [added, removed, increased, decreased] = rules;
    match (o, u) {
        (None, Some(b)) => ctx.add_at(
            keyword,
            added,
            format!("'{keyword}' {} was added at {}.", fmt_num(b), ctx.here()),
        ),
        (Some(a), None) => ctx.add_at(
            keyword,
            removed,
            format!("'{keyword}' {} was removed at {}.", fmt_num(a), ctx.here()),
        ),
        (Some(a), Some(b)) if a < b => ctx.add_at(
            keyword,
            increased,
            format!(
                "'{keyword}' increased from {} to {} at {}.",
                fmt_num(a),
                fmt_num(b),
                ctx.here()
            ),
        ),
        (Some(a), Some(b)) if a > b => ctx.add_at(
            keyword,
            decreased,
            format!(
                "'{keyword}' decreased from {} to {} at {}.",
                fmt_num(a),
                fmt_num(b),
                ctx.here()
            ),
        ),
        _ => {}
    }
}

impl Shared<'_> {
    fn wk(&self, id: NodeId) -> &Kind {
        &self.w.nodes[id].kind
    }
    fn rk(&self, id: NodeId) -> &Kind {
        &self.r.nodes[id].kind
    }

    fn compare(&mut self, ctx: &mut Ctx, original: Option<NodeId>, update: Option<NodeId>) {
        let (original, update) = match (original, update) {
            (None, None) => return,
            (None, Some(_)) => {
                ctx.add(
                    &SCHEMA_ADDED,
                    format!("A schema was added at {}.", ctx.here()),
                );
                return;
            }
            (Some(_), None) => {
                ctx.add(
                    &SCHEMA_REMOVED,
                    format!("The schema at {} was removed.", ctx.here()),
                );
                return;
            }
            (Some(o), Some(u)) => (self.w.resolve(o), self.r.resolve(u)),
        };
        if self.alike(original, update) {
            return;
        }
        let key = (original, update);
        let relative = if let Some(cached) = self.memo.get(&key) {
            cached.clone()
        } else if covenant_engine::budget::charge(1) {
            // The budget is spent: the caller discards this partial result.
            return;
        } else if !self.in_progress.insert(key) {
            match self.seed.get(&key) {
                Some(seeded) => seeded.clone(),
                None => {
                    self.optimistic = true;
                    Vec::new()
                }
            }
        } else if self.depth >= MAX_PAIR_DEPTH {
            covenant_engine::budget::exhaust();
            return;
        } else {
            let mut sub = Ctx::new();
            self.depth += 1;
            self.compare_types(&mut sub, original, update);
            self.depth -= 1;
            self.in_progress.remove(&key);
            self.memo.insert(key, sub.diffs.clone());
            sub.diffs
        };
        if relative.is_empty() {
            return;
        }
        let prefix = path_string(&ctx.path);
        if prefix.len() <= 2 {
            // At the root the relative paths and messages are already absolute.
            ctx.diffs.extend(relative);
            return;
        }
        let quoted_prefix = format!("'{}/", prefix.trim_end_matches('/'));
        for diff in relative {
            ctx.diffs.push(Diff {
                rule: diff.rule,
                path: rebase(&prefix, &diff.path),
                message: diff.message.replace("'#/", &quoted_prefix),
            });
        }
    }

    /// Two subschemas with the same canonical source text and no reference in it have no
    /// differences, so they need no walk: in a long history most of a schema is unchanged
    /// from one version to the next. References may point at different targets, and a text
    /// read in two dialects may mean two things, so those are walked (such nodes have no
    /// shape).
    fn alike(&self, original: NodeId, update: NodeId) -> bool {
        let (o, u) = (self.w.nodes[original].shape, self.r.nodes[update].shape);
        self.texts_decide && o.is_some() && o == u
    }

    fn is_empty_w(&self, id: NodeId) -> bool {
        matches!(self.wk(self.w.resolve(id)), Kind::Empty)
    }
    fn is_empty_r(&self, id: NodeId) -> bool {
        matches!(self.rk(self.r.resolve(id)), Kind::Empty)
    }
    fn is_false_w(&self, id: NodeId) -> bool {
        matches!(self.wk(self.w.resolve(id)), Kind::False)
    }
    fn is_false_r(&self, id: NodeId) -> bool {
        matches!(self.rk(self.r.resolve(id)), Kind::False)
    }

    fn compare_types(&mut self, ctx: &mut Ctx, original: NodeId, update: NodeId) {
        // Borrowed from the models, not from `self`: cloning an object's kind copied every
        // property name on each comparison.
        let (w, r) = (self.w, self.r);
        let okind = &w.nodes[original].kind;
        let ukind = &r.nodes[update].kind;
        match (okind, ukind) {
            (o, Kind::Combined(criterion, subs)) if !matches!(o, Kind::Combined(..)) => {
                if subs.len() == 1 {
                    let mut sub = ctx.sub();
                    self.compare(&mut sub, Some(original), Some(subs[0]));
                    if sub.compatible(self.policy) {
                        ctx.diffs.extend(sub.diffs);
                        return;
                    }
                } else if matches!(criterion, Criterion::Any | Criterion::One) {
                    for &s in subs {
                        let mut sub = ctx.sub();
                        self.compare(&mut sub, Some(original), Some(s));
                        if sub.compatible(self.policy) {
                            ctx.diffs.extend(sub.diffs);
                            ctx.add(
                                &SUM_TYPE_EXTENDED,
                                format!(
                                    "The schema at {} became one branch of a '{}'.",
                                    ctx.here(),
                                    criterion.keyword()
                                ),
                            );
                            return;
                        }
                    }
                }
            }
            (Kind::Combined(criterion, subs), u) if !matches!(u, Kind::Combined(..)) => {
                if subs.len() == 1 {
                    let mut sub = ctx.sub();
                    self.compare(&mut sub, Some(subs[0]), Some(update));
                    if sub.compatible(self.policy) {
                        ctx.diffs.extend(sub.diffs);
                        return;
                    }
                } else if *criterion == Criterion::All {
                    for &s in subs {
                        let mut sub = ctx.sub();
                        self.compare(&mut sub, Some(s), Some(update));
                        if sub.compatible(self.policy) {
                            ctx.diffs.extend(sub.diffs);
                            ctx.add(
                                &PRODUCT_TYPE_NARROWED,
                                format!(
                                    "The 'allOf' at {} was replaced by one of its branches.",
                                    ctx.here()
                                ),
                            );
                            return;
                        }
                    }
                }
            }
            _ => {}
        }

        if !okind.same_class(ukind) {
            if matches!(okind, Kind::False) || matches!(ukind, Kind::Empty) {
                return;
            }
            let bytes = Some("bytes");
            if self.w.nodes[original].about().connect_type.as_deref() == bytes
                && self.r.nodes[update].about().connect_type.as_deref() == bytes
            {
                return;
            }
            ctx.add(
                &TYPE_CHANGED,
                format!(
                    "The schema at {} changed type from '{}' to '{}'.",
                    ctx.here(),
                    okind.class(),
                    ukind.class()
                ),
            );
            return;
        }

        let (on, un) = (self.w.nodes[original].about(), self.r.nodes[update].about());
        if on.id != un.id {
            ctx.add(&ID_CHANGED, format!("The '$id' at {} changed.", ctx.here()));
        }
        if on.title != un.title {
            ctx.add(
                &TITLE_CHANGED,
                format!("The title at {} changed.", ctx.here()),
            );
        }
        if on.description != un.description {
            ctx.add(
                &DESCRIPTION_CHANGED,
                format!("The description at {} changed.", ctx.here()),
            );
        }
        if on.default != un.default {
            ctx.add(
                &DEFAULT_CHANGED,
                format!("The default at {} changed.", ctx.here()),
            );
        }

        match (okind, ukind) {
            (Kind::String(o), Kind::String(u)) => {
                bounds(ctx, o, u);
                match (&o.pattern, &u.pattern) {
                    (None, Some(p)) => ctx.add_at(
                        "pattern",
                        &PATTERN_ADDED,
                        format!("Pattern '{p}' was added at {}.", ctx.here()),
                    ),
                    (Some(p), None) => ctx.add_at(
                        "pattern",
                        &PATTERN_REMOVED,
                        format!("Pattern '{p}' was removed at {}.", ctx.here()),
                    ),
                    (Some(a), Some(b)) if a != b => ctx.add_at(
                        "pattern",
                        &PATTERN_CHANGED,
                        format!("Pattern changed from '{a}' to '{b}' at {}.", ctx.here()),
                    ),
                    _ => {}
                }
            }
            (Kind::Number(o), Kind::Number(u)) => {
                bounds(ctx, o, u);
                // Draft-04 boolean forms: a flag turning on excludes the bound itself.
                if o.maximum.is_some()
                    && o.maximum == u.maximum
                    && o.exclusive_maximum_flag != u.exclusive_maximum_flag
                {
                    if u.exclusive_maximum_flag {
                        ctx.add_at(
                            "exclusiveMaximum",
                            &EXCLUSIVE_MAXIMUM_ADDED,
                            format!("'exclusiveMaximum' was turned on at {}.", ctx.here()),
                        );
                    } else {
                        ctx.add_at(
                            "exclusiveMaximum",
                            &EXCLUSIVE_MAXIMUM_REMOVED,
                            format!("'exclusiveMaximum' was turned off at {}.", ctx.here()),
                        );
                    }
                }
                if o.minimum.is_some()
                    && o.minimum == u.minimum
                    && o.exclusive_minimum_flag != u.exclusive_minimum_flag
                {
                    if u.exclusive_minimum_flag {
                        ctx.add_at(
                            "exclusiveMinimum",
                            &EXCLUSIVE_MINIMUM_ADDED,
                            format!("'exclusiveMinimum' was turned on at {}.", ctx.here()),
                        );
                    } else {
                        ctx.add_at(
                            "exclusiveMinimum",
                            &EXCLUSIVE_MINIMUM_REMOVED,
                            format!("'exclusiveMinimum' was turned off at {}.", ctx.here()),
                        );
                    }
                }
                match (&o.multiple_of, &u.multiple_of) {
                    (None, None) => {}
                    (Some(a), Some(b)) if decimal_eq(a, b) => {}
                    (None, Some(b)) => ctx.add_at(
                        "multipleOf",
                        &MULTIPLE_OF_ADDED,
                        format!("'multipleOf' {b} was added at {}.", ctx.here()),
                    ),
                    (Some(a), None) => ctx.add_at(
                        "multipleOf",
                        &MULTIPLE_OF_REMOVED,
                        format!("'multipleOf' {a} was removed at {}.", ctx.here()),
                    ),
                    (Some(a), Some(b)) => {
                        let rule: &'static Difference = if is_multiple(b, a) {
                            &MULTIPLE_OF_EXPANDED
                        } else if is_multiple(a, b) {
                            &MULTIPLE_OF_REDUCED
                        } else {
                            &MULTIPLE_OF_CHANGED
                        };
                        ctx.add_at(
                            "multipleOf",
                            rule,
                            format!("'multipleOf' changed from {a} to {b} at {}.", ctx.here()),
                        );
                    }
                }
                if o.integer != u.integer {
                    if o.integer {
                        ctx.add(
                            &TYPE_EXTENDED,
                            format!(
                                "The schema at {} changed from 'integer' to 'number'.",
                                ctx.here()
                            ),
                        );
                    } else {
                        ctx.add(
                            &TYPE_NARROWED,
                            format!(
                                "The schema at {} changed from 'number' to 'integer'.",
                                ctx.here()
                            ),
                        );
                    }
                }
            }
            (Kind::Const(a), Kind::Const(b))
                if crate::model::canonical(a) != crate::model::canonical(b) =>
            {
                ctx.add_at(
                    "const",
                    &ENUM_ARRAY_CHANGED,
                    format!("'const' changed from {a} to {b} at {}.", ctx.here()),
                );
            }
            (Kind::Enum(a), Kind::Enum(b)) => {
                let (sa, sb) = (value_set(a), value_set(b));
                if sa != sb {
                    let (rule, verb): (&'static Difference, &str) = if sb.is_superset(&sa) {
                        (&ENUM_ARRAY_EXTENDED, "gained values")
                    } else if sa.is_superset(&sb) {
                        (&ENUM_ARRAY_NARROWED, "lost values")
                    } else {
                        (&ENUM_ARRAY_CHANGED, "changed values")
                    };
                    ctx.add_at(
                        "enum",
                        rule,
                        format!("The 'enum' at {} {verb}.", ctx.here()),
                    );
                }
            }
            (Kind::Combined(oc, os), Kind::Combined(uc, us)) => {
                self.combined(ctx, *oc, os, *uc, us)
            }
            (Kind::Not(o), Kind::Not(u)) => {
                ctx.path.push("not".into());
                let mut sub = ctx.sub();
                self.compare_reversed(&mut sub, *u, *o);
                if sub.compatible(self.policy) {
                    ctx.add(
                        &NOT_TYPE_NARROWED,
                        format!("The 'not' at {} excludes fewer documents.", ctx.here()),
                    );
                } else {
                    ctx.add(
                        &NOT_TYPE_EXTENDED,
                        format!("The 'not' at {} excludes more documents.", ctx.here()),
                    );
                }
                ctx.path.pop();
            }
            (Kind::Object(o), Kind::Object(u)) => self.object(ctx, o, u),
            (Kind::Array(o), Kind::Array(u)) => self.array(ctx, o, u),
            _ => {}
        }
    }

    /// Compares with the roles swapped (for `not`): the update's node against the original's.
    fn compare_reversed(&mut self, ctx: &mut Ctx, update_inner: NodeId, original_inner: NodeId) {
        let reverse = std::mem::take(&mut self.reverse);
        let mut swapped = Shared {
            w: self.r,
            r: self.w,
            policy: self.policy,
            texts_decide: self.texts_decide,
            memo: reverse.memo,
            in_progress: reverse.in_progress,
            seed: reverse.seed,
            optimistic: false,
            depth: self.depth,
            reverse: Orientation {
                memo: std::mem::take(&mut self.memo),
                in_progress: std::mem::take(&mut self.in_progress),
                seed: std::mem::take(&mut self.seed),
            },
            patterns: self.patterns.clone(),
        };
        swapped.compare(ctx, Some(update_inner), Some(original_inner));
        self.optimistic |= swapped.optimistic;
        self.memo = swapped.reverse.memo;
        self.in_progress = swapped.reverse.in_progress;
        self.seed = swapped.reverse.seed;
        self.reverse = Orientation {
            memo: swapped.memo,
            in_progress: swapped.in_progress,
            seed: swapped.seed,
        };
    }

    fn combined(
        &mut self,
        ctx: &mut Ctx,
        oc: Criterion,
        os: &[NodeId],
        uc: Criterion,
        us: &[NodeId],
    ) {
        let singleton_o = os.len() == 1;
        let singleton_u = us.len() == 1;
        if oc != uc {
            let extended = uc == Criterion::Any
                || (singleton_o && singleton_u)
                || (singleton_o && uc == Criterion::One)
                || (singleton_u && oc == Criterion::All);
            if extended {
                ctx.add(
                    &COMBINED_TYPE_EXTENDED,
                    format!(
                        "The combinator at {} changed from '{}' to '{}', accepting more.",
                        ctx.here(),
                        oc.keyword(),
                        uc.keyword()
                    ),
                );
            } else {
                ctx.add(
                    &COMBINED_TYPE_CHANGED,
                    format!(
                        "The combinator at {} changed from '{}' to '{}'.",
                        ctx.here(),
                        oc.keyword(),
                        uc.keyword()
                    ),
                );
                return;
            }
        }
        let dedup = |model: &Model, ids: &[NodeId]| {
            let mut seen = HashSet::new();
            ids.iter()
                .copied()
                .filter(|id| {
                    seen.insert(model.nodes[*id].canonical.clone())
                        || model.nodes[*id].canonical.is_empty()
                })
                .collect::<Vec<_>>()
        };
        let os = dedup(self.w, os);
        let us = dedup(self.r, us);
        if os.len() < us.len() {
            if uc == Criterion::All {
                ctx.add(
                    &PRODUCT_TYPE_EXTENDED,
                    format!("The 'allOf' at {} gained a branch.", ctx.here()),
                );
            } else {
                ctx.add(
                    &SUM_TYPE_EXTENDED,
                    format!("The '{}' at {} gained a branch.", uc.keyword(), ctx.here()),
                );
            }
        } else if os.len() > us.len() {
            if matches!(oc, Criterion::Any | Criterion::One) {
                ctx.add(
                    &SUM_TYPE_NARROWED,
                    format!("The '{}' at {} lost a branch.", oc.keyword(), ctx.here()),
                );
            } else {
                ctx.add(
                    &PRODUCT_TYPE_NARROWED,
                    format!("The 'allOf' at {} lost a branch.", ctx.here()),
                );
            }
        }
        let (prematched, rest_o, rest_u) = self.identical_branches(&os, &us);
        let mut edges = Vec::new();
        let mut edge_diffs: HashMap<(usize, usize), Vec<Diff>> = HashMap::new();
        for (i, &(index, o)) in rest_o.iter().enumerate() {
            ctx.path.push(format!("{}/{}", oc.keyword(), index));
            for (j, &u) in rest_u.iter().enumerate() {
                let mut sub = ctx.sub();
                self.compare(&mut sub, Some(o), Some(u));
                if sub.compatible(self.policy) {
                    edges.push((i, j));
                    edge_diffs.insert((i, j), sub.diffs);
                }
            }
            ctx.path.pop();
        }
        let matching = max_matching(rest_o.len(), rest_u.len(), &edges);
        for edge in &matching {
            if let Some(d) = edge_diffs.remove(edge) {
                ctx.diffs.extend(d);
            }
        }
        if prematched + matching.len() < os.len().min(us.len()) {
            ctx.add(&COMBINED_TYPE_SUBSCHEMAS_CHANGED, format!("Some branches of the '{}' at {} have no compatible counterpart in the new schema.", oc.keyword(), ctx.here()));
        }
    }

    /// Pairs branches whose text is identical and free of references (so they mean the same
    /// in both schemas) without comparing them, and returns how many were paired and the
    /// branches left on each side. Comparing every branch with every other is a product of
    /// the two sizes; this keeps the common change, a branch added to a large `anyOf`, linear.
    fn identical_branches(
        &self,
        os: &[NodeId],
        us: &[NodeId],
    ) -> (usize, Vec<(usize, NodeId)>, Vec<NodeId>) {
        // `$ref`, `$dynamicRef`, `$recursiveRef`: the same text may point at different targets.
        let comparable =
            |text: &str| !text.is_empty() && !text.contains("$ref\"") && !text.contains("Ref\"");
        let mut by_text: HashMap<&str, Vec<NodeId>> = HashMap::new();
        for &u in us.iter().rev() {
            let text = self.r.nodes[u].canonical.as_str();
            if comparable(text) {
                by_text.entry(text).or_default().push(u);
            }
        }
        let mut paired = HashSet::new();
        let mut rest_o = Vec::new();
        for (index, &o) in os.iter().enumerate() {
            let text = self.w.nodes[o].canonical.as_str();
            match by_text.get_mut(text).and_then(Vec::pop) {
                Some(u) => {
                    paired.insert(u);
                }
                None => rest_o.push((index, o)),
            }
        }
        let rest_u = us.iter().copied().filter(|u| !paired.contains(u)).collect();
        (paired.len(), rest_o, rest_u)
    }

    fn w_open(&self, o: &ObjectNode) -> bool {
        o.permits_additional
            && o.additional_schema.is_none()
            && o.pattern_properties.is_empty()
            && o.unevaluated.is_none_or(|u| self.is_empty_w(u))
    }
    fn r_open(&self, o: &ObjectNode) -> bool {
        o.permits_additional
            && o.additional_schema.is_none()
            && o.pattern_properties.is_empty()
            && o.unevaluated.is_none_or(|u| self.is_empty_r(u))
    }

    fn partial(
        patterns: &Patterns,
        o: &ObjectNode,
        key: &str,
        empty: impl Fn(NodeId) -> bool,
        is_false: impl Fn(NodeId) -> bool,
    ) -> Option<NodeId> {
        for (pattern, schema) in &o.pattern_properties {
            match patterns.is_match(pattern, key) {
                Some(true) => return Some(*schema),
                Some(false) => {}
                None => return None,
            }
        }
        if let Some(s) = o.additional_schema {
            return Some(s);
        }
        if o.permits_additional
            && let Some(u) = o.unevaluated
            && !is_false(u)
            && !empty(u)
        {
            return Some(u);
        }
        None
    }

    fn object(&mut self, ctx: &mut Ctx, o: &ObjectNode, u: &ObjectNode) {
        // Indexed once: objects with tens of thousands of properties stay linear.
        let (u_props, o_props) = (index(&u.properties), index(&o.properties));
        let u_has = |k: &str| u_props.get(k).map(|id| **id);
        let o_required: Names = o.required.iter().map(String::as_str).collect();
        let u_required: Names = u.required.iter().map(String::as_str).collect();
        // required
        ctx.path.push("required".into());
        for (key, _) in &o.properties {
            let Some(uid) = u_has(key) else { continue };
            let was = o_required.contains(key.as_str());
            let is = u_required.contains(key.as_str());
            if was == is {
                continue;
            }
            ctx.path.push(key.clone());
            if was {
                ctx.add(
                    &REQUIRED_ATTRIBUTE_REMOVED,
                    format!("Property '{key}' is no longer required."),
                );
            } else if self.r.nodes[self.r.resolve(uid)].about().default.is_some()
                || self.r.nodes[uid].about().default.is_some()
            {
                ctx.add(
                    &REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED,
                    format!("Property '{key}' became required; it has a default."),
                );
            } else {
                ctx.add(
                    &REQUIRED_ATTRIBUTE_ADDED,
                    format!("Property '{key}' became required and has no default."),
                );
            }
            ctx.path.pop();
        }
        ctx.path.pop();
        // properties: those of the original in order, then those only the update has. Most
        // are usually unchanged, and those are passed over without a path or a memo entry.
        ctx.path.push("properties".into());
        for (key, os) in &o.properties {
            let os = *os;
            match u_has(key) {
                Some(us) if self.alike(self.w.resolve(os), self.r.resolve(us)) => {}
                Some(us) => {
                    ctx.path.push(key.clone());
                    self.compare(ctx, Some(os), Some(us));
                    ctx.path.pop();
                }
                None => {
                    ctx.path.push(key.clone());
                    self.property_removed(ctx, key, os, u);
                    ctx.path.pop();
                }
            }
        }
        for (key, us) in &u.properties {
            if !o_props.contains_key(key.as_str()) {
                ctx.path.push(key.clone());
                self.property_added(ctx, key, *us, o, &u_required);
                ctx.path.pop();
            }
        }
        ctx.path.pop();
        // dependencies
        ctx.path.push("dependencies".into());
        let keys = all_keys(&o.property_dependencies, &u.property_dependencies);
        let (o_index, u_index) = (
            index(&o.property_dependencies),
            index(&u.property_dependencies),
        );
        for key in keys {
            let od = o_index
                .get(key.as_str())
                .map(|v| v.iter().cloned().collect::<HashSet<_>>());
            let ud = u_index
                .get(key.as_str())
                .map(|v| v.iter().cloned().collect::<HashSet<_>>());
            ctx.path.push(key.clone());
            match (od, ud) {
                (_, None) => ctx.add(
                    &DEPENDENCY_ARRAY_REMOVED,
                    format!("The dependency of '{key}' was removed."),
                ),
                (None, Some(_)) => ctx.add(
                    &DEPENDENCY_ARRAY_ADDED,
                    format!("A dependency of '{key}' was added."),
                ),
                (Some(a), Some(b)) if a != b => {
                    if b.is_superset(&a) {
                        ctx.add(
                            &DEPENDENCY_ARRAY_EXTENDED,
                            format!("The dependency of '{key}' now requires more properties."),
                        );
                    } else if a.is_superset(&b) {
                        ctx.add(
                            &DEPENDENCY_ARRAY_NARROWED,
                            format!("The dependency of '{key}' now requires fewer properties."),
                        );
                    } else {
                        ctx.add(
                            &DEPENDENCY_ARRAY_CHANGED,
                            format!("The dependency of '{key}' requires different properties."),
                        );
                    }
                }
                _ => {}
            }
            ctx.path.pop();
        }
        let keys = all_keys(&o.schema_dependencies, &u.schema_dependencies);
        let (o_index, u_index) = (index(&o.schema_dependencies), index(&u.schema_dependencies));
        for key in keys {
            let od = o_index.get(key.as_str()).map(|id| **id);
            let ud = u_index.get(key.as_str()).map(|id| **id);
            ctx.path.push(key.clone());
            match (od, ud) {
                (_, None) => ctx.add(
                    &DEPENDENCY_SCHEMA_REMOVED,
                    format!("The schema dependency of '{key}' was removed."),
                ),
                (None, Some(_)) => ctx.add(
                    &DEPENDENCY_SCHEMA_ADDED,
                    format!("A schema dependency of '{key}' was added."),
                ),
                (Some(a), Some(b)) => self.compare(ctx, Some(a), Some(b)),
            }
            ctx.path.pop();
        }
        ctx.path.pop();
        // additionalProperties
        ctx.path.push("additionalProperties".into());
        if o.permits_additional != u.permits_additional {
            if u.permits_additional {
                ctx.add(
                    &ADDITIONAL_PROPERTIES_ADDED,
                    format!("Additional properties are now allowed at {}.", ctx.here()),
                );
            } else {
                ctx.add(
                    &ADDITIONAL_PROPERTIES_REMOVED,
                    format!(
                        "Additional properties are no longer allowed at {}.",
                        ctx.here()
                    ),
                );
            }
        } else if o.additional_schema.is_none() && u.additional_schema.is_some() {
            ctx.add(
                &ADDITIONAL_PROPERTIES_NARROWED,
                format!(
                    "Additional properties are now constrained by a schema at {}.",
                    ctx.here()
                ),
            );
        } else if o.additional_schema.is_some() && u.additional_schema.is_none() {
            ctx.add(
                &ADDITIONAL_PROPERTIES_EXTENDED,
                format!(
                    "The additional-properties schema at {} was removed.",
                    ctx.here()
                ),
            );
        } else {
            self.compare(ctx, o.additional_schema, u.additional_schema);
        }
        ctx.path.pop();
        // unevaluatedProperties
        if o.unevaluated.is_some() || u.unevaluated.is_some() {
            ctx.path.push("unevaluatedProperties".into());
            self.unevaluated(
                ctx,
                o.unevaluated,
                u.unevaluated,
                [
                    &UNEVALUATED_PROPERTIES_ADDED,
                    &UNEVALUATED_PROPERTIES_REMOVED,
                    &UNEVALUATED_PROPERTIES_EXTENDED,
                    &UNEVALUATED_PROPERTIES_NARROWED,
                ],
            );
            ctx.path.pop();
        }
        bounds(ctx, o, u);
    }

    /// A property of the original that the update no longer declares.
    fn property_removed(&mut self, ctx: &mut Ctx, key: &str, os: NodeId, u: &ObjectNode) {
        if self.r_open(u) {
            ctx.add(
                &PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL,
                format!("Property '{key}' was removed from an open content model."),
            );
        } else if let Some(p) = Self::partial(
            &self.patterns,
            u,
            key,
            |id| self.is_empty_r(id),
            |id| self.is_false_r(id),
        ) {
            let mut sub = ctx.sub();
            self.compare(&mut sub, Some(os), Some(p));
            let ok = sub.compatible(self.policy);
            ctx.diffs.extend(sub.diffs);
            if ok {
                ctx.add(&PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL, format!("Property '{key}' was removed; the additional-properties schema still accepts its values."));
            } else {
                ctx.add(&PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL, format!("Property '{key}' was removed and the additional-properties schema rejects its old values."));
            }
        } else if self.is_false_w(os) {
            ctx.add(
                &PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL,
                format!("Property '{key}', whose schema was false, was removed."),
            );
        } else {
            ctx.add(
                &PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL,
                format!("Property '{key}' was removed from a closed content model."),
            );
        }
    }

    /// A property only the update declares.
    fn property_added(
        &mut self,
        ctx: &mut Ctx,
        key: &str,
        us: NodeId,
        o: &ObjectNode,
        u_required: &Names,
    ) {
        let required = u_required.contains(key);
        let has_default = self.r.nodes[us].about().default.is_some();
        if self.w_open(o) {
            if self.is_empty_r(us) {
                ctx.add(
                    &PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL,
                    format!(
                        "Property '{key}' with an empty schema was added to an open content model."
                    ),
                );
            } else if required {
                if has_default {
                    ctx.add(&REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL, format!("Required property '{key}' with a default was added to an open content model."));
                } else {
                    ctx.add(
                        &REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL,
                        format!("Required property '{key}' was added to an open content model."),
                    );
                }
            } else {
                ctx.add(
                    &OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL,
                    format!("Optional property '{key}' was added to an open content model."),
                );
            }
        } else {
            if let Some(p) = Self::partial(
                &self.patterns,
                o,
                key,
                |id| self.is_empty_w(id),
                |id| self.is_false_w(id),
            ) {
                let mut sub = ctx.sub();
                self.compare(&mut sub, Some(p), Some(us));
                let ok = sub.compatible(self.policy);
                ctx.diffs.extend(sub.diffs);
                if ok {
                    ctx.add(&PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL, format!("Property '{key}' was added and accepts what the old additional-properties schema allowed."));
                } else {
                    ctx.add(&PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL, format!("Property '{key}' was added and rejects values the old additional-properties schema allowed."));
                }
            }
            if required {
                if has_default {
                    ctx.add(
                        &REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL,
                        format!("Required property '{key}' with a default was added."),
                    );
                } else {
                    ctx.add(
                        &REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL,
                        format!("Required property '{key}' was added without a default."),
                    );
                }
            } else {
                ctx.add(
                    &OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL,
                    format!("Optional property '{key}' was added."),
                );
            }
        }
    }

    /// `unevaluatedProperties`/`unevaluatedItems`; rules are [added, removed, extended, narrowed].
    fn unevaluated(
        &mut self,
        ctx: &mut Ctx,
        o: Option<NodeId>,
        u: Option<NodeId>,
        rules: [&'static Difference; 4],
    ) {
        let [added, removed, extended, narrowed] = rules;
        let of = o.is_some_and(|id| self.is_false_w(id));
        let uf = u.is_some_and(|id| self.is_false_r(id));
        let oe = o.is_some_and(|id| self.is_empty_w(id));
        let ue = u.is_some_and(|id| self.is_empty_r(id));
        let here = ctx.here();
        match (o, u) {
            (None, None) => {}
            (None, Some(_)) if uf => ctx.add(
                removed,
                format!("Unevaluated entries are no longer allowed at {here}."),
            ),
            (None, Some(_)) => ctx.add(
                narrowed,
                format!("Unevaluated entries are now constrained at {here}."),
            ),
            (Some(_), None) if of => ctx.add(
                added,
                format!("Unevaluated entries are now allowed at {here}."),
            ),
            (Some(_), None) => ctx.add(
                extended,
                format!("The unevaluated-entries schema at {here} was removed."),
            ),
            _ if of && !uf => ctx.add(
                added,
                format!("Unevaluated entries are now allowed at {here}."),
            ),
            _ if !of && uf => ctx.add(
                removed,
                format!("Unevaluated entries are no longer allowed at {here}."),
            ),
            _ if oe && !ue => ctx.add(
                narrowed,
                format!("Unevaluated entries are now constrained at {here}."),
            ),
            _ if !oe && ue => ctx.add(
                extended,
                format!("The unevaluated-entries schema at {here} was opened."),
            ),
            _ => self.compare(ctx, o, u),
        }
    }

    fn w_open_array(&self, a: &ArrayNode) -> bool {
        a.permits_additional
            && a.additional_schema.is_none()
            && a.unevaluated.is_none_or(|u| self.is_empty_w(u))
    }
    fn r_open_array(&self, a: &ArrayNode) -> bool {
        a.permits_additional
            && a.additional_schema.is_none()
            && a.unevaluated.is_none_or(|u| self.is_empty_r(u))
    }

    fn partial_array(
        a: &ArrayNode,
        empty: impl Fn(NodeId) -> bool,
        is_false: impl Fn(NodeId) -> bool,
    ) -> Option<NodeId> {
        if let Some(s) = a.additional_schema {
            return Some(s);
        }
        if a.permits_additional
            && let Some(u) = a.unevaluated
            && !is_false(u)
            && !empty(u)
        {
            return Some(u);
        }
        None
    }

    fn array(&mut self, ctx: &mut Ctx, o: &ArrayNode, u: &ArrayNode) {
        ctx.path.push("items".into());
        self.compare(ctx, o.all_items, u.all_items);
        ctx.path.pop();
        let common = o.item_schemas.len().min(u.item_schemas.len());
        for i in 0..common {
            ctx.path.push(format!("items/{i}"));
            self.compare(ctx, Some(o.item_schemas[i]), Some(u.item_schemas[i]));
            ctx.path.pop();
        }
        for i in common..o.item_schemas.len() {
            ctx.path.push(format!("items/{i}"));
            let os = o.item_schemas[i];
            if self.r_open_array(u) {
                ctx.add(
                    &ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL,
                    format!("Tuple item {i} was removed from an open array."),
                );
            } else if let Some(p) =
                Self::partial_array(u, |id| self.is_empty_r(id), |id| self.is_false_r(id))
            {
                let mut sub = ctx.sub();
                self.compare(&mut sub, Some(os), Some(p));
                let ok = sub.compatible(self.policy);
                ctx.diffs.extend(sub.diffs);
                if ok {
                    ctx.add(&ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL, format!("Tuple item {i} was removed; the additional-items schema accepts its values."));
                } else {
                    ctx.add(&ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL, format!("Tuple item {i} was removed and the additional-items schema rejects its values."));
                }
            } else if self.is_false_w(os) {
                ctx.add(
                    &ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL,
                    format!("Tuple item {i}, whose schema was false, was removed."),
                );
            } else {
                ctx.add(
                    &ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL,
                    format!("Tuple item {i} was removed from a closed array."),
                );
            }
            ctx.path.pop();
        }
        for i in common..u.item_schemas.len() {
            ctx.path.push(format!("items/{i}"));
            let us = u.item_schemas[i];
            if self.w_open_array(o) {
                if self.is_empty_r(us) {
                    ctx.add(
                        &ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL,
                        format!("Tuple item {i} with an empty schema was added."),
                    );
                } else {
                    ctx.add(
                        &ITEM_ADDED_TO_OPEN_CONTENT_MODEL,
                        format!("Tuple item {i} was added to an open array."),
                    );
                }
            } else if let Some(p) =
                Self::partial_array(o, |id| self.is_empty_w(id), |id| self.is_false_w(id))
            {
                let mut sub = ctx.sub();
                self.compare(&mut sub, Some(p), Some(us));
                let ok = sub.compatible(self.policy);
                ctx.diffs.extend(sub.diffs);
                if ok {
                    ctx.add(&ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL, format!("Tuple item {i} was added and accepts what the old additional-items schema allowed."));
                } else {
                    ctx.add(&ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL, format!("Tuple item {i} was added and rejects values the old additional-items schema allowed."));
                }
            } else {
                ctx.add(
                    &ITEM_ADDED_TO_CLOSED_CONTENT_MODEL,
                    format!("Tuple item {i} was added to a closed array."),
                );
            }
            ctx.path.pop();
        }
        ctx.path.push("additionalItems".into());
        if o.permits_additional != u.permits_additional {
            if o.permits_additional {
                ctx.add(
                    &ADDITIONAL_ITEMS_REMOVED,
                    format!("Additional items are no longer allowed at {}.", ctx.here()),
                );
            } else {
                ctx.add(
                    &ADDITIONAL_ITEMS_ADDED,
                    format!("Additional items are now allowed at {}.", ctx.here()),
                );
            }
        } else if o.additional_schema.is_none() && u.additional_schema.is_some() {
            ctx.add(
                &ADDITIONAL_ITEMS_NARROWED,
                format!(
                    "Additional items are now constrained by a schema at {}.",
                    ctx.here()
                ),
            );
        } else if o.additional_schema.is_some() && u.additional_schema.is_none() {
            ctx.add(
                &ADDITIONAL_ITEMS_EXTENDED,
                format!("The additional-items schema at {} was removed.", ctx.here()),
            );
        } else {
            self.compare(ctx, o.additional_schema, u.additional_schema);
        }
        ctx.path.pop();
        if o.unevaluated.is_some() || u.unevaluated.is_some() {
            ctx.path.push("unevaluatedItems".into());
            self.unevaluated(
                ctx,
                o.unevaluated,
                u.unevaluated,
                [
                    &UNEVALUATED_ITEMS_ADDED,
                    &UNEVALUATED_ITEMS_REMOVED,
                    &UNEVALUATED_ITEMS_EXTENDED,
                    &UNEVALUATED_ITEMS_NARROWED,
                ],
            );
            ctx.path.pop();
        }
        bounds(ctx, o, u);
    }
}

//! The profile document and the walker that fills it, one record at a time.
//!
//! Memory grows with the number of distinct paths (bounded by [`ProfileOptions::max_paths`]),
//! never with the number of records: each path keeps counters, a fixed-size sketch and at
//! most [`EXAMPLES`] example values.

use crate::sketch::DistinctSketch;
use crate::source::Record;
use crate::tape::{Event, Tape};
/// Keys are hashed once per occurrence: SipHash's DoS resistance is not worth its cost here
/// (paths are bounded by `max_paths` anyway), foldhash is seeded per process.
use foldhash::HashMap;
use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// The `format` of every profile document.
pub const FORMAT: &str = "covenant-profile";
/// The document version this release writes; it reads this one and refuses newer ones.
pub const FORMAT_VERSION: u32 = 1;
/// Example values kept per path.
pub const EXAMPLES: usize = 3;
/// The default bound on distinct paths.
pub const DEFAULT_MAX_PATHS: usize = 100_000;
/// The group of a record that lacks the group-by field.
pub const NO_GROUP: &str = "(none)";

/// Why a profile could not be built, read or merged.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("{0}")]
    Input(String),
    #[error(
        "this profile has format version {found}; this release reads version {FORMAT_VERSION} and older"
    )]
    NewerFormat { found: u32 },
    #[error("not a profile document: {0}")]
    NotAProfile(String),
    #[error("profiles differ in {what} ({left} vs {right}) and cannot be merged")]
    Mismatch {
        what: &'static str,
        left: String,
        right: String,
    },
}

/// How records are profiled.
#[derive(Debug, Clone)]
pub struct ProfileOptions {
    /// A top-level field (or a `/`-separated path) whose value names each record's group,
    /// e.g. the source exchange.
    pub group_by: Option<String>,
    /// Top-level fields holding vendor-specific extras: a JSON object or a JSON string that
    /// holds one; their keys are profiled one by one and may become promotion candidates.
    pub escape_hatches: Vec<String>,
    pub max_paths: usize,
}

impl Default for ProfileOptions {
    fn default() -> Self {
        ProfileOptions {
            group_by: None,
            escape_hatches: Vec::new(),
            max_paths: DEFAULT_MAX_PATHS,
        }
    }
}

/// What the data at one path carried.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PathStats {
    /// Records in which the path occurs at all.
    pub present: u64,
    /// Records in which it occurs with a value other than `null`.
    pub non_null: u64,
    /// Occurrences per JSON type (`null`, `boolean`, `integer`, `number`, `string`, `array`,
    /// `object`).
    pub types: BTreeMap<String, u64>,
    /// Distinct scalar values (approximate).
    pub distinct: DistinctSketch,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<Value>,
    /// A key directly inside an escape hatch: a candidate for promotion to a real field.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub escape_hatch_key: bool,
}

/// Per-group prevalence: records of the group and, per path, records where it is present.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupStats {
    pub records: u64,
    pub present: BTreeMap<String, u64>,
}

/// A versioned, mergeable profile of a set of records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    pub format: String,
    pub version: u32,
    pub records: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_by: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escape_hatches: Vec<String>,
    pub paths: BTreeMap<String, PathStats>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub groups: BTreeMap<String, GroupStats>,
    /// Occurrences of paths not kept because `max_paths` distinct paths were already known
    /// (an array's items count once per array).
    #[serde(default)]
    pub paths_dropped: u64,
}

impl Profile {
    pub fn empty(options: &ProfileOptions) -> Profile {
        Profile {
            format: FORMAT.into(),
            version: FORMAT_VERSION,
            records: 0,
            group_by: options.group_by.clone(),
            escape_hatches: options.escape_hatches.clone(),
            paths: BTreeMap::new(),
            groups: BTreeMap::new(),
            paths_dropped: 0,
        }
    }

    /// Reads a profile document, refusing one written by a newer release.
    pub fn from_json(text: &str) -> Result<Profile, ProfileError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| ProfileError::NotAProfile(e.to_string()))?;
        if value.get("format").and_then(Value::as_str) != Some(FORMAT) {
            return Err(ProfileError::NotAProfile(format!(
                "its \"format\" is not \"{FORMAT}\""
            )));
        }
        let found = value.get("version").and_then(Value::as_u64).unwrap_or(0);
        if found > u64::from(FORMAT_VERSION) {
            return Err(ProfileError::NewerFormat {
                found: u32::try_from(found).unwrap_or(u32::MAX),
            });
        }
        serde_json::from_value(value).map_err(|e| ProfileError::NotAProfile(e.to_string()))
    }

    /// The share of records in which `path` is present with a value.
    pub fn population(&self, path: &str) -> f64 {
        match (self.paths.get(path), self.records) {
            (Some(stats), records) if records > 0 => stats.non_null as f64 / records as f64,
            _ => 0.0,
        }
    }

    /// Adds `other`: exact for counts, types, ranges and groups; the union of the sketches
    /// for distinct counts; examples kept in order, this profile's first.
    pub fn merge(&mut self, other: &Profile) -> Result<(), ProfileError> {
        if self.group_by != other.group_by {
            return Err(mismatch("--group-by", &self.group_by, &other.group_by));
        }
        if self.escape_hatches != other.escape_hatches {
            return Err(mismatch(
                "--escape-hatch",
                &self.escape_hatches,
                &other.escape_hatches,
            ));
        }
        self.records += other.records;
        self.paths_dropped += other.paths_dropped;
        for (path, theirs) in &other.paths {
            self.paths.entry(path.clone()).or_default().merge(theirs);
        }
        for (group, theirs) in &other.groups {
            let mine = self.groups.entry(group.clone()).or_default();
            mine.records += theirs.records;
            for (path, count) in &theirs.present {
                *mine.present.entry(path.clone()).or_default() += count;
            }
        }
        Ok(())
    }
}

fn mismatch<T: std::fmt::Debug>(what: &'static str, left: &T, right: &T) -> ProfileError {
    ProfileError::Mismatch {
        what,
        left: format!("{left:?}"),
        right: format!("{right:?}"),
    }
}

impl PathStats {
    fn merge(&mut self, other: &PathStats) {
        self.present += other.present;
        self.non_null += other.non_null;
        for (kind, count) in &other.types {
            *self.types.entry(kind.clone()).or_default() += count;
        }
        self.distinct.merge(&other.distinct);
        self.min = min_of(self.min, other.min);
        self.max = max_of(self.max, other.max);
        self.min_length = min_of(self.min_length, other.min_length);
        self.max_length = max_of(self.max_length, other.max_length);
        for example in &other.examples {
            self.add_example(example);
        }
        self.escape_hatch_key |= other.escape_hatch_key;
    }

    fn add_example(&mut self, value: &Value) {
        self.add_example_if_new(|e| e == value, || value.clone());
    }

    /// Keeps an example unless enough are kept or an equal one is; `make` only runs when it
    /// is kept, so repeated values cost no allocation.
    fn add_example_if_new(&mut self, same: impl Fn(&Value) -> bool, make: impl FnOnce() -> Value) {
        if self.examples.len() < EXAMPLES && !self.examples.iter().any(same) {
            self.examples.push(make());
        }
    }

    /// One occurrence of a scalar at this path (types are counted by the profiler's node).
    fn observe(&mut self, value: Scalar<'_>) {
        match value {
            Scalar::Number(n) => {
                let x = n.as_f64().unwrap_or(0.0);
                self.min = min_of(self.min, Some(x));
                self.max = max_of(self.max, Some(x));
                // Whole numbers hash by value, others by their bits: no text per value.
                match n.as_i64() {
                    Some(i) => self.distinct.insert(&i.to_le_bytes()),
                    None => self.distinct.insert(&x.to_bits().to_be_bytes()),
                }
                self.add_example_if_new(|e| e.as_number() == Some(n), || Value::Number(n.clone()));
            }
            Scalar::String(s) => {
                let length = s.chars().count() as u64;
                self.min_length = min_of(self.min_length, Some(length));
                self.max_length = max_of(self.max_length, Some(length));
                self.distinct.insert(s.as_bytes());
                if s.len() <= 200 {
                    self.add_example_if_new(|e| e.as_str() == Some(s), || Value::String(s.into()));
                }
            }
            Scalar::Bool(b) => {
                self.distinct.insert(if b { b"true" } else { b"false" });
                self.add_example_if_new(|e| e.as_bool() == Some(b), || Value::Bool(b));
            }
            Scalar::Null | Scalar::Array | Scalar::Object => {}
        }
    }
}

fn min_of<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b < a { b } else { a }),
        (a, None) => a,
        (None, b) => b,
    }
}

fn max_of<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b > a { b } else { a }),
        (a, None) => a,
        (None, b) => b,
    }
}

/// JSON's type names, with whole numbers told apart from others (an Avro `long` column and a
/// `double` one differ), in the order of [`Scalar::kind`].
const TYPES: [&str; 7] = [
    "null", "boolean", "integer", "number", "string", "array", "object",
];

/// JSON's type name of `value` (see [`TYPES`]).
pub fn json_type(value: &Value) -> &'static str {
    TYPES[Scalar::of(value).kind()]
}

/// What the walker sees at one place of a record, whichever parser produced it.
#[derive(Debug, Clone, Copy)]
enum Scalar<'a> {
    Null,
    Bool(bool),
    Number(&'a Number),
    String(&'a str),
    Array,
    Object,
}

impl<'a> Scalar<'a> {
    fn of(value: &'a Value) -> Scalar<'a> {
        match value {
            Value::Null => Scalar::Null,
            Value::Bool(b) => Scalar::Bool(*b),
            Value::Number(n) => Scalar::Number(n),
            Value::String(s) => Scalar::String(s),
            Value::Array(_) => Scalar::Array,
            Value::Object(_) => Scalar::Object,
        }
    }

    /// The index of its type name in [`TYPES`].
    fn kind(self) -> usize {
        match self {
            Scalar::Null => 0,
            Scalar::Bool(_) => 1,
            Scalar::Number(n) if n.is_i64() || n.is_u64() => 2,
            Scalar::Number(_) => 3,
            Scalar::String(_) => 4,
            Scalar::Array => 5,
            Scalar::Object => 6,
        }
    }
}

/// A path segment for an object key, escaped as in JSON Pointer so that paths split back
/// unambiguously.
pub fn segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Builds a [`Profile`] one record at a time.
///
/// Paths are interned as a tree of nodes, so a record walks by looking up each key under its
/// parent rather than formatting its full path: only a path seen for the first time is
/// spelled out. Records are walked on a [`Tape`]: JSON text is read into one (no `Value`
/// built), and a `serde_json::Value` is laid out on one first.
pub struct Profiler {
    options: ProfileOptions,
    profile: Profile,
    hatch_paths: Vec<String>,
    /// Node 0 is the record itself (the empty path, not profiled).
    nodes: Vec<PathNode>,
    /// Groups in order of first sight, found by name once per record.
    groups: Vec<GroupCounts>,
    group_ids: HashMap<String, usize>,
    /// A spare tape for records that come as a `Value`.
    value_tape: Tape,
    /// A spare tape for the JSON text an escape hatch holds.
    hatch_tape: Tape,
    /// Walk stacks, reused from record to record (an escape hatch's walk runs inside its
    /// record's).
    walk_stacks: Vec<Vec<Frame>>,
}

struct PathNode {
    path: String,
    stats: PathStats,
    /// Occurrences per type, in the order of [`TYPES`]; folded into the stats at the end.
    types: [u64; TYPES.len()],
    /// Object keys seen here, each with its position in `keys`.
    children: HashMap<String, usize>,
    /// The same keys with their nodes, in order of first sight: records mostly repeat their
    /// key order, so the next key is guessed from the last one before any hashing.
    keys: Vec<(Box<str>, usize)>,
    items: Option<usize>,
    is_hatch: bool,
    /// The last record counted as present and as filled here (records are numbered from 1).
    last_present: u64,
    last_non_null: u64,
}

impl PathNode {
    fn new(path: String, is_hatch: bool) -> PathNode {
        PathNode {
            path,
            stats: PathStats::default(),
            types: [0; TYPES.len()],
            children: HashMap::default(),
            keys: Vec::new(),
            items: None,
            is_hatch,
            last_present: 0,
            last_non_null: 0,
        }
    }
}

/// One group's records and, per node, the records where it is present.
struct GroupCounts {
    name: String,
    records: u64,
    present: Vec<u64>,
}

/// Where a child sits under its parent: an object key or the items of an array.
enum Step<'a> {
    Key(&'a str),
    Items,
}

/// A container of the record being walked, whose members are being visited.
struct Frame {
    /// The index just past its last event.
    end: usize,
    node: usize,
    /// The node of an array's items; `None` for an object.
    items: Option<usize>,
    /// Whether its members are the keys of an escape hatch.
    hatch_keys: bool,
    /// Where the next member's key is expected among the node's keys (see
    /// [`Profiler::keyed_child`]).
    next_key: usize,
}

/// What the walker sees at one event of a tape.
fn scalar(tape: &Tape, at: usize) -> Scalar<'_> {
    match tape.event(at) {
        Event::Null => Scalar::Null,
        Event::Bool(b) => Scalar::Bool(*b),
        Event::Number(n) => Scalar::Number(n),
        Event::String(span) => Scalar::String(tape.str(*span)),
        Event::Array { .. } => Scalar::Array,
        Event::Object { .. } => Scalar::Object,
        Event::Key(_) => unreachable!("keys are read with their object"),
    }
}

/// The key event at `at`, which starts an object's member.
fn key(tape: &Tape, at: usize) -> &str {
    match tape.event(at) {
        Event::Key(span) => tape.str(*span),
        _ => unreachable!("an object's members start with their key"),
    }
}

impl Profiler {
    pub fn new(options: ProfileOptions) -> Profiler {
        let hatch_paths = options
            .escape_hatches
            .iter()
            .map(|h| format!("/{}", segment(h)))
            .collect();
        Profiler {
            profile: Profile::empty(&options),
            options,
            hatch_paths,
            nodes: vec![PathNode::new(String::new(), false)],
            groups: Vec::new(),
            group_ids: HashMap::default(),
            value_tape: Tape::default(),
            hatch_tape: Tape::default(),
            walk_stacks: Vec::new(),
        }
    }

    pub fn records(&self) -> u64 {
        self.profile.records
    }

    pub fn finish(self) -> Profile {
        let Profiler {
            mut profile,
            nodes,
            groups,
            ..
        } = self;
        for group in groups {
            let stats = profile.groups.entry(group.name).or_default();
            stats.records += group.records;
            for (id, count) in group
                .present
                .into_iter()
                .enumerate()
                .filter(|(_, c)| *c > 0)
            {
                stats.present.insert(nodes[id].path.clone(), count);
            }
        }
        for node in nodes.into_iter().skip(1) {
            let mut stats = node.stats;
            for (kind, count) in node.types.iter().enumerate().filter(|(_, c)| **c > 0) {
                stats.types.insert(TYPES[kind].to_string(), *count);
            }
            profile.paths.insert(node.path, stats);
        }
        profile
    }

    /// Profiles one record, laid out on a tape first so that one walker serves every source.
    pub fn observe(&mut self, record: &Value) {
        let mut tape = std::mem::take(&mut self.value_tape);
        tape.fill_value(record);
        self.observe_tape(&tape);
        self.value_tape = tape;
    }

    /// Profiles one record as a source hands it over; parsed JSON text is walked as it is.
    pub fn observe_record(&mut self, record: Record<'_>) {
        match record {
            Record::Value(value) => self.observe(&value),
            Record::Json(tape) if tape.has_duplicate_keys() => self.observe(&tape.to_value()),
            Record::Json(tape) => self.observe_tape(tape),
        }
    }

    /// Profiles a record whose tape has no repeated keys.
    fn observe_tape(&mut self, record: &Tape) {
        self.profile.records += 1;
        let group = self
            .options
            .group_by
            .as_deref()
            .map(|g| group_of(record, g));
        let group = group.map(|name| self.count_group(&name));
        self.walk(record, 0, false, group);
    }

    /// Counts a record of the group `name`; answers the group's index.
    fn count_group(&mut self, name: &str) -> usize {
        let id = match self.group_ids.get(name) {
            Some(&id) => id,
            None => {
                self.group_ids.insert(name.to_string(), self.groups.len());
                self.groups.push(GroupCounts {
                    name: name.to_string(),
                    records: 0,
                    present: Vec::new(),
                });
                self.groups.len() - 1
            }
        };
        self.groups[id].records += 1;
        id
    }

    /// Visits every path beneath the container of `tape` at event 0, whose node is `base`,
    /// in one pass over its events: document order, so examples follow the input, nodes are
    /// created in the order paths are first seen, and nesting costs heap, not stack. An
    /// escape hatch holding a JSON string is parsed and walked in its place.
    ///
    /// One pass over the flat events replaced a walk through a `Document` abstraction that
    /// gathered each container's members into a buffer and pushed them on a stack, about a
    /// third of the time on the benchmark's 256 MB file; the one pass took that run from
    /// 1.47 s to 1.24 s.
    fn walk(&mut self, tape: &Tape, base: usize, hatch_keys: bool, group: Option<usize>) {
        let mut stack = self.walk_stacks.pop().unwrap_or_default();
        let mut at = self.open(tape, 0, base, hatch_keys, &mut stack);
        while let Some(frame) = stack.last_mut() {
            if at >= frame.end {
                stack.pop();
                continue;
            }
            let hatch_key = frame.hatch_keys;
            let node = match frame.items {
                Some(items) => Some(items),
                None => {
                    let key = key(tape, at);
                    at += 1;
                    self.keyed_child(frame.node, key, &mut frame.next_key)
                }
            };
            let Some(node) = node else {
                // Beyond the path bound: neither it nor anything beneath it is kept.
                at = tape.after(at);
                continue;
            };
            let value = scalar(tape, at);
            self.record_occurrence(node, value, hatch_key, group);
            let is_hatch = self.nodes[node].is_hatch;
            at = match value {
                Scalar::String(text) if is_hatch => {
                    self.walk_hatch(text, node, group);
                    at + 1
                }
                _ => self.open(tape, at, node, is_hatch, &mut stack),
            };
        }
        self.walk_stacks.push(stack);
    }

    /// Starts on the members of the value at `at` (node `node`) when it is a container with
    /// somewhere to go; answers the index of the next event to visit.
    fn open(
        &mut self,
        tape: &Tape,
        at: usize,
        node: usize,
        hatch_keys: bool,
        stack: &mut Vec<Frame>,
    ) -> usize {
        let (end, items) = match *tape.event(at) {
            Event::Object { end } => (end, None),
            Event::Array { end } => match self.child(node, Step::Items) {
                Some(items) => (end, Some(items)),
                None => return end,
            },
            _ => return at + 1,
        };
        stack.push(Frame {
            end,
            node,
            items,
            hatch_keys: hatch_keys && items.is_none(),
            next_key: 0,
        });
        at + 1
    }

    /// Walks the object that an escape hatch's string holds under `node`; text that is not
    /// a JSON object is left alone.
    fn walk_hatch(&mut self, text: &str, node: usize, group: Option<usize>) {
        let mut tape = std::mem::take(&mut self.hatch_tape);
        if tape.parse_str(text).is_ok() && matches!(tape.event(0), Event::Object { .. }) {
            if tape.has_duplicate_keys() {
                tape.deduplicate();
            }
            self.walk(&tape, node, true, group);
        }
        self.hatch_tape = tape;
    }

    /// The node of `key` under `parent` (see [`Profiler::child`]), trying the key at the
    /// `next` position first, since records mostly repeat their key order; `next` then moves
    /// past the key found.
    fn keyed_child(&mut self, parent: usize, key: &str, next: &mut usize) -> Option<usize> {
        let keys = &self.nodes[parent].keys;
        let position = match keys.get(*next) {
            Some((known, _)) if **known == *key => *next,
            // The record may lack one key the others have.
            _ if matches!(keys.get(*next + 1), Some((k, _)) if **k == *key) => *next + 1,
            _ => match self.nodes[parent].children.get(key) {
                Some(&position) => position,
                None => {
                    let node = self.child(parent, Step::Key(key))?;
                    *next = self.nodes[parent].keys.len();
                    return Some(node);
                }
            },
        };
        *next = position + 1;
        Some(self.nodes[parent].keys[position].1)
    }

    /// The node of `step` under `parent`, created on first sight; `None` when it is new and
    /// the path bound is reached (its occurrences, and those below it, are only counted).
    fn child(&mut self, parent: usize, step: Step<'_>) -> Option<usize> {
        let known = match &step {
            Step::Key(key) => {
                let parent = &self.nodes[parent];
                parent.children.get(*key).map(|&p| parent.keys[p].1)
            }
            Step::Items => self.nodes[parent].items,
        };
        if known.is_some() {
            return known;
        }
        if self.nodes.len() > self.options.max_paths {
            self.profile.paths_dropped += 1;
            return None;
        }
        let path = match &step {
            Step::Key(key) => format!("{}/{}", self.nodes[parent].path, segment(key)),
            Step::Items => format!("{}[]", self.nodes[parent].path),
        };
        let is_hatch = self.hatch_paths.contains(&path);
        let id = self.nodes.len();
        self.nodes.push(PathNode::new(path, is_hatch));
        let parent = &mut self.nodes[parent];
        match step {
            Step::Key(key) => {
                parent.children.insert(key.to_string(), parent.keys.len());
                parent.keys.push((key.into(), id));
            }
            Step::Items => parent.items = Some(id),
        }
        Some(id)
    }

    /// Counts one occurrence of a value at `node`.
    fn record_occurrence(
        &mut self,
        node: usize,
        value: Scalar<'_>,
        hatch_key: bool,
        group: Option<usize>,
    ) {
        let n = self.profile.records;
        let entry = &mut self.nodes[node];
        entry.stats.escape_hatch_key |= hatch_key;
        if entry.last_present != n {
            entry.last_present = n;
            entry.stats.present += 1;
            if let Some(group) = group {
                let counts = &mut self.groups[group].present;
                if counts.len() <= node {
                    counts.resize(node + 1, 0);
                }
                counts[node] += 1;
            }
        }
        let entry = &mut self.nodes[node];
        if !matches!(value, Scalar::Null) && entry.last_non_null != n {
            entry.last_non_null = n;
            entry.stats.non_null += 1;
        }
        entry.types[value.kind()] += 1;
        entry.stats.observe(value);
    }
}

/// The group a record belongs to: the text of its group-by field (a top-level field, or a
/// JSON Pointer when it starts with `/`).
fn group_of<'r>(record: &'r Tape, group_by: &str) -> Cow<'r, str> {
    let found = if group_by.starts_with('/') {
        pointer(record, group_by)
    } else {
        member(record, 0, group_by)
    };
    let Some(at) = found else {
        return NO_GROUP.into();
    };
    match scalar(record, at) {
        Scalar::Null => NO_GROUP.into(),
        Scalar::String(s) => s.into(),
        _ => record.value_at(at).to_string().into(),
    }
}

/// The value of `key` when `at` is an object.
fn member(tape: &Tape, at: usize, key: &str) -> Option<usize> {
    match tape.event(at) {
        Event::Object { .. } => tape
            .members(at)
            .find(|(k, _)| *k == Some(key))
            .map(|(_, v)| v),
        _ => None,
    }
}

/// What the JSON Pointer `pointer` points at, as `Value::pointer` finds it: `~1` and `~0`
/// unescaped, array items by an index without a sign or leading zeros.
fn pointer(record: &Tape, pointer: &str) -> Option<usize> {
    pointer.split('/').skip(1).try_fold(0, |at, token| {
        let token = token.replace("~1", "/").replace("~0", "~");
        match record.event(at) {
            Event::Object { .. } => member(record, at, &token),
            Event::Array { .. } => {
                let signed_or_padded =
                    token.starts_with('+') || (token.starts_with('0') && token.len() > 1);
                let index = token.parse().ok().filter(|_| !signed_or_padded)?;
                record.members(at).nth(index).map(|(_, v)| v)
            }
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn profile(records: &[Value], options: ProfileOptions) -> Profile {
        let mut profiler = Profiler::new(options);
        for record in records {
            profiler.observe(record);
        }
        profiler.finish()
    }

    #[test]
    fn counts_presence_per_record_and_types_per_occurrence() {
        let p = profile(
            &[
                json!({"id": 1, "tags": ["a", "b"], "price": 1.5}),
                json!({"id": 2, "tags": [], "price": null}),
                json!({"id": 3}),
            ],
            ProfileOptions::default(),
        );
        assert_eq!(p.records, 3);
        let id = &p.paths["/id"];
        assert_eq!((id.present, id.non_null), (3, 3));
        assert_eq!((id.min, id.max), (Some(1.0), Some(3.0)));
        assert_eq!(id.distinct.estimate(), 3);
        let tag = &p.paths["/tags[]"];
        assert_eq!((tag.present, tag.types["string"]), (1, 2));
        let price = &p.paths["/price"];
        assert_eq!((price.present, price.non_null), (2, 1));
        assert_eq!(price.types["null"], 1);
        assert_eq!(p.population("/price"), 1.0 / 3.0);
    }

    #[test]
    fn escape_hatches_are_profiled_key_by_key_even_as_json_text() {
        let options = ProfileOptions {
            escape_hatches: vec!["vendor_data".into()],
            group_by: Some("exchange".into()),
            ..ProfileOptions::default()
        };
        let p = profile(
            &[
                json!({"exchange": "binance", "vendor_data": "{\"marginTradingAllowed\": true}"}),
                json!({"exchange": "kraken", "vendor_data": {"marginTradingAllowed": false}}),
                json!({"exchange": "kraken"}),
            ],
            options,
        );
        let key = &p.paths["/vendor_data/marginTradingAllowed"];
        assert!(key.escape_hatch_key);
        assert_eq!(key.present, 2);
        assert_eq!(p.groups["kraken"].records, 2);
        assert_eq!(
            p.groups["kraken"].present["/vendor_data/marginTradingAllowed"],
            1
        );
        assert_eq!(
            p.groups["binance"].present["/vendor_data/marginTradingAllowed"],
            1
        );
    }

    #[test]
    fn deep_nesting_walks_without_recursion() {
        // (Parsed input is at most 128 levels deep; this is deeper than any input.)
        let mut value = json!(1);
        for _ in 0..1_000 {
            value = json!([value]);
        }
        let p = profile(&[value], ProfileOptions::default());
        assert_eq!(p.paths.len(), 1_000);
    }

    #[test]
    fn paths_beyond_the_bound_are_counted_not_kept() {
        let record: Value = (0..50)
            .map(|i| (format!("k{i}"), json!(i)))
            .collect::<serde_json::Map<_, _>>()
            .into();
        let options = ProfileOptions {
            max_paths: 10,
            ..ProfileOptions::default()
        };
        let p = profile(&[record], options);
        assert_eq!((p.paths.len(), p.paths_dropped), (10, 40));
    }

    #[test]
    fn keys_with_slashes_stay_apart() {
        let p = profile(
            &[json!({"a/b": 1, "a": {"b": 2}})],
            ProfileOptions::default(),
        );
        assert!(p.paths.contains_key("/a~1b") && p.paths.contains_key("/a/b"));
    }

    #[test]
    fn merged_parts_equal_the_whole() {
        let records: Vec<Value> = (0..400)
            .map(|i| json!({"n": i, "s": format!("v{}", i % 37), "opt": if i % 3 == 0 { json!(null) } else { json!(i) }, "g": i % 4}))
            .collect();
        let options = ProfileOptions {
            group_by: Some("g".into()),
            ..ProfileOptions::default()
        };
        let whole = profile(&records, options.clone());
        let mut merged = profile(&records[..150], options.clone());
        merged
            .merge(&profile(&records[150..], options))
            .expect("same options");
        assert_eq!(merged, whole);
    }

    #[test]
    fn documents_round_trip_and_newer_ones_are_refused() {
        let p = profile(&[json!({"a": 1})], ProfileOptions::default());
        let text = serde_json::to_string(&p).expect("serialize");
        assert_eq!(Profile::from_json(&text).expect("read"), p);
        let newer = text.replace("\"version\":1", "\"version\":2");
        assert!(matches!(
            Profile::from_json(&newer),
            Err(ProfileError::NewerFormat { found: 2 })
        ));
        assert!(matches!(
            Profile::from_json("{\"format\":\"other\"}"),
            Err(ProfileError::NotAProfile(_))
        ));
    }

    #[test]
    fn profiles_with_other_options_do_not_merge() {
        let mut a = profile(&[json!({})], ProfileOptions::default());
        let b = profile(
            &[json!({})],
            ProfileOptions {
                group_by: Some("x".into()),
                ..ProfileOptions::default()
            },
        );
        assert!(matches!(a.merge(&b), Err(ProfileError::Mismatch { .. })));
    }
}

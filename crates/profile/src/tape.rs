//! A JSON record parsed into a flat list of events, for profiling without a
//! `serde_json::Value`.
//!
//! Building a `Value` costs an allocation per key, per string and per object (an ordered map
//! with its own hash table), only for the profiler to walk it once and drop it. A tape is
//! filled into two buffers reused from record to record: the events, and one text buffer
//! holding every key and string. Text is read by this crate's own reader (`tape/scan.rs`), which
//! reads exactly as `serde_json` does and hands anything else (errors above all) to
//! `serde_json` through a `Visitor`, so numbers, escapes, depth limits and error messages are
//! exactly the ones a `Value` gets; a stream of array elements is read by `serde_json` alone
//! ([`Tape::seed`]). Strings live in that buffer rather than borrowed from the input so that
//! a tape does not tie up the line it came from and can be refilled from lines, array elements
//! and escape-hatch strings alike: the reader copies the whole text in once and its strings
//! are spans of the copy (escaped ones are decoded after it); through `serde_json` each string
//! is copied in. A copy is a `memcpy`, the allocations it replaces are not.
//!
//! One thing a tape does not reproduce by itself: in a `Value` the last of duplicate keys
//! wins, in the first one's place. A record with duplicate keys is marked, and profiled
//! through [`Tape::to_value`], which builds the `Value` with those semantics.

mod scan;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::collections::HashSet;

/// Where a key or string sits in the tape's text buffer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    start: usize,
    end: usize,
}

/// One event of a parsed record, in document order. A container's events are followed by
/// its members (an object's as key, value pairs) and end before index `end`.
#[derive(Debug, Clone)]
pub(crate) enum Event {
    Null,
    Bool(bool),
    Number(Number),
    String(Span),
    Key(Span),
    Array { end: usize },
    Object { end: usize },
}

/// A parsed JSON value, reused from record to record (see the module documentation).
#[derive(Debug, Default)]
pub struct Tape {
    events: Vec<Event>,
    text: String,
    /// Key events of the objects being filled, innermost last, each with a cheap
    /// fingerprint of the key (see [`fingerprint`]).
    open_keys: Vec<(usize, u64)>,
    duplicate_keys: bool,
}

impl Tape {
    /// Parses one JSON text, which must hold exactly one value (surrounding whitespace aside).
    pub fn parse_slice(&mut self, json: &[u8]) -> Result<(), serde_json::Error> {
        if let Ok(text) = std::str::from_utf8(json) {
            return self.parse_str(text);
        }
        // Only `serde_json` says where the bytes stop being UTF-8.
        let mut deserializer = serde_json::Deserializer::from_slice(json);
        self.seed().deserialize(&mut deserializer)?;
        deserializer.end()
    }

    /// [`Tape::parse_slice`] for text: read by this crate's own reader (`tape/scan.rs`), and
    /// what it declines by `serde_json`.
    pub fn parse_str(&mut self, json: &str) -> Result<(), serde_json::Error> {
        if scan::fill(self, json).is_ok() {
            return Ok(());
        }
        let mut deserializer = serde_json::Deserializer::from_str(json);
        self.seed().deserialize(&mut deserializer)?;
        deserializer.end()
    }

    /// A seed that empties the tape and fills it with the next value of any deserializer
    /// (an element of a JSON array being streamed, for one).
    pub fn seed(&mut self) -> impl for<'de> DeserializeSeed<'de, Value = ()> + '_ {
        self.reset();
        Fill(self)
    }

    fn reset(&mut self) {
        self.events.clear();
        self.text.clear();
        self.open_keys.clear();
        self.duplicate_keys = false;
    }

    /// Whether an object of the record repeats a key (see the module documentation).
    pub fn has_duplicate_keys(&self) -> bool {
        self.duplicate_keys
    }

    /// The record as a `serde_json::Value`, exactly as `serde_json` would have parsed it.
    pub fn to_value(&self) -> Value {
        self.value_at(0)
    }

    /// Lays `value` out on the tape (emptied first) as reading its text would have; a `Value`
    /// repeats no key. Nesting costs heap, not stack.
    pub fn fill_value(&mut self, value: &Value) {
        enum Open<'v> {
            Array(usize, std::slice::Iter<'v, Value>),
            Object(usize, serde_json::map::Iter<'v>),
        }
        self.reset();
        let mut stack = Vec::new();
        let mut next = Some(value);
        loop {
            if let Some(value) = next.take() {
                let at = self.events.len();
                match value {
                    Value::Null => self.events.push(Event::Null),
                    Value::Bool(b) => self.events.push(Event::Bool(*b)),
                    Value::Number(n) => self.events.push(Event::Number(n.clone())),
                    Value::String(text) => {
                        let span = self.store(text);
                        self.events.push(Event::String(span));
                    }
                    Value::Array(items) => {
                        self.events.push(Event::Array { end: 0 });
                        stack.push(Open::Array(at, items.iter()));
                    }
                    Value::Object(members) => {
                        self.events.push(Event::Object { end: 0 });
                        stack.push(Open::Object(at, members.iter()));
                    }
                }
            }
            let Some(open) = stack.last_mut() else {
                return;
            };
            next = match open {
                Open::Array(_, items) => items.next(),
                Open::Object(_, members) => members.next().map(|(key, value)| {
                    let span = self.store(key);
                    self.events.push(Event::Key(span));
                    value
                }),
            };
            if next.is_none() {
                let end = self.events.len();
                match stack.pop() {
                    Some(Open::Array(at, _)) => self.events[at] = Event::Array { end },
                    Some(Open::Object(at, _)) => self.events[at] = Event::Object { end },
                    None => {}
                }
            }
        }
    }

    /// Resolves repeated keys as a `Value` does (see the module documentation).
    pub(crate) fn deduplicate(&mut self) {
        let value = self.to_value();
        self.fill_value(&value);
    }

    pub(crate) fn event(&self, at: usize) -> &Event {
        &self.events[at]
    }

    pub(crate) fn str(&self, span: Span) -> &str {
        &self.text[span.start..span.end]
    }

    /// The index just past the value starting at `at`.
    pub(crate) fn after(&self, at: usize) -> usize {
        match self.events[at] {
            Event::Array { end } | Event::Object { end } => end,
            _ => at + 1,
        }
    }

    /// The members of the container at `at` in document order: `(key, value index)`, with
    /// no key for array items.
    pub(crate) fn members(&self, at: usize) -> impl Iterator<Item = (Option<&str>, usize)> {
        let (end, object) = match self.events[at] {
            Event::Array { end } => (end, false),
            Event::Object { end } => (end, true),
            _ => (at + 1, false),
        };
        let mut next = at + 1;
        std::iter::from_fn(move || {
            if next >= end {
                return None;
            }
            let item = if object {
                let Event::Key(key) = self.events[next] else {
                    unreachable!("an object's members start with their key")
                };
                (Some(self.str(key)), next + 1)
            } else {
                (None, next)
            };
            next = self.after(item.1);
            Some(item)
        })
    }

    pub(crate) fn value_at(&self, at: usize) -> Value {
        match &self.events[at] {
            Event::Null => Value::Null,
            Event::Bool(b) => Value::Bool(*b),
            Event::Number(n) => Value::Number(n.clone()),
            Event::String(span) => Value::String(self.str(*span).to_string()),
            Event::Array { .. } => Value::Array(
                self.members(at)
                    .map(|(_, item)| self.value_at(item))
                    .collect(),
            ),
            Event::Object { .. } => {
                let mut map = Map::new();
                for (key, item) in self.members(at) {
                    // `insert` keeps a repeated key in its first place with the last value,
                    // as parsing into a `Value` does.
                    map.insert(key.unwrap_or_default().to_string(), self.value_at(item));
                }
                Value::Object(map)
            }
            Event::Key(_) => unreachable!("a key is read with its object"),
        }
    }

    fn store(&mut self, text: &str) -> Span {
        let start = self.text.len();
        self.text.push_str(text);
        Span {
            start,
            end: self.text.len(),
        }
    }

    /// Marks the tape when the keys opened since `base` repeat one.
    fn check_keys(&mut self, base: usize) {
        let keys = &self.open_keys[base..];
        let key = |i: usize| match self.events[keys[i].0] {
            Event::Key(span) => self.str(span),
            _ => "",
        };
        // Small objects compare fingerprints pairwise (the text only when they are equal):
        // cheaper than hashing every key.
        let same = |i: usize, j: usize| keys[i].1 == keys[j].1 && key(i) == key(j);
        let repeated = if keys.len() <= 16 {
            (1..keys.len()).any(|i| (0..i).any(|j| same(i, j)))
        } else {
            let mut seen = HashSet::with_capacity(keys.len());
            !(0..keys.len()).all(|i| seen.insert(key(i)))
        };
        self.duplicate_keys |= repeated;
    }
}

/// A key's length and first seven bytes in one word: equal keys have equal fingerprints,
/// and most different keys different ones.
fn fingerprint(key: &[u8]) -> u64 {
    // Byte by byte: a copy of at most seven bytes is a call to `memcpy`, which cost more.
    let head = key.iter().copied().take(7).enumerate();
    let word = head.fold(0, |word, (i, b)| word | u64::from(b) << (8 * i));
    word | (key.len() as u8 as u64) << 56
}

/// Fills a tape with one value.
struct Fill<'t>(&'t mut Tape);

impl<'de> DeserializeSeed<'de> for Fill<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Fill<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.0.events.push(Event::Null);
        Ok(())
    }

    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.0.events.push(Event::Bool(v));
        Ok(())
    }

    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        self.0.events.push(Event::Number(v.into()));
        Ok(())
    }

    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        self.0.events.push(Event::Number(v.into()));
        Ok(())
    }

    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        // As in a `Value`: a float that is not finite (never from JSON text) is null.
        let event = Number::from_f64(v).map_or(Event::Null, Event::Number);
        self.0.events.push(event);
        Ok(())
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        let span = self.0.store(v);
        self.0.events.push(Event::String(span));
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let tape = self.0;
        let at = tape.events.len();
        tape.events.push(Event::Array { end: 0 });
        while seq.next_element_seed(Fill(tape))?.is_some() {}
        tape.events[at] = Event::Array {
            end: tape.events.len(),
        };
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let tape = self.0;
        let at = tape.events.len();
        tape.events.push(Event::Object { end: 0 });
        let base = tape.open_keys.len();
        while map.next_key_seed(FillKey(tape))?.is_some() {
            map.next_value_seed(Fill(tape))?;
        }
        tape.check_keys(base);
        tape.open_keys.truncate(base);
        tape.events[at] = Event::Object {
            end: tape.events.len(),
        };
        Ok(())
    }
}

/// Fills a tape with an object's key.
struct FillKey<'t>(&'t mut Tape);

impl<'de> DeserializeSeed<'de> for FillKey<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for FillKey<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        let span = self.0.store(v);
        self.0
            .open_keys
            .push((self.0.events.len(), fingerprint(v.as_bytes())));
        self.0.events.push(Event::Key(span));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) -> (Value, bool) {
        let mut tape = Tape::default();
        tape.parse_str(text).expect("valid JSON");
        (tape.to_value(), tape.has_duplicate_keys())
    }

    #[test]
    fn values_come_back_as_serde_json_parses_them() {
        for text in [
            r#"{"a":[1,-2,3.5,18446744073709551615,18446744073709551616,-9223372036854775809],"b":{"c":null,"d":true},"e":"\u00e9\ud83d\ude00\n"}"#,
            r#"[[],{},"",0,-0,1e308,-0.0,1E-400]"#,
            r#""just a string""#,
            "12",
        ] {
            let expected: Value = serde_json::from_str(text).expect("valid");
            assert_eq!(round_trip(text), (expected, false), "{text}");
        }
    }

    #[test]
    fn duplicate_keys_are_marked_and_resolved_as_a_value_resolves_them() {
        let text = r#"{"a":1,"b":{"x":1,"x":{"y":2}},"a":"last"}"#;
        let expected: Value = serde_json::from_str(text).expect("valid");
        assert_eq!(round_trip(text), (expected, true));
        let many: String = (0..40).map(|i| format!("\"k{}\":{i},", i % 39)).collect();
        let text = format!("{{{}\"end\":0}}", many);
        assert!(
            round_trip(&text).1,
            "repeats in a large object are found too"
        );
        assert!(
            !round_trip(r#"{"a":{"a":{"a":1}}}"#).1,
            "nesting is no repeat"
        );
    }

    #[test]
    fn errors_are_serde_json_errors() {
        let mut tape = Tape::default();
        for text in ["{\"a\":", "[1,]", "1e400", "{} x", "\"\\ud800\""] {
            let ours = tape.parse_str(text).expect_err(text).to_string();
            let theirs = serde_json::from_str::<Value>(text)
                .expect_err(text)
                .to_string();
            assert_eq!(ours, theirs, "{text}");
        }
    }

    /// The events of a tape with their strings spelled out.
    fn spelled(tape: &Tape) -> Vec<String> {
        let events = tape.events.iter();
        events
            .map(|event| match event {
                Event::Key(span) => format!("key {:?}", tape.str(*span)),
                Event::String(span) => format!("string {:?}", tape.str(*span)),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_value_is_laid_out_as_its_text_is_read() {
        let mut read = Tape::default();
        let mut laid = Tape::default();
        let deep = format!("{}1{}", "[".repeat(100), "]".repeat(100));
        for text in [
            r#"{"a":[1,-2.5,{"b":null,"c":[]},{}],"d":"\u00e9","e":true}"#,
            "[]",
            "\"s\"",
            deep.as_str(),
        ] {
            read.parse_str(text).expect("valid");
            laid.fill_value(&serde_json::from_str(text).expect("valid"));
            assert_eq!(spelled(&laid), spelled(&read), "{text}");
        }
    }

    #[test]
    fn a_tape_is_reused() {
        let mut tape = Tape::default();
        tape.parse_slice(br#"{"long key":"long value","n":[1,2,3]}"#)
            .expect("valid");
        tape.parse_slice(br#"{"k":"v"}"#).expect("valid");
        assert_eq!(tape.to_value(), serde_json::json!({"k": "v"}));
    }
}

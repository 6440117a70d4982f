//! Avro binary data: encoding a datum with one schema and decoding it into another, following
//! the specification's schema resolution. Data is shown in Avro's JSON encoding (a non-null
//! union value is `{"<branch>": value}`, bytes and fixed are strings of code points 0-255).
//! This is the ground truth the compatibility rules are tested against.

use crate::model::{Arena, Kind, NodeId};
use crate::rules::name_mismatch::names_match;
use covenant_engine::budget::Metered;
use serde_json::{Map, Value};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

/// Data nested deeper than this is refused (recursive schemas allow any depth).
const MAX_DATA_DEPTH: usize = 512;

/// Data nested up to this depth is decoded on the caller's thread; deeper data is decoded
/// again on a thread of its own whose stack holds [`MAX_DATA_DEPTH`] levels (an unoptimized
/// build takes about 10 KiB of stack a level).
const SHALLOW_DEPTH: usize = 48;

/// The stack of the thread deep data is decoded on.
const DEEP_STACK: usize = 32 * 1024 * 1024;

/// Values one datum may produce that no byte of it pays for: the items of a zero-sized type
/// (`null`, a record of such fields, a zero-length fixed) and the reader defaults filled in.
/// Every other value consumes at least one byte, so the payload's size bounds those.
pub const MAX_UNPAID_VALUES: u64 = 1 << 20;

/// Units of work gathered before they are charged to the installed budget (a poll takes a
/// lock). A unit is one value produced, or 64 bytes of text.
const CHARGE_BATCH: u64 = 4096;

/// The error of a decoding stopped because the installed work budget is spent.
pub const BUDGET_SPENT: &str = "Decoding the data ran out of the check's budget.";

type Result<T> = std::result::Result<T, String>;

struct Input<'b> {
    buf: &'b [u8],
    pos: usize,
}

impl Input<'_> {
    fn byte(&mut self) -> Result<u8> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or_else(|| "Unexpected end of data.".to_string())?;
        self.pos += 1;
        Ok(b)
    }
    fn long(&mut self) -> Result<i64> {
        let mut value: u64 = 0;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                return Err("Variable-length integer is too long.".into());
            }
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(((value >> 1) as i64) ^ -((value & 1) as i64));
            }
        }
        Err("Variable-length integer is too long.".into())
    }
    fn int(&mut self) -> Result<i32> {
        i32::try_from(self.long()?).map_err(|_| "Int value out of range.".to_string())
    }
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.buf.len());
        let end = end.ok_or_else(|| "Unexpected end of data.".to_string())?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn len(&mut self) -> Result<usize> {
        usize::try_from(self.long()?).map_err(|_| "Negative length.".to_string())
    }
    fn f32(&mut self) -> Result<f32> {
        let b = self.take(4)?;
        Ok(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn f64(&mut self) -> Result<f64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(f64::from_le_bytes(a))
    }
    fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }
    /// Item count of the next array/map block (a negative count is followed by a byte size).
    fn block(&mut self) -> Result<usize> {
        let n = self.long()?;
        if n < 0 {
            self.long()?;
            usize::try_from(n.unsigned_abs()).map_err(|_| "Bad block count.".to_string())
        } else {
            usize::try_from(n).map_err(|_| "Bad block count.".to_string())
        }
    }
}

fn number(f: f64) -> Value {
    serde_json::Number::from_f64(f)
        .map(Value::Number)
        .unwrap_or_else(|| Value::String(f.to_string()))
}

fn bytes_json(b: &[u8]) -> Value {
    Value::String(b.iter().map(|c| char::from(*c)).collect())
}

/// Decodes one datum written with `w` (root of `wa`) as read by `r` (root of `ra`).
pub fn decode(m: Metered<'_>, wa: &Arena, ra: &Arena, bytes: &[u8]) -> Result<Value> {
    decode_as(m, wa, ra, bytes, false)
}

/// [`decode`] with the reader's logical types applied, for comparing what two readers make
/// of the same bytes: decimals as decimal text, times as `instant:`/`local:`/`date:`/`time:`
/// and a count of nanoseconds (days for dates), plain bytes as UTF-8 text, unions unwrapped.
pub fn decode_values(m: Metered<'_>, wa: &Arena, ra: &Arena, bytes: &[u8]) -> Result<Value> {
    decode_as(m, wa, ra, bytes, true)
}

fn decode_as(m: Metered<'_>, wa: &Arena, ra: &Arena, bytes: &[u8], logical: bool) -> Result<Value> {
    match decode_within(wa, ra, bytes, logical, SHALLOW_DEPTH) {
        Err(Deeper) => {
            let budget = covenant_engine::budget::inherit(m);
            let deep = std::thread::scope(|scope| {
                std::thread::Builder::new()
                    .stack_size(DEEP_STACK)
                    .spawn_scoped(scope, || {
                        budget.run(|_| decode_within(wa, ra, bytes, logical, MAX_DATA_DEPTH))
                    })
                    .ok()
                    .and_then(|handle| handle.join().ok())
            });
            match deep {
                Some(Ok(v)) => v,
                Some(Err(Deeper)) => Err("Data is nested too deeply.".into()),
                None => Err("The data could not be decoded on a thread of its own.".into()),
            }
        }
        Ok(v) => v,
    }
}

/// The data nests deeper than the decoding's depth bound allows on this thread.
struct Deeper;

fn decode_within(
    wa: &Arena,
    ra: &Arena,
    bytes: &[u8],
    logical: bool,
    max_depth: usize,
) -> std::result::Result<Result<Value>, Deeper> {
    let mut input = Input { buf: bytes, pos: 0 };
    let meter = Meter::default();
    let v = Resolver {
        wa,
        ra,
        logical,
        meter: &meter,
        max_depth,
    }
    .resolve(&mut input, wa.root, ra.root, 0);
    if meter.deeper.get() {
        return Err(Deeper);
    }
    Ok(v.and_then(|v| finish(v, &meter, &input)))
}

fn finish(v: Value, meter: &Meter, input: &Input<'_>) -> Result<Value> {
    let bytes = input.buf;
    meter.flush()?;
    if input.pos != bytes.len() {
        return Err(format!(
            "{} trailing bytes after the datum.",
            bytes.len() - input.pos
        ));
    }
    Ok(v)
}

/// What one decoding has produced: every value is charged to the installed budget (in
/// batches), and the values no byte pays for are bounded by [`MAX_UNPAID_VALUES`].
#[derive(Default)]
struct Meter {
    produced: Cell<u64>,
    pending: Cell<u64>,
    unpaid: Cell<u64>,
    /// Writer types known to be zero-sized or not, by node.
    zero_sized: RefCell<HashMap<NodeId, bool>>,
    /// The data went past the decoding's depth bound (see [`SHALLOW_DEPTH`]).
    deeper: Cell<bool>,
}

impl Meter {
    /// Counts `units` of work, charging the budget once a batch is gathered.
    fn produce(&self, units: u64) -> Result<()> {
        self.produced.set(self.produced.get().saturating_add(units));
        self.pending.set(self.pending.get().saturating_add(units));
        if self.pending.get() >= CHARGE_BATCH {
            return self.flush();
        }
        Ok(())
    }

    /// Charges what is gathered; an error when the budget is spent.
    fn flush(&self) -> Result<()> {
        if covenant_engine::budget::charge(self.pending.replace(0)) {
            return Err(BUDGET_SPENT.into());
        }
        Ok(())
    }

    /// Counts `units` of values that consumed no byte of the payload.
    fn unpaid(&self, units: u64) -> Result<()> {
        let total = self.unpaid.get().saturating_add(units);
        self.unpaid.set(total);
        if total > MAX_UNPAID_VALUES {
            return Err(format!(
                "The data holds more than {MAX_UNPAID_VALUES} values that take no bytes (items of a zero-sized type, defaults filled in)."
            ));
        }
        Ok(())
    }
}

/// Whether a value of `id` can take no bytes at all. Deeper than the data may nest, it is
/// taken to take some: such a value fails to decode anyway.
fn zero_sized(arena: &Arena, id: NodeId, depth: usize, memo: &mut HashMap<NodeId, bool>) -> bool {
    if let Some(known) = memo.get(&id) {
        return *known;
    }
    let zero = depth <= MAX_DATA_DEPTH
        && match arena.kind(id) {
            Kind::Null => true,
            Kind::Fixed(f) => f.size == 0,
            Kind::Record(r) => r
                .fields
                .iter()
                .all(|f| zero_sized(arena, f.ty, depth + 1, memo)),
            _ => false,
        };
    memo.insert(id, zero);
    zero
}

/// Values and bytes of text in a JSON value, in units (see [`CHARGE_BATCH`]).
fn weight(v: &Value) -> u64 {
    let mut units = 0u64;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        units = units.saturating_add(1);
        match v {
            Value::String(s) => units = units.saturating_add(s.len() as u64 / 64),
            Value::Array(items) => stack.extend(items),
            Value::Object(m) => {
                for (k, x) in m {
                    units = units.saturating_add(k.len() as u64 / 64);
                    stack.push(x);
                }
            }
            _ => {}
        }
    }
    units
}

struct Resolver<'a> {
    wa: &'a Arena,
    ra: &'a Arena,
    /// Render values through the reader's logical types ([`decode_values`]).
    logical: bool,
    meter: &'a Meter,
    max_depth: usize,
}

impl Resolver<'_> {
    /// The item count of the next block of an array or map whose items are written as
    /// `item`: a count the remaining bytes cannot hold is refused before anything is made
    /// for it, unless the items take no bytes, and then it must stay within the values a
    /// datum may hold unpaid.
    fn block(&self, input: &mut Input<'_>, item: Option<NodeId>, what: &str) -> Result<usize> {
        let n = input.block()?;
        let left = input.remaining();
        if n <= left {
            return Ok(n);
        }
        let zero = item.is_some_and(|item| {
            zero_sized(self.wa, item, 0, &mut self.meter.zero_sized.borrow_mut())
        });
        if !zero {
            return Err(format!(
                "{what} block of {n} items is longer than the {left} bytes left in the data."
            ));
        }
        let after = self.meter.unpaid.get().saturating_add(n as u64);
        if after > MAX_UNPAID_VALUES {
            return Err(format!(
                "{what} block of {n} items of a zero-sized type: the data may hold at most {MAX_UNPAID_VALUES} values that take no bytes."
            ));
        }
        Ok(n)
    }

    /// Resolves one array item or map value; what it produced without consuming a byte is
    /// unpaid.
    fn item(&self, input: &mut Input<'_>, w: NodeId, r: NodeId, depth: usize) -> Result<Value> {
        let (pos, produced) = (input.pos, self.meter.produced.get());
        let v = self.resolve(input, w, r, depth)?;
        if input.pos == pos {
            self.meter
                .unpaid(self.meter.produced.get().saturating_sub(produced))?;
        }
        Ok(v)
    }

    fn resolve(&self, input: &mut Input<'_>, w: NodeId, r: NodeId, depth: usize) -> Result<Value> {
        if depth > self.max_depth {
            self.meter.deeper.set(true);
            return Err("Data is nested too deeply.".into());
        }
        self.meter.produce(1)?;
        let (wk, rk) = (self.wa.kind(w), self.ra.kind(r));
        if let Kind::Union(wbs) = wk {
            let i = input.long()?;
            let wb = usize::try_from(i)
                .ok()
                .and_then(|i| wbs.get(i))
                .ok_or_else(|| format!("Union branch index {i} out of range."))?;
            return self.resolve(input, *wb, r, depth + 1);
        }
        if let Kind::Union(rbs) = rk {
            let exact = rbs.iter().find(|rb| self.same_type(w, **rb));
            let chosen = exact.or_else(|| {
                rbs.iter()
                    .find(|rb| crate::rules::type_mismatch::promotes(self.ra.kind(**rb), wk))
            });
            let rb = *chosen.ok_or_else(|| {
                format!(
                    "No branch of reader union {} reads writer type '{}'.",
                    self.ra.describe(r),
                    self.wa.describe(w)
                )
            })?;
            let v = self.resolve(input, w, rb, depth + 1)?;
            if self.logical {
                return Ok(v);
            }
            return Ok(wrap(self.ra, rb, v));
        }
        let v = match (wk, rk) {
            (Kind::Null, Kind::Null) => Value::Null,
            (Kind::Boolean, Kind::Boolean) => match input.byte()? {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => return Err(format!("Invalid boolean byte {b}.")),
            },
            (Kind::Int, Kind::Int) => Value::from(input.int()?),
            (Kind::Int, Kind::Long) => Value::from(i64::from(input.int()?)),
            (Kind::Int, Kind::Float) => number(f64::from(input.int()? as f32)),
            (Kind::Int, Kind::Double) => number(f64::from(input.int()?)),
            (Kind::Long, Kind::Long) => Value::from(input.long()?),
            (Kind::Long, Kind::Float) => number(f64::from(input.long()? as f32)),
            (Kind::Long, Kind::Double) => number(input.long()? as f64),
            (Kind::Float, Kind::Float) => number(f64::from(input.f32()?)),
            (Kind::Float, Kind::Double) => number(f64::from(input.f32()?)),
            (Kind::Double, Kind::Double) => number(input.f64()?),
            (Kind::String | Kind::Bytes, Kind::String) => {
                let n = input.len()?;
                self.meter.produce(n as u64 / 64)?;
                Value::String(String::from_utf8_lossy(input.take(n)?).into_owned())
            }
            (Kind::String | Kind::Bytes, Kind::Bytes) => {
                let n = input.len()?;
                self.meter.produce(n as u64 / 32)?;
                bytes_json(input.take(n)?)
            }
            (Kind::Fixed(wf), Kind::Fixed(rf)) => {
                if !names_match(&rf.named, &wf.named) || rf.size != wf.size {
                    return Err(format!(
                        "Reader fixed '{}' ({} bytes) cannot read writer fixed '{}' ({} bytes).",
                        rf.named.name.full(),
                        rf.size,
                        wf.named.name.full(),
                        wf.size
                    ));
                }
                self.meter.produce(wf.size as u64 / 32)?;
                bytes_json(input.take(wf.size)?)
            }
            (Kind::Enum(we), Kind::Enum(re)) => {
                if !names_match(&re.named, &we.named) {
                    return Err(format!(
                        "Reader enum '{}' does not match writer enum '{}'.",
                        re.named.name.full(),
                        we.named.name.full()
                    ));
                }
                let i = input.long()?;
                let symbol = usize::try_from(i)
                    .ok()
                    .and_then(|i| we.symbols.get(i))
                    .ok_or_else(|| format!("Enum index {i} out of range."))?;
                if re.symbols.contains(symbol) {
                    Value::String(symbol.clone())
                } else if let Some(d) = &re.default {
                    Value::String(d.clone())
                } else {
                    return Err(format!(
                        "Symbol '{symbol}' is not in reader enum '{}', which has no default.",
                        re.named.name.full()
                    ));
                }
            }
            (Kind::Array(wi), Kind::Array(ri)) => {
                let mut items = Vec::new();
                loop {
                    let n = self.block(input, Some(*wi), "Array")?;
                    if n == 0 {
                        break;
                    }
                    for _ in 0..n {
                        items.push(self.item(input, *wi, *ri, depth + 1)?);
                    }
                }
                Value::Array(items)
            }
            (Kind::Map(wv), Kind::Map(rv)) => {
                let mut map = Map::new();
                loop {
                    // A key takes at least its length's byte: no map item is zero-sized.
                    let n = self.block(input, None, "Map")?;
                    if n == 0 {
                        break;
                    }
                    for _ in 0..n {
                        let len = input.len()?;
                        self.meter.produce(len as u64 / 64)?;
                        let key = String::from_utf8_lossy(input.take(len)?).into_owned();
                        let v = self.item(input, *wv, *rv, depth + 1)?;
                        map.insert(key, v);
                    }
                }
                Value::Object(map)
            }
            (Kind::Record(wr), Kind::Record(rr)) => {
                if !names_match(&rr.named, &wr.named) {
                    return Err(format!(
                        "Reader record '{}' does not match writer record '{}'.",
                        rr.named.name.full(),
                        wr.named.name.full()
                    ));
                }
                let mut values: Vec<Option<Value>> = vec![None; rr.fields.len()];
                for wf in &wr.fields {
                    let target = rr
                        .fields
                        .iter()
                        .position(|rf| rf.name == wf.name)
                        .or_else(|| {
                            rr.fields
                                .iter()
                                .position(|rf| rf.aliases.contains(&wf.name))
                        });
                    match target {
                        Some(i) => {
                            values[i] =
                                Some(self.resolve(input, wf.ty, rr.fields[i].ty, depth + 1)?)
                        }
                        None => {
                            self.skip(input, wf.ty, depth + 1)?;
                        }
                    }
                }
                let mut obj = Map::new();
                for (rf, v) in rr.fields.iter().zip(values) {
                    let v = match (v, &rf.default) {
                        (Some(v), _) => v,
                        (None, Some(d)) => {
                            let v = default_value(self.ra, rf.ty, d, 0);
                            let units = weight(&v);
                            self.meter.unpaid(units)?;
                            self.meter.produce(units)?;
                            v
                        }
                        (None, None) => {
                            return Err(format!(
                                "Reader field '{}' is missing in the writer's data and has no default.",
                                rf.name
                            ));
                        }
                    };
                    obj.insert(rf.name.clone(), v);
                }
                Value::Object(obj)
            }
            _ => {
                return Err(format!(
                    "Reader type '{}' cannot read writer type '{}'.",
                    self.ra.describe(r),
                    self.wa.describe(w)
                ));
            }
        };
        Ok(if self.logical {
            crate::values::apply(self.ra, r, v)
        } else {
            v
        })
    }

    /// A datum in its writer schema, without resolution (a writer-only field), charged to
    /// the same meter.
    fn skip(&self, input: &mut Input<'_>, id: NodeId, depth: usize) -> Result<Value> {
        Resolver {
            wa: self.wa,
            ra: self.wa,
            logical: false,
            meter: self.meter,
            max_depth: self.max_depth,
        }
        .resolve(input, id, id, depth)
    }

    /// The same type for choosing a reader union branch: same kind, and for named types a
    /// matching name.
    fn same_type(&self, w: NodeId, r: NodeId) -> bool {
        let (wk, rk) = (self.wa.kind(w), self.ra.kind(r));
        if std::mem::discriminant(wk) != std::mem::discriminant(rk) {
            return false;
        }
        match (rk.named(), wk.named()) {
            (Some(rn), Some(wn)) => names_match(rn, wn),
            _ => true,
        }
    }
}

fn wrap(arena: &Arena, branch: NodeId, v: Value) -> Value {
    if matches!(arena.kind(branch), Kind::Null) {
        return Value::Null;
    }
    let mut m = Map::new();
    m.insert(arena.branch_label(branch), v);
    Value::Object(m)
}

/// A field default (JSON as written in the schema) in the JSON encoding of its type.
pub fn default_value(arena: &Arena, ty: NodeId, d: &Value, depth: usize) -> Value {
    if depth > crate::parse::MAX_DEPTH {
        return d.clone();
    }
    match arena.kind(ty) {
        Kind::Union(bs) => {
            match bs
                .iter()
                .find(|b| crate::default::is_valid(arena, **b, d, 0))
            {
                Some(b) => wrap(arena, *b, default_value(arena, *b, d, depth + 1)),
                None => d.clone(),
            }
        }
        Kind::Record(r) => {
            let mut obj = Map::new();
            for f in &r.fields {
                if let Some(v) = d.get(&f.name).or(f.default.as_ref()) {
                    obj.insert(f.name.clone(), default_value(arena, f.ty, v, depth + 1));
                }
            }
            Value::Object(obj)
        }
        Kind::Array(i) => match d {
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|v| default_value(arena, *i, v, depth + 1))
                    .collect(),
            ),
            _ => d.clone(),
        },
        Kind::Map(vt) => match d {
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, v)| (k.clone(), default_value(arena, *vt, v, depth + 1)))
                    .collect(),
            ),
            _ => d.clone(),
        },
        Kind::Float | Kind::Double => d.as_f64().map(number).unwrap_or_else(|| d.clone()),
        _ => d.clone(),
    }
}

/// Encodes a datum given in the JSON encoding described above.
pub fn encode(arena: &Arena, datum: &Value) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    write(arena, arena.root, datum, &mut out, 0)?;
    Ok(out)
}

fn put_long(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    loop {
        if z < 0x80 {
            out.push(z as u8);
            return;
        }
        out.push((z as u8 & 0x7f) | 0x80);
        z >>= 7;
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_long(out, b.len() as i64);
    out.extend_from_slice(b);
}

fn code_points(s: &str) -> Result<Vec<u8>> {
    s.chars()
        .map(|c| u8::try_from(u32::from(c)).map_err(|_| format!("Character '{c}' is not a byte.")))
        .collect()
}

fn write(arena: &Arena, id: NodeId, v: &Value, out: &mut Vec<u8>, depth: usize) -> Result<()> {
    if depth > MAX_DATA_DEPTH {
        return Err("Data is nested too deeply.".into());
    }
    let mismatch = || format!("Value {v} does not match type '{}'.", arena.describe(id));
    match arena.kind(id) {
        Kind::Null => v.is_null().then_some(()).ok_or_else(mismatch)?,
        Kind::Boolean => out.push(u8::from(v.as_bool().ok_or_else(mismatch)?)),
        Kind::Int => {
            let i = v.as_i64().filter(|i| i32::try_from(*i).is_ok());
            put_long(out, i.ok_or_else(mismatch)?)
        }
        Kind::Long => put_long(out, v.as_i64().ok_or_else(mismatch)?),
        Kind::Float => {
            out.extend_from_slice(&(v.as_f64().ok_or_else(mismatch)? as f32).to_le_bytes())
        }
        Kind::Double => out.extend_from_slice(&v.as_f64().ok_or_else(mismatch)?.to_le_bytes()),
        Kind::String => put_bytes(out, v.as_str().ok_or_else(mismatch)?.as_bytes()),
        Kind::Bytes => put_bytes(out, &code_points(v.as_str().ok_or_else(mismatch)?)?),
        Kind::Fixed(f) => {
            let b = code_points(v.as_str().ok_or_else(mismatch)?)?;
            if b.len() != f.size {
                return Err(mismatch());
            }
            out.extend_from_slice(&b);
        }
        Kind::Enum(e) => {
            let s = v.as_str().ok_or_else(mismatch)?;
            let i = e.symbols.iter().position(|x| x == s).ok_or_else(mismatch)?;
            put_long(out, i as i64);
        }
        Kind::Array(items) => {
            let a = v.as_array().ok_or_else(mismatch)?;
            if !a.is_empty() {
                put_long(out, a.len() as i64);
                for x in a {
                    write(arena, *items, x, out, depth + 1)?;
                }
            }
            put_long(out, 0);
        }
        Kind::Map(values) => {
            let m = v.as_object().ok_or_else(mismatch)?;
            if !m.is_empty() {
                put_long(out, m.len() as i64);
                for (k, x) in m {
                    put_bytes(out, k.as_bytes());
                    write(arena, *values, x, out, depth + 1)?;
                }
            }
            put_long(out, 0);
        }
        Kind::Union(bs) => {
            let (i, inner) = match v {
                Value::Null => (
                    bs.iter().position(|b| matches!(arena.kind(*b), Kind::Null)),
                    v,
                ),
                Value::Object(m) if m.len() == 1 => {
                    let (label, inner) = m.iter().next().ok_or_else(mismatch)?;
                    (
                        bs.iter().position(|b| &arena.branch_label(*b) == label),
                        inner,
                    )
                }
                _ => (None, v),
            };
            let i = i.ok_or_else(mismatch)?;
            put_long(out, i as i64);
            write(arena, bs[i], inner, out, depth + 1)?;
        }
        Kind::Record(r) => {
            let obj = v.as_object().ok_or_else(mismatch)?;
            for f in &r.fields {
                let fv = obj
                    .get(&f.name)
                    .ok_or_else(|| format!("Field '{}' is missing from the value.", f.name))?;
                write(arena, f.ty, fv, out, depth + 1)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use covenant_engine::Limits;
    use covenant_engine::budget::{Budget, BudgetExceeded, unlimited};

    fn arena(text: &str) -> Arena {
        crate::parse::parse(text, &[], &Limits::default()).expect("valid schema")
    }

    fn zigzag(v: i64) -> Vec<u8> {
        let mut out = Vec::new();
        put_long(&mut out, v);
        out
    }

    const BOMB: &str = r#"{"type":"record","name":"Bomb","fields":[{"name":"xs","type":{"type":"array","items":"null"}}]}"#;

    #[test]
    fn a_block_of_millions_of_nulls_is_refused_before_anything_is_made() {
        let a = arena(BOMB);
        let mut payload = zigzag(20_000_000);
        payload.push(0);
        assert!(payload.len() <= 10);
        let started = std::time::Instant::now();
        let error = unlimited(|m| decode(m, &a, &a, &payload)).expect_err("the bomb is refused");
        assert!(error.contains("20000000"), "{error}");
        assert!(error.contains("take no bytes"), "{error}");
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        // The same items in many small blocks meet the same bound as they are produced.
        let mut blocks = Vec::new();
        for _ in 0..2_000 {
            blocks.extend(zigzag(1_000));
        }
        blocks.push(0);
        let error = unlimited(|m| decode(m, &a, &a, &blocks)).expect_err("refused");
        assert!(error.contains("take no bytes"), "{error}");
        // A modest array of nulls still decodes.
        let mut fine = zigzag(1_000);
        fine.push(0);
        let v = unlimited(|m| decode(m, &a, &a, &fine)).expect("decodes");
        assert_eq!(v["xs"].as_array().map(Vec::len), Some(1_000));
    }

    #[test]
    fn a_block_count_past_the_bytes_left_is_refused() {
        let a = arena(r#"{"type":"array","items":"int"}"#);
        let mut payload = zigzag(1_000_000_000);
        payload.extend([2, 4, 6, 0]);
        let error = unlimited(|m| decode(m, &a, &a, &payload)).expect_err("refused");
        assert!(error.contains("longer than the 4 bytes left"), "{error}");
        let m = arena(r#"{"type":"map","values":"null"}"#);
        let mut payload = zigzag(1_000_000_000);
        payload.push(0);
        let error = unlimited(|metered| decode(metered, &m, &m, &payload)).expect_err("refused");
        assert!(error.contains("Map block"), "{error}");
        // Nested arrays of nulls: each inner block fits the bytes left, the total does not.
        let nested = arena(r#"{"type":"array","items":{"type":"array","items":"null"}}"#);
        let mut payload = zigzag(3_000);
        for _ in 0..3_000 {
            payload.extend(zigzag(1_000));
            payload.push(0);
        }
        payload.push(0);
        let error = unlimited(|m| decode(m, &nested, &nested, &payload)).expect_err("refused");
        assert!(error.contains("take no bytes"), "{error}");
    }

    #[test]
    fn zero_sized_records_count_every_value_they_hold() {
        let fields: Vec<String> = (0..100)
            .map(|i| format!(r#"{{"name":"f{i}","type":"null"}}"#))
            .collect();
        let a = arena(&format!(
            r#"{{"type":"array","items":{{"type":"record","name":"E","fields":[{}]}}}}"#,
            fields.join(",")
        ));
        // 20,000 records of 100 nulls: 2,020,000 values from five bytes.
        let mut payload = zigzag(20_000);
        payload.push(0);
        let error = unlimited(|m| decode(m, &a, &a, &payload)).expect_err("refused");
        assert!(error.contains("take no bytes"), "{error}");
    }

    #[test]
    fn defaults_filled_in_are_bounded_too() {
        let w = arena(
            r#"{"type":"array","items":{"type":"record","name":"E","fields":[{"name":"a","type":"int"}]}}"#,
        );
        let default: Vec<String> = (0..200).map(|i| i.to_string()).collect();
        let r = arena(&format!(
            r#"{{"type":"array","items":{{"type":"record","name":"E","fields":[{{"name":"a","type":"int"}},{{"name":"b","type":{{"type":"array","items":"int"}},"default":[{}]}}]}}}}"#,
            default.join(",")
        ));
        // 10,000 one-byte records, each given a default of 201 values.
        let mut payload = zigzag(10_000);
        payload.extend(std::iter::repeat_n(2u8, 10_000));
        payload.push(0);
        let error = unlimited(|m| decode(m, &w, &r, &payload)).expect_err("refused");
        assert!(error.contains("take no bytes"), "{error}");
        // A few records read their default.
        let mut few = zigzag(3);
        few.extend([2, 4, 6, 0]);
        let v = unlimited(|m| decode(m, &w, &r, &few)).expect("decodes");
        assert_eq!(v[2]["b"].as_array().map(Vec::len), Some(200));
    }

    #[test]
    fn decoding_is_charged_to_the_installed_budget() {
        let a = arena(r#"{"type":"array","items":"int"}"#);
        let mut payload = zigzag(50_000);
        payload.extend(std::iter::repeat_n(2u8, 50_000));
        payload.push(0);
        let spent = Budget::new(None, Some(10_000)).run(|m| decode(m, &a, &a, &payload));
        assert_eq!(spent, Err(BudgetExceeded::Work(10_000)));
        let within = Budget::new(None, Some(100_000)).run(|m| decode(m, &a, &a, &payload));
        assert!(matches!(within, Ok(Ok(Value::Array(ref xs))) if xs.len() == 50_000));
        // Text is charged by its size.
        let s = arena(r#""string""#);
        let mut text = zigzag(1_000_000);
        text.extend(std::iter::repeat_n(b'x', 1_000_000));
        let spent = Budget::new(None, Some(1_000)).run(|m| decode(m, &s, &s, &text));
        assert_eq!(spent, Err(BudgetExceeded::Work(1_000)));
    }

    #[test]
    fn deep_data_is_refused() {
        let a =
            arena(r#"{"type":"record","name":"N","fields":[{"name":"next","type":["null","N"]}]}"#);
        let mut payload = vec![2u8; 10_000];
        payload.push(0);
        let error = unlimited(|m| decode(m, &a, &a, &payload)).expect_err("refused");
        assert!(error.contains("nested too deeply"), "{error}");
        // Deeper than the caller's thread is trusted with, within the bound: it decodes on a
        // thread of its own, charged to the same budget.
        let mut list = vec![2u8; 120];
        list.push(0);
        let v = unlimited(|m| decode(m, &a, &a, &list)).expect("decodes");
        assert!(v["next"]["N"]["next"]["N"].is_object());
        let spent = Budget::new(None, Some(10)).run(|m| decode(m, &a, &a, &list));
        assert_eq!(spent, Err(BudgetExceeded::Work(10)));
    }
}

//! A JSON reader that fills a [`Tape`] straight from the text.
//!
//! Written here rather than left to `serde_json` because reading is most of what profiling
//! costs, and the serde route pays for its generality on every byte: a visitor call per value
//! and key, a copy of every string through the deserializer, a check of every string's UTF-8
//! the caller has already made. Measured on the benchmark's 256 MB instrument file, one core:
//! splitting and checking lines the same way, filling a tape per line took 0.62–0.67 s with
//! this reader against 0.86–0.98 s through `serde_json`'s visitor; within `covenant profile`
//! the whole run went from 1.71 s to 1.47 s when it came in (before the walk and the line
//! splitting were made faster too).
//!
//! It takes on only what it reads exactly as `serde_json` does (a number with a fraction or an
//! exponent is computed here only when that is exact, see [`exact_float`], and read by
//! `serde_json`'s number reader otherwise) and declines everything else: text with an error,
//! nesting deeper than [`MAX_DEPTH`], a lone surrogate, an integer that does not fit 64 bits,
//! `-0`. A declined text is parsed again by `serde_json`, so numbers, escapes, depth limits and
//! error messages stay exactly the ones a `serde_json::Value` gets, and a declined text costs
//! only a second read of a text that was going to fail or is rare.

use super::{Event, Span, Tape, fingerprint};
use serde_json::Number;

/// The deepest nesting read here; deeper text is left to `serde_json`, whose recursion limit
/// (128) then decides.
const MAX_DEPTH: usize = 100;

/// The text is not one this reader takes on (see the module documentation).
#[derive(Debug)]
pub(crate) struct Declined;

type Read<T = ()> = Result<T, Declined>;

/// Fills `tape` (emptied first) with the one JSON value `text` holds.
pub(crate) fn fill(tape: &mut Tape, text: &str) -> Read {
    tape.reset();
    // The whole text is copied once, and a string without escapes is a span of that copy;
    // escaped strings are decoded after it. One copy cost less than one per string: the
    // benchmark's 256 MB file went from 1.20–1.28 s to 1.12–1.14 s.
    tape.text.push_str(text);
    let mut reader = Reader {
        text,
        bytes: text.as_bytes(),
        at: 0,
        tape,
    };
    reader.value(0)?;
    reader.skip_whitespace();
    if reader.at == reader.bytes.len() {
        Ok(())
    } else {
        Err(Declined)
    }
}

struct Reader<'a, 't> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    tape: &'t mut Tape,
}

impl Reader<'_, '_> {
    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    /// The next byte that is not whitespace, consumed.
    fn next_token(&mut self) -> Read<u8> {
        self.skip_whitespace();
        let byte = *self.bytes.get(self.at).ok_or(Declined)?;
        self.at += 1;
        Ok(byte)
    }

    /// One value: scalars here, containers in their own functions. Inlined into the
    /// containers' loops, so a scalar member costs no call (calls were a tenth of reading).
    #[inline(always)]
    fn value(&mut self, depth: usize) -> Read {
        match self.next_token()? {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => {
                let span = self.string()?;
                self.tape.events.push(Event::String(span));
                Ok(())
            }
            b't' => self.literal(b"rue", Event::Bool(true)),
            b'f' => self.literal(b"alse", Event::Bool(false)),
            b'n' => self.literal(b"ull", Event::Null),
            b'-' | b'0'..=b'9' => {
                self.at -= 1;
                let number = self.number()?;
                self.tape.events.push(Event::Number(number));
                Ok(())
            }
            _ => Err(Declined),
        }
    }

    fn literal(&mut self, rest: &[u8], event: Event) -> Read {
        if !self.bytes[self.at..].starts_with(rest) {
            return Err(Declined);
        }
        self.at += rest.len();
        self.tape.events.push(event);
        Ok(())
    }

    #[inline(never)]
    fn object(&mut self, depth: usize) -> Read {
        if depth > MAX_DEPTH {
            return Err(Declined);
        }
        let at = self.tape.events.len();
        self.tape.events.push(Event::Object { end: 0 });
        let base = self.tape.open_keys.len();
        self.members(b'}', |reader| reader.member(depth))?;
        self.tape.check_keys(base);
        self.tape.open_keys.truncate(base);
        self.tape.events[at] = Event::Object {
            end: self.tape.events.len(),
        };
        Ok(())
    }

    /// An object's member: its key, noted for the duplicate check, and its value.
    #[inline(always)]
    fn member(&mut self, depth: usize) -> Read {
        if self.next_token()? != b'"' {
            return Err(Declined);
        }
        let key = self.string()?;
        let print = fingerprint(&self.tape.text.as_bytes()[key.start..key.end]);
        self.tape.open_keys.push((self.tape.events.len(), print));
        self.tape.events.push(Event::Key(key));
        if self.next_token()? != b':' {
            return Err(Declined);
        }
        self.value(depth)
    }

    #[inline(never)]
    fn array(&mut self, depth: usize) -> Read {
        if depth > MAX_DEPTH {
            return Err(Declined);
        }
        let at = self.tape.events.len();
        self.tape.events.push(Event::Array { end: 0 });
        self.members(b']', |reader| reader.value(depth))?;
        self.tape.events[at] = Event::Array {
            end: self.tape.events.len(),
        };
        Ok(())
    }

    /// The members of a container whose opening bracket has been read, up to its `close`:
    /// none, or `member` once for each, separated by commas.
    #[inline(always)]
    fn members(&mut self, close: u8, mut member: impl FnMut(&mut Self) -> Read) -> Read {
        self.skip_whitespace();
        if self.bytes.get(self.at) == Some(&close) {
            self.at += 1;
            return Ok(());
        }
        loop {
            member(self)?;
            match self.next_token()? {
                b',' => continue,
                byte if byte == close => return Ok(()),
                _ => return Err(Declined),
            }
        }
    }

    /// A string whose opening quote has been read: a span of the tape's copy of the text
    /// when it has no escape. The text is `str`, so bytes between ASCII quotes and escapes
    /// are UTF-8 as they stand.
    #[inline]
    fn string(&mut self) -> Read<Span> {
        let start = self.at;
        self.at = plain_run_end(self.bytes, self.at);
        match self.bytes.get(self.at) {
            Some(b'"') => {
                self.at += 1;
                Ok(Span {
                    start,
                    end: self.at - 1,
                })
            }
            Some(b'\\') => self.escaped_string(start),
            // A control character, which JSON text must escape, or the end of the text.
            _ => Err(Declined),
        }
    }

    /// A string with escapes, from `start` (just past its opening quote) to the escape at
    /// hand, decoded at the end of the tape's text.
    fn escaped_string(&mut self, start: usize) -> Read<Span> {
        let decoded = self.tape.text.len();
        let mut run = start;
        loop {
            let byte = *self.bytes.get(self.at).ok_or(Declined)?;
            self.tape.text.push_str(&self.text[run..self.at]);
            self.at += 1;
            match byte {
                b'"' => {
                    return Ok(Span {
                        start: decoded,
                        end: self.tape.text.len(),
                    });
                }
                b'\\' => self.escape()?,
                // A control character, which JSON text must escape.
                _ => return Err(Declined),
            }
            run = self.at;
            self.at = plain_run_end(self.bytes, self.at);
        }
    }

    /// The escape after a backslash, appended to the tape's text.
    fn escape(&mut self) -> Read {
        let byte = *self.bytes.get(self.at).ok_or(Declined)?;
        self.at += 1;
        let decoded = match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => self.unicode_escape()?,
            _ => return Err(Declined),
        };
        self.tape.text.push(decoded);
        Ok(())
    }

    /// The character of a `\u` escape whose `\u` has been read: a surrogate pair is one
    /// character; a lone surrogate is declined.
    fn unicode_escape(&mut self) -> Read<char> {
        let first = self.hex4()?;
        let code = match first {
            0xd800..=0xdbff => {
                if !self.bytes[self.at..].starts_with(b"\\u") {
                    return Err(Declined);
                }
                self.at += 2;
                let second = self.hex4()?;
                if !(0xdc00..=0xdfff).contains(&second) {
                    return Err(Declined);
                }
                0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00)
            }
            0xdc00..=0xdfff => return Err(Declined),
            _ => first,
        };
        char::from_u32(code).ok_or(Declined)
    }

    fn hex4(&mut self) -> Read<u32> {
        let digits = self.bytes.get(self.at..self.at + 4).ok_or(Declined)?;
        let mut code = 0;
        for &digit in digits {
            let value = (digit as char).to_digit(16).ok_or(Declined)?;
            code = code * 16 + value;
        }
        self.at += 4;
        Ok(code)
    }

    /// A number as `serde_json` reads it: an integer as `u64` or a negative `i64`, anything
    /// with a fraction or an exponent as the nearest `f64`.
    fn number(&mut self) -> Read<Number> {
        let start = self.at;
        let negative = self.bytes[self.at] == b'-';
        if negative {
            self.at += 1;
        }
        match self.bytes.get(self.at) {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(Declined),
        }
        let integer_end = self.at;
        let mut float = false;
        if self.bytes.get(self.at) == Some(&b'.') {
            self.at += 1;
            self.required_digits()?;
            float = true;
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.at) {
            self.at += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.at) {
                self.at += 1;
            }
            self.required_digits()?;
            float = true;
        }
        if float {
            return match exact_float(&self.bytes[start..self.at]) {
                Some(value) => Number::from_f64(value).ok_or(Declined),
                // Through `serde_json`'s own number reader: its floats and the correctly
                // rounded ones of `str::parse` differ in the last bit on some inputs (`-6E50`).
                None => serde_json::from_str(&self.text[start..self.at]).map_err(|_| Declined),
            };
        }
        // Integers beyond 64 bits are left to `serde_json`, which reads them as floats.
        let digits = &self.bytes[start + usize::from(negative)..integer_end];
        let magnitude = digits
            .iter()
            .try_fold(0u64, |n, d| {
                n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
            })
            .ok_or(Declined)?;
        match (negative, magnitude) {
            (false, n) => Ok(Number::from(n)),
            // `-0` is a float to `serde_json`, and below i64's range too.
            (true, 0) => Err(Declined),
            (true, n) if n > 1 << 63 => Err(Declined),
            (true, n) => Ok(Number::from((n as i64).wrapping_neg())),
        }
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    fn required_digits(&mut self) -> Read {
        let start = self.at;
        self.digits();
        if self.at == start {
            Err(Declined)
        } else {
            Ok(())
        }
    }
}

/// The value of a well-formed JSON number with a fraction or an exponent when it is exact to
/// compute: at most 15 digits (below 2^53, so exactly an `f64`) scaled by at most 10^22
/// (exactly an `f64` too), where one correctly rounded multiplication or division gives the
/// nearest `f64`, as every correct reader finds it (Clinger's fast path); `None` otherwise.
/// Handing every float to `serde_json` cost about 8 % of profiling the benchmark's file of
/// prices (1.36–1.38 s against 1.23–1.28 s).
fn exact_float(text: &[u8]) -> Option<f64> {
    const POWERS: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ];
    let (negative, text) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let (mut mantissa, mut digits, mut scale, mut fraction) = (0u64, 0, 0i32, false);
    let mut rest = text.iter();
    for &byte in rest.by_ref() {
        match byte {
            b'0'..=b'9' => {
                mantissa = mantissa * 10 + u64::from(byte - b'0');
                digits += 1;
                scale -= i32::from(fraction);
                if digits > 15 {
                    return None;
                }
            }
            b'.' => fraction = true,
            _ => break,
        }
    }
    let exponent = rest.as_slice();
    if !exponent.is_empty() {
        let (sign, exponent) = match exponent.split_first() {
            Some((b'-', rest)) => (-1, rest),
            Some((b'+', rest)) => (1, rest),
            _ => (1, exponent),
        };
        if exponent.len() > 3 {
            return None;
        }
        let value = exponent
            .iter()
            .fold(0i32, |n, d| n * 10 + i32::from(d - b'0'));
        scale += sign * value;
    }
    let power = *POWERS.get(scale.unsigned_abs() as usize)?;
    let magnitude = match scale >= 0 {
        true => mantissa as f64 * power,
        false => mantissa as f64 / power,
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// The index of the first byte at or after `at` that ends a run of plain string bytes: a
/// quote, a backslash or a control character (`bytes.len()` when there is none). Eight bytes
/// are tested at a time, as bits of one word (a byte equal to `b` leaves a zero byte in
/// `word ^ b`; `(x - 0x01..) & !x & 0x80..` marks zero bytes, and bytes below `0x20` when
/// `0x20..` is subtracted instead). A mark above a true one can be spurious, so only the
/// lowest mark is read, and it is always true. A string byte at a time cost as much as all
/// of `serde_json`'s reading.
fn plain_run_end(bytes: &[u8], mut at: usize) -> usize {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = ONES * 0x80;
    let zero_bytes = |x: u64| x.wrapping_sub(ONES) & !x;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let quote = zero_bytes(word ^ (ONES * u64::from(b'"')));
        let backslash = zero_bytes(word ^ (ONES * u64::from(b'\\')));
        let control = word.wrapping_sub(ONES * 0x20) & !word;
        let marks = (quote | backslash | control) & HIGH;
        if marks != 0 {
            return at + (marks.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while let Some(&byte) = bytes.get(at) {
        if byte == b'"' || byte == b'\\' || byte < 0x20 {
            break;
        }
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// A reproducible stream of pseudo-random numbers.
    fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    /// What the reader makes of `text`: the value and the duplicate-key mark, or `None` when
    /// it declines.
    fn read(text: &str) -> Option<(Value, bool)> {
        let mut tape = Tape::default();
        fill(&mut tape, text).ok()?;
        Some((tape.to_value(), tape.has_duplicate_keys()))
    }

    #[test]
    fn what_it_reads_it_reads_as_serde_json() {
        for text in [
            r#"{"a":[1,-2,3.5,18446744073709551615,-9223372036854775808],"b":{"c":null,"d":true}}"#,
            r#" [ [ ] , { } , "" , 0 , 1e308 , -0.0 , 1E-400 , 2.5e+3 , 7E0 ] "#,
            r#"{"e":"\u00e9\ud83d\ude00\n\t\"\\\/\b\f\r","f":"é😀 plain ünïcode"}"#,
            "\"just a string\"",
            "12",
            "false",
            "\t{\"k\":\r\n\"v\"}\n",
            r#"{"a":1,"a":2}"#,
        ] {
            let expected: Value = serde_json::from_str(text).expect("valid");
            let (value, _) = read(text).unwrap_or_else(|| panic!("declined {text}"));
            assert_eq!(value, expected, "{text}");
        }
        assert_eq!(read(r#"{"a":1,"a":2}"#).map(|r| r.1), Some(true));
    }

    #[test]
    fn numbers_agree_with_serde_json_to_the_bit() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1du64);
        let mut accepted = 0;
        for _ in 0..50_000 {
            let digits = (next() % 25 + 1) as usize;
            let mantissa: String = (0..digits)
                .map(|i| {
                    char::from(b'0' + (next() % 10) as u8 + u8::from(i == 0 && digits > 1)).min('9')
                })
                .collect();
            let short = &mantissa[..mantissa.len().min(9)];
            let text = match next() % 7 {
                0 => mantissa,
                1 => format!("-{mantissa}"),
                2 => format!("{mantissa}.{}", next() % 100_000),
                3 => format!("{short}.{:0>5}", next() % 100_000),
                4 => format!("-0.{:0>3}{short}", next() % 1000),
                5 => format!("{short}e{}", (next() % 50) as i64 - 25),
                _ => format!("-{mantissa}e{}", next() % 700)
                    .replace("e", if next().is_multiple_of(2) { "e-" } else { "E" }),
            };
            let expected: Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(_) => continue,
            };
            if let Some((value, _)) = read(&text) {
                match (value.as_f64(), expected.as_f64()) {
                    (Some(a), Some(b)) => assert_eq!(a.to_bits(), b.to_bits(), "{text}"),
                    _ => assert_eq!(value, expected, "{text}"),
                }
                assert_eq!(value, expected, "{text}");
                accepted += 1;
            }
        }
        assert!(accepted > 30_000, "only {accepted} numbers were read here");
    }

    /// Mutated texts: the reader never panics, reads only what `serde_json` reads, and reads
    /// it to the same value.
    #[test]
    fn mutated_text_is_read_as_serde_json_reads_it_or_declined() {
        let seeds = [
            r#"{"symbol":"BINANCE-1","tickSize":0.012,"n":[1,-2,{"k":"v\n\u00e9"}],"b":true,"z":null}"#,
            r#"[{"a":{"b":[[],{}]}},"\ud83d\ude00",-0.5e-3,18446744073709551615]"#,
        ];
        let alphabet: Vec<char> = "{}[]:,\"\\/0123456789-+.eEtrufalsn \t\nuéd8\u{1}"
            .chars()
            .collect();
        let mut next = xorshift(0xdead_beef_cafe_f00du64);
        let (mut agreed, mut declined) = (0, 0);
        for round in 0..20_000 {
            let mut text: Vec<char> = seeds[round % seeds.len()].chars().collect();
            for _ in 0..=next() % 3 {
                let at = (next() as usize) % (text.len() + 1);
                let c = alphabet[(next() as usize) % alphabet.len()];
                match next() % 3 {
                    0 if at < text.len() => text[at] = c,
                    1 if at < text.len() => {
                        text.remove(at);
                    }
                    _ => text.insert(at, c),
                }
            }
            let text: String = text.into_iter().collect();
            match (read(&text), serde_json::from_str::<Value>(&text)) {
                (Some((ours, _)), Ok(theirs)) => {
                    assert_eq!(ours, theirs, "{text}");
                    agreed += 1;
                }
                (Some(_), Err(e)) => panic!("read {text:?}, which serde_json refuses: {e}"),
                (None, _) => declined += 1,
            }
        }
        assert!(
            agreed > 1_000 && declined > 1_000,
            "{agreed} read, {declined} declined"
        );
    }

    #[test]
    fn floats_exact_to_compute_are_computed_here() {
        for (text, expected) in [
            ("0.125", Some(0.125)),
            ("-2.5e3", Some(-2500.0)),
            ("12.34E-2", Some(0.1234)),
            ("-0.0", Some(-0.0)),
            ("1234567890123.45e-20", Some(1234567890123.45e-20)),
            ("1234567890123456.0", None),
            ("-6E50", None),
            ("1e23", None),
            ("1e-23", None),
            ("1e0001", None),
        ] {
            let found = exact_float(text.as_bytes());
            assert_eq!(
                found.map(f64::to_bits),
                expected.map(f64::to_bits),
                "{text}"
            );
        }
    }

    #[test]
    fn it_declines_what_serde_json_must_decide() {
        let deep = format!(
            "{}1{}",
            "[".repeat(MAX_DEPTH + 1),
            "]".repeat(MAX_DEPTH + 1)
        );
        let within = format!("{}1{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(read(&within).is_some(), "nesting within the bound is read");
        for text in [
            "-0",
            "18446744073709551616",
            "-9223372036854775809",
            "1e400",
            "\"\\ud800\"",
            "\"\\udc00\"",
            "\"\\ud800\\u0041\"",
            "\"tab\tinside\"",
            "{\"a\":",
            "[1,]",
            "{} x",
            "01",
            "1.",
            ".5",
            "+1",
            "tru",
            "{\"a\" 1}",
            deep.as_str(),
        ] {
            assert!(read(text).is_none(), "read {text:?}");
        }
    }

    #[test]
    fn a_plain_run_ends_at_the_first_quote_backslash_or_control_character() {
        let naive = |bytes: &[u8], at: usize| {
            (at..bytes.len())
                .find(|&i| matches!(bytes[i], b'"' | b'\\' | 0..=0x1f))
                .unwrap_or(bytes.len())
        };
        let alphabet = [
            b'a', b'"', b'\\', 0x1f, 0x20, 0x00, 0x7f, 0x80, 0xff, b'!', b'#', b'[',
        ];
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let seed = next();
            let len = (seed % 40) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|i| {
                    let pick = (seed >> (i % 50)) as usize ^ i.wrapping_mul(31);
                    // Mostly plain bytes, so that runs are long enough to cross words.
                    if pick.is_multiple_of(7) {
                        alphabet[pick % alphabet.len()]
                    } else {
                        b'a' + (pick % 26) as u8
                    }
                })
                .collect();
            for at in 0..=len {
                assert_eq!(
                    plain_run_end(&bytes, at),
                    naive(&bytes, at),
                    "{bytes:?} from {at}"
                );
            }
        }
    }
}

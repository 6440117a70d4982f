//! The console's markup: one escaping helper ([`E`]) through which every string from the
//! store, a schema or a request passes, plus the few drawing helpers pages share (syntax
//! highlighting, bar charts as inline SVG). Markup is built with `format!`: the pages are
//! small, and a template engine would add a compile step without adding safety that [`E`]
//! does not already give.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use std::fmt::{self, Display, Write};

/// Text escaped for HTML element content and double- or single-quoted attribute values.
pub struct E<'a>(pub &'a str);

impl Display for E<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut start = 0;
        for (i, c) in self.0.char_indices() {
            let replacement = match c {
                '&' => "&amp;",
                '<' => "&lt;",
                '>' => "&gt;",
                '"' => "&quot;",
                '\'' => "&#39;",
                _ => continue,
            };
            f.write_str(&self.0[start..i])?;
            f.write_str(replacement)?;
            start = i + c.len_utf8();
        }
        f.write_str(&self.0[start..])
    }
}

/// Escapes `text` into a new string.
pub fn esc(text: &str) -> String {
    E(text).to_string()
}

/// Characters kept as they are in a path segment or query value; everything else is
/// percent-encoded, so a subject name like `a/b?c` stays one segment.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.');

/// A path segment or query value, percent-encoded (and so also safe inside an attribute).
pub fn url(text: &str) -> String {
    utf8_percent_encode(text, SEGMENT).to_string()
}

/// A time in milliseconds since the epoch as `YYYY-MM-DD HH:MM UTC`.
pub fn time(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        (rem % 3600) / 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm; the
/// workspace has no date crate and a label needs nothing more).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// The class a token of schema text is drawn with.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Token {
    Plain,
    Str,
    Num,
    Key,
    Comment,
}

const PROTO_KEYWORDS: &[&str] = &[
    "syntax", "package", "import", "message", "enum", "oneof", "repeated", "optional", "required",
    "map", "reserved", "option", "service", "rpc", "returns", "true", "false",
];

/// One line of schema text with strings, numbers, keywords and comments in spans (classes
/// `s`, `n`, `k`, `c`); the colour is only a help, the text is unchanged.
pub fn highlight_line(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while !rest.is_empty() {
        let (token, len) = next_token(rest);
        let (piece, tail) = rest.split_at(len);
        match token {
            Token::Plain => write!(out, "{}", E(piece)),
            Token::Str => write!(out, "<span class=\"s\">{}</span>", E(piece)),
            Token::Num => write!(out, "<span class=\"n\">{}</span>", E(piece)),
            Token::Key => write!(out, "<span class=\"k\">{}</span>", E(piece)),
            Token::Comment => write!(out, "<span class=\"c\">{}</span>", E(piece)),
        }
        .ok();
        rest = tail;
    }
    out
}

/// The first token of `text` and its length in bytes (never zero).
fn next_token(text: &str) -> (Token, usize) {
    let first = text.chars().next().unwrap_or(' ');
    if text.starts_with("//") {
        return (Token::Comment, text.len());
    }
    if first == '"' {
        let mut escaped = false;
        for (i, c) in text.char_indices().skip(1) {
            match c {
                '\\' if !escaped => escaped = true,
                '"' if !escaped => return (Token::Str, i + 1),
                _ => escaped = false,
            }
        }
        return (Token::Str, text.len());
    }
    if first.is_ascii_digit()
        || (first == '-' && text[1..].starts_with(|c: char| c.is_ascii_digit()))
    {
        let len = 1 + text[1..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.'))
            .unwrap_or(text.len() - 1);
        return (Token::Num, len);
    }
    if first.is_alphabetic() || first == '_' {
        let len = text
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(text.len());
        let word = &text[..len];
        let token = if PROTO_KEYWORDS.contains(&word) {
            Token::Key
        } else {
            Token::Plain
        };
        return (token, len);
    }
    (Token::Plain, first.len_utf8())
}

/// One bar of a [`bar_chart`].
pub struct Bar {
    pub label: String,
    pub value: f64,
    /// What is written beside the bar (the value in words), so the chart reads without colour.
    pub caption: String,
}

/// Horizontal bars as inline SVG with each value written out; `max` is the full width.
pub fn bar_chart(title: &str, bars: &[Bar], max: f64) -> String {
    let row = 22;
    let height = row * bars.len().max(1) + 4;
    let mut svg = format!(
        "<svg class=\"chart\" role=\"img\" viewBox=\"0 0 600 {height}\" aria-label=\"{}\"><title>{}</title>",
        E(title),
        E(title)
    );
    for (i, bar) in bars.iter().enumerate() {
        let y = i * row + 2;
        let width = if max > 0.0 {
            (bar.value / max).clamp(0.0, 1.0) * 300.0
        } else {
            0.0
        };
        write!(
            svg,
            "<text x=\"0\" y=\"{}\" class=\"lbl\">{}</text><rect x=\"200\" y=\"{y}\" width=\"{width:.1}\" height=\"16\" class=\"bar\"/><text x=\"{:.1}\" y=\"{}\" class=\"val\">{}</text>",
            y + 13,
            E(&truncate(&bar.label, 30)),
            205.0 + width,
            y + 13,
            E(&bar.caption)
        )
        .ok();
    }
    svg.push_str("</svg>");
    svg
}

/// `text` cut to `max` characters with an ellipsis.
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Vertical bars over time (one per bucket) as inline SVG, each bar labelled with its
/// count and each axis label written out.
pub fn time_chart(title: &str, buckets: &[(String, u64)]) -> String {
    let max = buckets.iter().map(|(_, v)| *v).max().unwrap_or(0).max(1) as f64;
    let width = 40 * buckets.len().max(1);
    let mut svg = format!(
        "<svg class=\"chart\" role=\"img\" viewBox=\"0 0 {width} 160\" aria-label=\"{}\"><title>{}</title>",
        E(title),
        E(title)
    );
    for (i, (label, value)) in buckets.iter().enumerate() {
        let h = (*value as f64 / max) * 100.0;
        let x = i * 40 + 6;
        write!(
            svg,
            "<rect x=\"{x}\" y=\"{:.1}\" width=\"28\" height=\"{h:.1}\" class=\"bar\"/><text x=\"{}\" y=\"{:.1}\" class=\"val\" text-anchor=\"middle\">{value}</text><text x=\"{}\" y=\"155\" class=\"lbl\" text-anchor=\"middle\">{}</text>",
            130.0 - h,
            x + 14,
            125.0 - h,
            x + 14,
            E(label)
        )
        .ok();
    }
    svg.push_str("</svg>");
    svg
}

/// Shares (0 to 1) over time as a small line, the values also written in its label so the
/// trend reads without the drawing.
pub fn sparkline(title: &str, shares: &[f64]) -> String {
    let step = if shares.len() > 1 {
        100.0 / (shares.len() - 1) as f64
    } else {
        0.0
    };
    let points: Vec<String> = shares
        .iter()
        .enumerate()
        .map(|(i, v)| {
            format!(
                "{:.1},{:.1}",
                i as f64 * step,
                22.0 - v.clamp(0.0, 1.0) * 20.0
            )
        })
        .collect();
    let words: Vec<String> = shares
        .iter()
        .map(|v| format!("{:.0}%", v * 100.0))
        .collect();
    format!(
        "<svg class=\"spark\" role=\"img\" viewBox=\"-2 0 104 24\" aria-label=\"{}: {}\"><polyline class=\"line\" points=\"{}\"/></svg>",
        E(title),
        words.join(" → "),
        points.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_every_markup_character() {
        assert_eq!(
            esc(r#"<script>alert("x&y's")</script>"#),
            "&lt;script&gt;alert(&quot;x&amp;y&#39;s&quot;)&lt;/script&gt;"
        );
        assert_eq!(esc("plain é"), "plain é");
    }

    #[test]
    fn url_segments_keep_slashes_and_quotes_out() {
        assert_eq!(url("a/b?c d\"<"), "a%2Fb%3Fc%20d%22%3C");
        assert_eq!(url("orders-value.v1_x"), "orders-value.v1_x");
    }

    #[test]
    fn highlighting_escapes_and_classifies() {
        let line = highlight_line(r#"  "doc": "<img src=x onerror=alert(1)>", "size": 12"#);
        assert!(line.contains("&lt;img"), "{line}");
        assert!(!line.contains("<img"), "{line}");
        assert!(line.contains("<span class=\"n\">12</span>"), "{line}");
        let proto = highlight_line("message Order { // <b>");
        assert!(
            proto.starts_with("<span class=\"k\">message</span>"),
            "{proto}"
        );
        assert!(
            proto.contains("<span class=\"c\">// &lt;b&gt;</span>"),
            "{proto}"
        );
    }

    #[test]
    fn sparklines_say_their_values() {
        let s = sparkline("/a<b>", &[0.8, 0.4]);
        assert!(s.contains("aria-label=\"/a&lt;b&gt;: 80% → 40%\""), "{s}");
        assert!(s.contains("points=\"0.0,6.0 100.0,14.0\""), "{s}");
        assert!(sparkline("x", &[0.5]).contains("points=\"0.0,12.0\""));
    }

    #[test]
    fn times_are_written_in_utc() {
        assert_eq!(time(0), "1970-01-01 00:00 UTC");
        assert_eq!(
            time(1_767_225_600_000 + 3_600_000 * 5 + 60_000 * 7),
            "2026-01-01 05:07 UTC"
        );
    }

    #[test]
    fn charts_escape_labels_and_write_values() {
        let svg = bar_chart(
            "p",
            &[Bar {
                label: "<x>".into(),
                value: 0.5,
                caption: "50%".into(),
            }],
            1.0,
        );
        assert!(svg.contains("&lt;x&gt;") && svg.contains("50%"), "{svg}");
        let t = time_chart("reads", &[("d1".into(), 3), ("d2".into(), 0)]);
        assert!(t.contains(">3</text>") && t.contains(">d2</text>"), "{t}");
    }
}

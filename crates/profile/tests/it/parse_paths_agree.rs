//! JSON text is read into a tape by the crate's own reader, without a `serde_json::Value`;
//! records decoded by other crates come as a `Value`, laid out on a tape. Both must give exactly
//! the same profile (the reader reads as `serde_json` does, a `Value` is laid out as its text is
//! read): these tests profile the same lines both ways, on generated records and on hostile
//! ones.

use covenant_profile::{Profile, ProfileOptions, Profiler, source};
use serde_json::Value;

/// The profile of `lines` parsed into `Value`s one by one, as records decoded by a format's
/// crate are profiled.
fn through_values(lines: &[String], options: &ProfileOptions) -> Profile {
    let mut profiler = Profiler::new(options.clone());
    for line in lines {
        let value: Value = serde_json::from_str(line).expect("valid JSON");
        profiler.observe(&value);
    }
    profiler.finish()
}

/// The profile of `lines` as a JSON Lines file and as a JSON array, read by the sources.
fn through_sources(lines: &[String], options: &ProfileOptions) -> [Profile; 2] {
    let jsonl = lines.join("\n") + "\n";
    let array = format!("[{}]", lines.join(",\n"));
    [jsonl, array].map(|text| {
        let mut profiler = Profiler::new(options.clone());
        source::read_records("input", text.as_bytes(), &mut |r| {
            profiler.observe_record(r)
        })
        .expect("readable");
        profiler.finish()
    })
}

fn assert_agree(lines: &[String], options: &ProfileOptions) {
    let expected = through_values(lines, options);
    for (layout, actual) in ["lines", "array"]
        .iter()
        .zip(through_sources(lines, options))
    {
        if actual != expected {
            let show = |p: &Profile| serde_json::to_string_pretty(p).expect("serialize");
            panic!(
                "{layout} ({options:?}):\nexpected {}\nactual {}",
                show(&expected),
                show(&actual)
            );
        }
    }
}

fn option_sets() -> Vec<ProfileOptions> {
    let hatch = |group: Option<&str>, max_paths| ProfileOptions {
        group_by: group.map(str::to_string),
        escape_hatches: vec!["vendor_data".into(), "extra".into()],
        max_paths,
    };
    vec![
        ProfileOptions::default(),
        hatch(Some("exchange"), 100_000),
        hatch(Some("/meta/source"), 100_000),
        hatch(Some("/tags/1"), 100_000),
        // Bounds reached in the middle of records: the same paths must be kept.
        hatch(Some("exchange"), 7),
        hatch(None, 20),
    ]
}

/// Instrument-like records as the benchmark writes them, with a pseudo-random generator.
fn generated(count: u64) -> Vec<String> {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    (0..count)
        .map(|i| {
            let exchange = ["binance", "kraken", "coinbase", "okx"][(i % 4) as usize];
            let roll = next() % 100;
            let mut vendor = serde_json::Map::new();
            if roll < 80 {
                vendor.insert("marginTradingAllowed".into(), (roll % 2 == 0).into());
            }
            vendor.insert("listingRank".into(), (next() % 5000).into());
            let limits: Vec<Value> = (0..next() % 4)
                .map(|t| serde_json::json!({"tier": t, "notionalValue": (next() % 100_000) as f64 / 100.0}))
                .collect();
            let source = ["rest", "ws"][(next() % 2) as usize];
            let vendor = if roll % 3 == 0 {
                Value::Object(vendor)
            } else {
                Value::Object(vendor).to_string().into()
            };
            let record = serde_json::json!({
                "symbol": format!("{}-{i}", exchange.to_uppercase()),
                "exchange": exchange,
                "meta": {"source": source},
                "tags": ["a", exchange],
                "tickSize": (next() % 100) as f64 / 1000.0,
                "maxLeverage": next() % 125,
                "legacyFeeTier": if roll < 3 { Value::from("VIP1") } else { Value::Null },
                "riskLimits": limits,
                "vendor_data": vendor,
            });
            record.to_string()
        })
        .collect()
}

/// Records that probe the parser's corners.
fn hostile() -> Vec<String> {
    let deep_arrays = format!("{}1{}", "[".repeat(120), "]".repeat(120));
    let deep_objects = format!("{}1{}", "{\"a\":".repeat(120), "}".repeat(120));
    let huge_array = format!(
        "{{\"exchange\":\"okx\",\"big\":[{}]}}",
        (0..50_000)
            .map(|i| match i % 5 {
                0 => format!("{i}"),
                1 => format!("\"s{}\"", i % 97),
                2 => format!("{}.5", i),
                3 => "null".to_string(),
                _ => format!("{{\"k{}\":{i}}}", i % 3),
            })
            .collect::<Vec<_>>()
            .join(",")
    );
    let long_string = format!(
        "{{\"long\":\"{}\",\"long\":\"{}\"}}",
        "x".repeat(300),
        "é".repeat(150)
    );
    let mut lines: Vec<String> = [
        // Duplicate keys: the last value wins, in the first one's place.
        r#"{"exchange":"binance","a":1,"b":{"x":1,"x":[1,2]},"a":{"deep":true}}"#,
        r#"{"exchange":"kraken","exchange":"okx","tags":["x","y"],"tags":[]}"#,
        r#"{"vendor_data":"{\"k\":1,\"k\":{\"z\":null}}","exchange":null}"#,
        r#"{"vendor_data":{"k":1,"k":"two"},"extra":"{\"q\":[1,{\"q\":2}]}"}"#,
        // Unicode escapes, escaped slashes and tildes in keys, empty keys.
        r#"{"caf\u00e9":"\ud83d\ude00\u0000","a\/b":1,"a/b":2,"~0":3,"":{"":""},"\u0041":"\"quoted\""}"#,
        r#"{"exchange":"\u006b\u0072\u0061\u006b\u0065\u006e","meta":{"source":"\u00e9"}}"#,
        // Numbers at and beyond the edges of u64, i64 and f64.
        r#"{"n":18446744073709551615,"m":18446744073709551616,"o":-9223372036854775808,"p":-9223372036854775809}"#,
        r#"{"n":0,"m":-0,"o":-0.0,"p":1e308,"q":1.7976931348623157e308,"r":5e-324,"s":1e-400,"t":0.1,"u":1E2}"#,
        r#"{"n":123456789012345678901234567890,"m":-123456789012345678901234567890.5e-3}"#,
        // Group values of every type, and pointers into arrays.
        r#"{"exchange":7,"meta":{"source":[1,{"b":2}]},"tags":["a","01"]}"#,
        r#"{"exchange":{"name":"kraken","n":[1.0,true]},"meta":null,"tags":["a",null]}"#,
        r#"{"exchange":true,"meta":{"source":{}},"tags":{"1":"object, not array"}}"#,
        r#"{"exchange":1.0,"meta":["source"]}"#,
        // Escape hatches that hold no object, or hold one directly.
        r#"{"vendor_data":"not json","extra":"[1,2]"}"#,
        r#"{"vendor_data":"{\"open\":","extra":"{} trailing"}"#,
        r#"{"vendor_data":" {\"spaced\": 1} ","extra":"\"string\""}"#,
        r#"{"vendor_data":{"direct":{"nested":[1]}},"extra":null}"#,
        r#"{"vendor_data":[{"in":"array"}],"extra":7}"#,
        // Not objects at all.
        r#"[1,{"a":2},[3]]"#,
        r#""a string record""#,
        "null",
        "42",
        r#"{}"#,
        r#"{"empty":[],"also":{},"arr":[[],[[]],{}]}"#,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    lines.extend([deep_arrays, deep_objects, huge_array, long_string]);
    lines
}

#[test]
fn generated_records_give_the_same_profile() {
    let lines = generated(2_000);
    for options in option_sets() {
        assert_agree(&lines, &options);
    }
}

#[test]
fn hostile_records_give_the_same_profile() {
    let mut lines = hostile();
    for options in option_sets() {
        assert_agree(&lines, &options);
    }
    // And mixed in among ordinary ones, in another order.
    lines.reverse();
    lines.extend(generated(50));
    for options in option_sets() {
        assert_agree(&lines, &options);
    }
}

#[test]
fn errors_name_the_line_and_match_the_parser() {
    for (text, line) in [
        ("{\"a\":1}\n\n{\"a\":\n", 3),
        ("{\"a\":1}\r\n{\"a\":1e400}\r\n", 2),
        ("{\"a\":\"\\ud800\"}\n", 1),
        ("{\"a\":1} {\"b\":2}\n", 1),
        ("{\"a\":\"\u{1}\"}\n", 1),
        ("{\"a\":1}\n\u{a0}\n{\"a\":\"\u{ff}\u{fe}\"}\n[1,", 4),
    ] {
        let error = source::read_records("input", text.as_bytes(), &mut |_| {})
            .expect_err(text)
            .to_string();
        let bad = text.split('\n').nth(line - 1).expect("line");
        let parser = serde_json::from_str::<Value>(bad.trim_end_matches('\r'))
            .expect_err(bad)
            .to_string();
        assert_eq!(error, format!("input: line {line}: invalid JSON: {parser}"));
    }
    let mut invalid_utf8 = b"{\"a\":1}\n{\"a\":\"".to_vec();
    invalid_utf8.extend([0xff, b'"', b'}', b'\n']);
    let error = source::read_records("input", &invalid_utf8[..], &mut |_| {}).expect_err("utf-8");
    assert!(
        error.to_string().starts_with("input: line 2: not UTF-8"),
        "{error}"
    );
}

#[test]
fn whitespace_lines_are_skipped_as_before() {
    let text = "\u{a0}\u{3000}\n\x0b\x0c\t \r\n{\"a\":1}\n\u{2028}\n";
    let mut records = 0;
    source::read_records("input", text.as_bytes(), &mut |_| records += 1).expect("readable");
    assert_eq!(records, 1);
}

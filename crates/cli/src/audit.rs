//! `covenant audit`: reads the audit trail of a running registry (`GET /covenant/v1/audit`),
//! following its pages, as one line per entry or as JSON.
//!
//! A line shows every text as escaped control characters (`\n`, `\u{1b}`, ...), whatever the
//! server stored, so no entry can print a line of its own or drive the terminal. A refusal
//! repeated within a minute is one entry: its line ends with how many times and the last time.

use crate::governance::{Api, Server, segment};
use serde_json::Value;
use std::process::ExitCode;

/// The page size asked of the server.
const PAGE: usize = 500;

#[derive(clap::Args)]
pub struct AuditArgs {
    #[command(flatten)]
    server: Server,
    /// Only entries by this principal (as recorded: a name, or `anonymous (<user agent>)`).
    #[arg(long)]
    principal: Option<String>,
    #[arg(long)]
    subject: Option<String>,
    /// Only this operation (`register`, `delete.soft`, `config.set`, `consumer.create`, ...).
    #[arg(long)]
    operation: Option<String>,
    /// Only this outcome (`ok` or `denied`).
    #[arg(long)]
    outcome: Option<String>,
    /// From this time on (milliseconds or RFC 3339).
    #[arg(long)]
    since: Option<String>,
    /// Before this time (milliseconds or RFC 3339).
    #[arg(long)]
    until: Option<String>,
    /// At most this many entries (default: all).
    #[arg(long)]
    limit: Option<usize>,
    /// Print the entries as a JSON array.
    #[arg(long)]
    json: bool,
}

fn filters(args: &AuditArgs) -> Vec<String> {
    [
        ("principal", &args.principal),
        ("subject", &args.subject),
        ("operation", &args.operation),
        ("outcome", &args.outcome),
        ("since", &args.since),
        ("until", &args.until),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={}", segment(v))))
    .collect()
}

/// A field of `entry` as printed: strings with their control characters escaped.
fn text(entry: &Value, key: &str) -> String {
    match entry.get(key) {
        Some(Value::String(s)) => covenant_store::audit::escape_controls(s).into_owned(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

fn time(entry: &Value, key: &str) -> String {
    entry
        .get(key)
        .and_then(Value::as_i64)
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

/// `subject` `vN` `id N` `config`, whichever the entry names.
fn target(entry: &Value) -> String {
    let mut parts = Vec::new();
    for (key, prefix) in [
        ("subject", ""),
        ("version", "v"),
        ("schema_id", "id "),
        ("config_key", ""),
        ("detail", ""),
    ] {
        let t = text(entry, key);
        if !t.is_empty() {
            parts.push(format!("{prefix}{t}"));
        }
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(" ")
    }
}

/// One entry as a line: its (first) time, outcome, operation, target, principal, source and
/// request id, then `×N until <last time>` when it stands for repeated refusals.
fn line(entry: &Value) -> String {
    let at = time(entry, "at");
    let repeats = match entry.get("count").and_then(Value::as_i64) {
        Some(n) if n > 1 => format!("  ×{n} until {}", time(entry, "last_at")),
        _ => String::new(),
    };
    format!(
        "{at}  {:<7} {:<22} {}  by {} from {}  [{}]{repeats}",
        text(entry, "outcome"),
        text(entry, "operation"),
        target(entry),
        text(entry, "principal"),
        Some(text(entry, "source"))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "-".into()),
        text(entry, "request_id"),
    )
}

pub fn run(args: AuditArgs) -> anyhow::Result<ExitCode> {
    let api = Api::new(&args.server)?;
    let query = filters(&args);
    let mut entries: Vec<Value> = Vec::new();
    let mut after = 0;
    loop {
        let wanted = args.limit.map_or(PAGE, |l| (l - entries.len()).min(PAGE));
        if wanted == 0 {
            break;
        }
        let mut params = query.clone();
        params.push(format!("after={after}"));
        params.push(format!("limit={wanted}"));
        let path = format!("/covenant/v1/audit?{}", params.join("&"));
        let page = match api.call("GET", &path, None)? {
            Ok(page) => page,
            Err(code) => return Ok(code),
        };
        if let Some(list) = page.get("entries").and_then(Value::as_array) {
            entries.extend(list.iter().cloned());
        }
        match page.get("next").and_then(Value::as_i64) {
            Some(next) => after = next,
            None => break,
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&entries).unwrap_or_default()
        );
    } else {
        for e in &entries {
            println!("{}", line(e));
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_line_names_time_outcome_operation_target_principal_and_request() {
        let entry = json!({"seq": 3, "at": 0, "principal": "alice", "source": "10.0.0.1:9",
            "operation": "register", "subject": "orders", "version": 2, "schema_id": 7,
            "outcome": "ok", "request_id": "abc"});
        assert_eq!(
            line(&entry),
            "1970-01-01T00:00:00.000Z  ok      register               orders v2 id 7  by alice from 10.0.0.1:9  [abc]"
        );
        assert_eq!(
            target(&json!({"config_key": "mode", "detail": "READONLY"})),
            "mode READONLY"
        );
    }

    #[test]
    fn a_repeated_refusal_shows_its_count_and_last_time() {
        let entry = json!({"seq": 4, "at": 0, "principal": "anonymous", "source": "10.0.0.1",
            "operation": "Read", "subject": "orders", "outcome": "denied", "count": 5000,
            "last_at": 61_000, "detail": "AuthenticationRequired: GET /subjects/{subject}/versions"});
        assert!(
            line(&entry).ends_with("  ×5000 until 1970-01-01T00:01:01.000Z"),
            "{}",
            line(&entry)
        );
        assert!(!line(&json!({"at": 0, "count": 1})).contains('×'));
    }

    #[test]
    fn stored_control_characters_cannot_forge_a_line_or_reach_the_terminal() {
        // As an older server stored it: raw.
        let entry = json!({"at": 0, "principal": "anonymous", "operation": "Read",
            "outcome": "denied",
            "subject": "x\n1970-01-01T00:00:00.000Z  ok      register               orders v9  by admin from -  []\u{1b}[2K\u{9b}31m\u{2028}",
            "request_id": "r\r1"});
        let printed = line(&entry);
        assert_eq!(printed.lines().count(), 1, "{printed}");
        assert!(
            !printed.chars().any(covenant_store::audit::is_unsafe_char),
            "{printed:?}"
        );
        assert!(
            printed.contains("x\\n1970") && printed.contains("\\u{1b}[2K"),
            "{printed}"
        );
    }
}

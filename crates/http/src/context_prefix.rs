//! Confluent's context URL prefix: `/contexts/{context}/...` is the same request with the
//! context folded into the subject, rewritten before routing (as Confluent's `ContextFilter`
//! does), so every route, its authorization and its audit see one qualified subject.
//!
//! - `/contexts/.c/subjects/s/...` → `/subjects/:.c:s/...` (also under `/compatibility`)
//! - `/contexts/.c/config` → `/config/:.c:`, `/contexts/.c/config/s` → `/config/:.c:s` (mode alike)
//! - `/contexts/.c/schemas/ids/1` → `/schemas/ids/1?subject=:.c:`
//! - `/contexts/.c/subjects` and `/contexts/.c/schemas` → `subjectPrefix` prefixed with `:.c:`
//!
//! A subject that already names a context is left as it is; an invalid context is left to
//! answer 404.

use axum::extract::Request;
use covenant_store::context;
use percent_encoding::percent_decode_str;

pub(crate) fn rewrite(mut req: Request) -> Request {
    let Some(rest) = req.uri().path().strip_prefix("/contexts/") else {
        return req;
    };
    let (raw_context, tail) = rest.split_once('/').unwrap_or((rest, ""));
    if tail.is_empty() {
        return req;
    }
    let decoded = percent_decode_str(raw_context).decode_utf8_lossy();
    let Some(ctx) = context::normalize_context(&decoded) else {
        return req;
    };
    let query = req.uri().query().map(str::to_string);
    let Some((path, query)) = rewritten(&ctx, tail, query.as_deref()) else {
        return req;
    };
    let uri = match query {
        Some(q) if !q.is_empty() => format!("{path}?{q}"),
        _ => path,
    };
    if let Ok(uri) = uri.parse() {
        *req.uri_mut() = uri;
    }
    req
}

/// `ctx`'s subject prefix as a path or query value: `:.c:`, empty for the default context.
fn prefix(ctx: &str) -> String {
    if ctx == context::DEFAULT_CONTEXT {
        String::new()
    } else {
        context::context_key(ctx)
    }
}

/// A raw subject segment qualified with `ctx` unless it already names a context.
fn qualified(ctx: &str, raw: &str) -> String {
    let decoded = percent_decode_str(raw).decode_utf8_lossy();
    if decoded.starts_with(":.") || decoded.starts_with(":*:") {
        raw.to_string()
    } else {
        format!("{}{raw}", prefix(ctx))
    }
}

fn rewritten(ctx: &str, tail: &str, query: Option<&str>) -> Option<(String, Option<String>)> {
    let segments: Vec<&str> = tail.split('/').collect();
    let query = query.map(str::to_string);
    Some(match segments.as_slice() {
        ["subjects"] => (
            "/subjects".into(),
            Some(with_prefix_param(ctx, query, "subjectPrefix")),
        ),
        ["schemas"] => (
            "/schemas".into(),
            Some(with_prefix_param(ctx, query, "subjectPrefix")),
        ),
        ["subjects", subject, more @ ..] => {
            (join("/subjects", &qualified(ctx, subject), more), query)
        }
        ["compatibility", "subjects", subject, more @ ..] => (
            join("/compatibility/subjects", &qualified(ctx, subject), more),
            query,
        ),
        [kind @ ("config" | "mode")] => (format!("/{kind}/{}", context_scope(ctx)), query),
        [kind @ ("config" | "mode"), subject] => {
            (format!("/{kind}/{}", qualified(ctx, subject)), query)
        }
        ["schemas", "ids", more @ ..] => (
            join("/schemas/ids", more.first()?, &more[1..]),
            Some(with_subject_param(ctx, query)),
        ),
        _ => return None,
    })
}

/// The config or mode key of the whole context (`:.:` is the default context's, which the
/// registry reads as the global scope).
fn context_scope(ctx: &str) -> String {
    context::context_key(ctx)
}

fn join(base: &str, subject: &str, more: &[&str]) -> String {
    let mut path = format!("{base}/{subject}");
    for segment in more {
        path.push('/');
        path.push_str(segment);
    }
    path
}

/// The query with `name` (a subject prefix) qualified with `ctx`, added when absent.
fn with_prefix_param(ctx: &str, query: Option<String>, name: &str) -> String {
    let mut found = false;
    let mut pairs: Vec<String> = query
        .as_deref()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) if key == name => {
                found = true;
                format!("{key}={}", qualified(ctx, value))
            }
            _ => pair.to_string(),
        })
        .collect();
    if !found {
        pairs.push(format!("{name}={}", prefix(ctx)));
    }
    pairs.join("&")
}

/// The query with `subject` naming `ctx` (qualified when given, the bare context otherwise).
fn with_subject_param(ctx: &str, query: Option<String>) -> String {
    with_prefix_param(ctx, query, "subject")
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some(("subject", "")) => format!("subject={}", context::context_key(ctx)),
            _ => pair.to_string(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path_of(uri: &str) -> String {
        let req = Request::builder().uri(uri).body(axum::body::Body::empty());
        rewrite(req.expect("request")).uri().to_string()
    }

    #[test]
    fn the_context_folds_into_the_subject() {
        assert_eq!(
            path_of("/contexts/.c/subjects/s/versions"),
            "/subjects/:.c:s/versions"
        );
        assert_eq!(
            path_of("/contexts/c/subjects/s/versions/1/schema"),
            "/subjects/:.c:s/versions/1/schema"
        );
        assert_eq!(
            path_of("/contexts/.c/subjects/:.d:s/versions"),
            "/subjects/:.d:s/versions"
        );
        assert_eq!(
            path_of("/contexts/.c/compatibility/subjects/s/versions/latest"),
            "/compatibility/subjects/:.c:s/versions/latest"
        );
        assert_eq!(path_of("/contexts/.c/config"), "/config/:.c:");
        assert_eq!(path_of("/contexts/.c/mode/s"), "/mode/:.c:s");
        assert_eq!(
            path_of("/contexts/./subjects/s/versions"),
            "/subjects/s/versions"
        );
    }

    #[test]
    fn ids_and_listings_carry_the_context_in_their_query() {
        assert_eq!(
            path_of("/contexts/.c/schemas/ids/1"),
            "/schemas/ids/1?subject=:.c:"
        );
        assert_eq!(
            path_of("/contexts/.c/schemas/ids/1/versions?subject=s"),
            "/schemas/ids/1/versions?subject=:.c:s"
        );
        assert_eq!(
            path_of("/contexts/.c/subjects"),
            "/subjects?subjectPrefix=:.c:"
        );
        assert_eq!(
            path_of("/contexts/.c/subjects?subjectPrefix=or&deleted=true"),
            "/subjects?subjectPrefix=:.c:or&deleted=true"
        );
    }

    #[test]
    fn other_paths_are_left_alone() {
        assert_eq!(path_of("/contexts"), "/contexts");
        assert_eq!(path_of("/contexts/.c"), "/contexts/.c");
        assert_eq!(path_of("/contexts/a:b/subjects"), "/contexts/a:b/subjects");
        assert_eq!(path_of("/contexts/.c/unknown"), "/contexts/.c/unknown");
    }
}

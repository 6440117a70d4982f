//! Content negotiation of the API's answers, as Confluent's resources declare it: three JSON
//! media types with server qualities (`vnd.schemaregistry.v1+json` 1, `vnd.schemaregistry+json`
//! 0.9, `json` 0.5). The `Accept` header picks one by its own q-weights first, the server's
//! qualities breaking ties; no `Accept`, or only wildcards, answer v1+json. A request accepting
//! none of them is answered 406 before it reaches its handler. Every JSON answer, errors
//! included, then carries the chosen type.

use crate::error::{ApiError, CONTENT_TYPE};
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The types answers may carry, with the server's quality of each, best first.
const PRODUCED: &[(&str, f32)] = &[
    (CONTENT_TYPE, 1.0),
    ("application/vnd.schemaregistry+json", 0.9),
    ("application/json", 0.5),
];

/// Paths outside negotiation: Prometheus text, the API description and the health probes.
fn exempt(path: &str) -> bool {
    matches!(path, "/metrics" | "/openapi.json") || path.starts_with("/health/")
}

/// One media range of an `Accept` header.
struct Range {
    kind: String,
    subtype: String,
    q: f32,
}

impl Range {
    /// How specifically this range names `media` (3 exact, 2 `type/*`, 1 `*/*`), if at all.
    fn matches(&self, media: &str) -> Option<u8> {
        let (kind, subtype) = media.split_once('/')?;
        match (self.kind.as_str(), self.subtype.as_str()) {
            ("*", "*") => Some(1),
            (k, "*") if k == kind => Some(2),
            (k, s) if k == kind && s == subtype => Some(3),
            _ => None,
        }
    }
}

fn ranges(accept: &str) -> Vec<Range> {
    accept
        .split(',')
        .filter_map(|entry| {
            let mut parts = entry.split(';');
            let media = parts.next()?.trim().to_ascii_lowercase();
            if media.is_empty() {
                return None;
            }
            // A lone `*` is read as `*/*`, as servlet containers do.
            let (kind, subtype) = match media.split_once('/') {
                Some((k, s)) => (k.trim().to_string(), s.trim().to_string()),
                None if media == "*" => ("*".to_string(), "*".to_string()),
                None => return None,
            };
            let mut q = 1.0;
            for param in parts {
                if let Some((name, value)) = param.split_once('=')
                    && name.trim().eq_ignore_ascii_case("q")
                {
                    q = value.trim().parse::<f32>().unwrap_or(0.0).clamp(0.0, 1.0);
                }
            }
            Some(Range { kind, subtype, q })
        })
        .collect()
}

/// The type to answer with for an `Accept` header, or `None` when none is acceptable.
pub fn choose(accept: Option<&str>) -> Option<&'static str> {
    let accept = match accept.map(str::trim) {
        None | Some("") => return Some(CONTENT_TYPE),
        Some(a) => a,
    };
    let ranges = ranges(accept);
    if ranges.is_empty() {
        return Some(CONTENT_TYPE);
    }
    let mut best: Option<(&'static str, f32, f32)> = None;
    for (media, qs) in PRODUCED {
        // The most specific range naming the type decides its weight.
        let Some(q) = ranges
            .iter()
            .filter_map(|r| r.matches(media).map(|s| (s, r.q)))
            .max_by_key(|(s, _)| *s)
            .map(|(_, q)| q)
        else {
            continue;
        };
        if q <= 0.0 {
            continue;
        }
        let better = match best {
            None => true,
            Some((_, bq, bqs)) => q > bq || (q == bq && *qs > bqs),
        };
        if better {
            best = Some((media, q, *qs));
        }
    }
    best.map(|(media, _, _)| media)
}

/// Negotiates the answer's type from `Accept`; see the module documentation.
pub async fn accept(req: Request, next: Next) -> Response {
    if exempt(req.uri().path()) {
        return next.run(req).await;
    }
    let accept = req
        .headers()
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    let chosen = choose((!accept.is_empty()).then_some(accept.as_str()));
    let Some(chosen) = chosen else {
        return ApiError::not_acceptable().into_response();
    };
    let mut response = next.run(req).await;
    if chosen != CONTENT_TYPE {
        let headers = response.headers_mut();
        let is_default = headers
            .get(header::CONTENT_TYPE)
            .is_some_and(|ct| ct.as_bytes().eq_ignore_ascii_case(CONTENT_TYPE.as_bytes()));
        if is_default {
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(chosen));
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_and_wildcards_answer_v1() {
        for accept in [
            None,
            Some(""),
            Some("*/*"),
            Some("*"),
            Some("application/*"),
        ] {
            assert_eq!(choose(accept), Some(CONTENT_TYPE), "{accept:?}");
        }
    }

    #[test]
    fn client_weights_come_first_then_the_servers() {
        assert_eq!(choose(Some("application/json")), Some("application/json"));
        assert_eq!(
            choose(Some(
                "application/json, application/vnd.schemaregistry+json"
            )),
            Some("application/vnd.schemaregistry+json")
        );
        assert_eq!(
            choose(Some(
                "application/vnd.schemaregistry.v1+json;q=0.4, application/json;q=0.8"
            )),
            Some("application/json")
        );
        assert_eq!(
            choose(Some("application/json;q=0, */*;q=0.1")),
            Some(CONTENT_TYPE)
        );
        assert_eq!(
            choose(Some("*/*;q=0.1, application/json")),
            Some("application/json")
        );
    }

    #[test]
    fn types_never_produced_are_not_acceptable() {
        for accept in [
            "application/vnd.schemaregistry.v2+json",
            "text/*",
            "text/plain",
            "application/octet-stream",
            "application/json;q=0",
        ] {
            assert_eq!(choose(Some(accept)), None, "{accept}");
        }
    }
}

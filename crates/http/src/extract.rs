//! Request parsing with Confluent's quirks: case-insensitive boolean query flags, JSON bodies
//! under any of the accepted media types, and every failure answered in Confluent's error
//! shape rather than axum's plain-text rejections.

use crate::error::ApiError;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{StatusCode, header, request::Parts};
use percent_encoding::percent_decode_str;
use serde::de::DeserializeOwned;

/// Query parameters; repeated keys keep every value in order.
#[derive(Debug, Clone, Default)]
pub struct Params(Vec<(String, String)>);

fn decode(part: &str) -> String {
    let spaced = part.replace('+', " ");
    percent_decode_str(&spaced).decode_utf8_lossy().into_owned()
}

impl Params {
    pub fn parse(query: &str) -> Params {
        Params(
            query
                .split('&')
                .filter(|p| !p.is_empty())
                .map(|pair| match pair.split_once('=') {
                    Some((k, v)) => (decode(k), decode(v)),
                    None => (decode(pair), String::new()),
                })
                .collect(),
        )
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn all(&self, key: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// JAX-RS `Boolean.valueOf`: case-insensitive `true`, anything else is false.
    pub fn flag(&self, key: &str) -> bool {
        self.get(key)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    }

    /// An integer parameter; unparseable values count as absent.
    pub fn int(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(|v| v.trim().parse().ok())
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Params {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Params::parse(parts.uri.query().unwrap_or("")))
    }
}

/// Media types a request body may be sent as.
const ACCEPTED: &[&str] = &[
    "application/vnd.schemaregistry.v1+json",
    "application/vnd.schemaregistry+json",
    "application/json",
    "application/octet-stream",
];

/// A JSON body with Confluent-shaped rejections (400 malformed, 413 too large, 415 media type).
pub struct ConfluentJson<T>(pub T);

/// The largest body accepted; set from `--max-body-bytes` into request extensions so the
/// rejection can name it.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimit(pub usize);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ConfluentJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if let Some(ct) = req.headers().get(header::CONTENT_TYPE) {
            let ct = ct.to_str().unwrap_or("").to_ascii_lowercase();
            let essence = ct.split(';').next().unwrap_or("").trim();
            if !essence.is_empty() && !ACCEPTED.contains(&essence) {
                return Err(ApiError::unsupported_media_type());
            }
        }
        let limit = req
            .extensions()
            .get::<BodyLimit>()
            .map(|l| l.0)
            .unwrap_or(usize::MAX);
        let bytes = match Bytes::from_request(req, state).await {
            Ok(b) => b,
            Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                return Err(ApiError::payload_too_large(limit));
            }
            Err(rejection) => return Err(ApiError::bad_request(rejection.body_text())),
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(ApiError::body_missing());
        }
        let text = utf8_json(&bytes)?;
        serde_json::from_slice(&text)
            .map(ConfluentJson)
            .map_err(|e| ApiError::bad_request(json_error_text(&e)))
    }
}

/// The encodings a JSON body may arrive in (RFC 8259 §8.1 and RFC 4627 §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Utf8,
    Utf16Be,
    Utf16Le,
    Utf32Be,
    Utf32Le,
}

/// The body's encoding and the length of its byte order mark: a BOM decides, else the
/// pattern of zero bytes in the first four (JSON text starts with an ASCII character). The
/// `Content-Type` charset is not consulted.
fn detect(bytes: &[u8]) -> Result<(Encoding, usize), ApiError> {
    let unsupported = || ApiError::bad_request("Unsupported UCS-4 byte order in JSON body");
    match bytes {
        [0x00, 0x00, 0xFE, 0xFF, ..] => Ok((Encoding::Utf32Be, 4)),
        [0xFF, 0xFE, 0x00, 0x00, ..] => Ok((Encoding::Utf32Le, 4)),
        [0x00, 0x00, 0xFF, 0xFE, ..] | [0xFE, 0xFF, 0x00, 0x00, ..] => Err(unsupported()),
        [0xEF, 0xBB, 0xBF, ..] => Ok((Encoding::Utf8, 3)),
        [0xFE, 0xFF, ..] => Ok((Encoding::Utf16Be, 2)),
        [0xFF, 0xFE, ..] => Ok((Encoding::Utf16Le, 2)),
        [0x00, 0x00, 0x00, b, ..] if *b != 0 => Ok((Encoding::Utf32Be, 0)),
        [a, 0x00, 0x00, 0x00, ..] if *a != 0 => Ok((Encoding::Utf32Le, 0)),
        [0x00, 0x00, b, 0x00, ..] | [0x00, b, 0x00, 0x00, ..] if *b != 0 => Err(unsupported()),
        [0x00, b, ..] if *b != 0 => Ok((Encoding::Utf16Be, 0)),
        [a, 0x00, ..] if *a != 0 => Ok((Encoding::Utf16Le, 0)),
        _ => Ok((Encoding::Utf8, 0)),
    }
}

/// The body as UTF-8 JSON text, decoded from UTF-16 or UTF-32 when it was sent so.
fn utf8_json(bytes: &[u8]) -> Result<std::borrow::Cow<'_, [u8]>, ApiError> {
    use std::borrow::Cow;
    let malformed = |what: &str| ApiError::bad_request(format!("Invalid {what} in JSON body"));
    let (encoding, bom) = detect(bytes)?;
    let body = &bytes[bom..];
    let text = match encoding {
        Encoding::Utf8 => return Ok(Cow::Borrowed(body)),
        Encoding::Utf16Be | Encoding::Utf16Le => {
            if !body.len().is_multiple_of(2) {
                return Err(malformed("UTF-16"));
            }
            let units = body.chunks_exact(2).map(|c| match encoding {
                Encoding::Utf16Be => u16::from_be_bytes([c[0], c[1]]),
                _ => u16::from_le_bytes([c[0], c[1]]),
            });
            char::decode_utf16(units)
                .collect::<Result<String, _>>()
                .map_err(|_| malformed("UTF-16"))?
        }
        Encoding::Utf32Be | Encoding::Utf32Le => {
            if !body.len().is_multiple_of(4) {
                return Err(malformed("UTF-32"));
            }
            body.chunks_exact(4)
                .map(|c| {
                    let unit = [c[0], c[1], c[2], c[3]];
                    let n = match encoding {
                        Encoding::Utf32Be => u32::from_be_bytes(unit),
                        _ => u32::from_le_bytes(unit),
                    };
                    char::from_u32(n).ok_or_else(|| malformed("UTF-32"))
                })
                .collect::<Result<String, _>>()?
        }
    };
    Ok(Cow::Owned(text.into_bytes()))
}

/// serde_json's message without the line/column suffix, as Confluent strips Jackson's location.
fn json_error_text(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// Path parameters with Confluent-shaped rejections (e.g. a segment that is not UTF-8).
pub struct SafePath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for SafePath<T> {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| SafePath(p.0))
            .map_err(|e| ApiError::bad_request(e.body_text()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_case_insensitive() {
        let p = Params::parse("normalize=False&deleted=TRUE&verbose=True&force=yes&x");
        assert!(!p.flag("normalize"));
        assert!(p.flag("deleted"));
        assert!(p.flag("verbose"));
        assert!(!p.flag("force"));
        assert!(!p.flag("absent"));
        assert_eq!(p.get("x"), Some(""));
    }

    fn encode(text: &str, encoding: Encoding, bom: bool) -> Vec<u8> {
        let mut out = Vec::new();
        let chars = bom.then_some('\u{FEFF}').into_iter().chain(text.chars());
        for c in chars {
            match encoding {
                Encoding::Utf8 => out.extend(c.to_string().as_bytes()),
                Encoding::Utf16Be | Encoding::Utf16Le => {
                    let mut buf = [0u16; 2];
                    for unit in c.encode_utf16(&mut buf) {
                        out.extend(match encoding {
                            Encoding::Utf16Be => unit.to_be_bytes(),
                            _ => unit.to_le_bytes(),
                        });
                    }
                }
                Encoding::Utf32Be => out.extend((c as u32).to_be_bytes()),
                Encoding::Utf32Le => out.extend((c as u32).to_le_bytes()),
            }
        }
        out
    }

    #[test]
    fn json_bodies_are_decoded_from_every_unicode_encoding() {
        let text = "{\"schema\":\"\\\"string\\\"\",\"doc\":\"caf\u{e9} \u{1F600}\"}";
        for encoding in [
            Encoding::Utf8,
            Encoding::Utf16Be,
            Encoding::Utf16Le,
            Encoding::Utf32Be,
            Encoding::Utf32Le,
        ] {
            for bom in [false, true] {
                let bytes = encode(text, encoding, bom);
                assert_eq!(
                    detect(&bytes).map(|d| d.0),
                    Ok(encoding),
                    "{encoding:?} {bom}"
                );
                let decoded = utf8_json(&bytes).expect("decodes");
                assert_eq!(
                    std::str::from_utf8(&decoded),
                    Ok(text),
                    "{encoding:?} {bom}"
                );
            }
        }
        assert!(detect(&[0x00, 0x00, 0xFF, 0xFE, 0, 0, 0, b'{']).is_err());
        assert!(utf8_json(&[b'{', 0x00, b'}']).is_err(), "odd UTF-16");
        assert!(
            utf8_json(&[0xFE, 0xFF, 0xD8, 0x00, 0x00, b'}']).is_err(),
            "lone surrogate"
        );
    }

    #[test]
    fn values_are_percent_decoded_and_repeatable() {
        let p = Params::parse("key=a%2Fb&key=c+d&value=1&limit=-1");
        assert_eq!(p.all("key"), vec!["a/b", "c d"]);
        assert_eq!(p.int("limit"), Some(-1));
        assert_eq!(p.int("value"), Some(1));
    }
}

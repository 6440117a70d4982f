//! Console sessions: a server-side table keyed by a random id carried in an `HttpOnly`,
//! `SameSite=Strict` cookie (`Secure` when served over TLS), each with its own CSRF token
//! that every state-changing form must echo. The table keeps principals, never
//! credentials; what a principal may do is decided afresh on every request from the current
//! auth file. A table rather than a signed token: signing out or restarting the server ends
//! a session at once, and no signing key has to be configured or kept.

use crate::principal::AuthMethod;
use hashlink::LruCache;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// The cookie's name.
pub const COOKIE: &str = "covenant_console";
/// How long a session lasts after sign-in, however active.
const LIFETIME: Duration = Duration::from_secs(8 * 3600);
/// Sessions kept at once; the least recently used is dropped beyond it, so requests without
/// a cookie cannot grow the table without bound.
const CAPACITY: usize = 10_000;

/// Who signed in to a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedIn {
    pub name: String,
    pub roles: Vec<String>,
    pub method: AuthMethod,
}

/// One session as the table holds it.
#[derive(Clone, Debug)]
pub struct Session {
    pub id: String,
    pub csrf: String,
    pub user: Option<SignedIn>,
    expires: Instant,
}

impl Session {
    /// Whether `token` is this session's CSRF token (compared in constant time).
    pub fn csrf_matches(&self, token: &str) -> bool {
        !token.is_empty() && bool::from(self.csrf.as_bytes().ct_eq(token.as_bytes()))
    }
}

/// Why a session could not be made.
#[derive(Debug, thiserror::Error)]
#[error("the system random number generator failed: {0}")]
pub struct RandomError(String);

/// 32 random bytes as hex.
fn random_token() -> Result<String, RandomError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| RandomError(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The session table.
pub struct Sessions {
    table: Mutex<LruCache<String, Session>>,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions {
            table: Mutex::new(LruCache::new(CAPACITY)),
        }
    }
}

impl Sessions {
    /// The live session named by `id`, if any.
    pub fn get(&self, id: &str) -> Option<Session> {
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        match table.get(id) {
            Some(s) if s.expires > Instant::now() => Some(s.clone()),
            Some(_) => {
                table.remove(id);
                None
            }
            None => None,
        }
    }

    /// A new session, anonymous or signed in, with a fresh id and CSRF token.
    pub fn create(&self, user: Option<SignedIn>) -> Result<Session, RandomError> {
        let session = Session {
            id: random_token()?,
            csrf: random_token()?,
            user,
            expires: Instant::now() + LIFETIME,
        };
        self.table
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(session.id.clone(), session.clone());
        Ok(session)
    }

    /// Ends a session (sign-out, or replacement by a signed-in one).
    pub fn remove(&self, id: &str) {
        self.table
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }
}

/// The session id in a `Cookie` header value, if it carries one.
pub fn cookie_value(header: &str) -> Option<&str> {
    header
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.trim())
}

/// The `Set-Cookie` value that carries `id`; `secure` when the server speaks TLS.
pub fn set_cookie(id: &str, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!(
        "{COOKIE}={id}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        LIFETIME.as_secs()
    )
}

/// The `Set-Cookie` value that removes the cookie.
pub fn clear_cookie(secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE}=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0{secure}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_random_and_removable() {
        let sessions = Sessions::default();
        let a = sessions.create(None).unwrap();
        let b = sessions.create(None).unwrap();
        assert_ne!(a.id, b.id);
        assert_ne!(a.csrf, b.csrf);
        assert_eq!(a.id.len(), 64);
        assert!(sessions.get(&a.id).is_some());
        sessions.remove(&a.id);
        assert!(sessions.get(&a.id).is_none());
        assert!(sessions.get("made-up").is_none());
    }

    #[test]
    fn csrf_tokens_must_match_exactly() {
        let s = Sessions::default().create(None).unwrap();
        assert!(s.csrf_matches(&s.csrf.clone()));
        assert!(!s.csrf_matches(""));
        assert!(!s.csrf_matches(&s.csrf[..63]));
        assert!(!s.csrf_matches(&format!("{}0", s.csrf)));
    }

    #[test]
    fn expired_sessions_are_gone() {
        let sessions = Sessions::default();
        let s = sessions.create(None).unwrap();
        sessions
            .table
            .lock()
            .unwrap()
            .get_mut(&s.id)
            .unwrap()
            .expires = Instant::now() - Duration::from_secs(1);
        assert!(sessions.get(&s.id).is_none());
    }

    #[test]
    fn cookies_are_http_only_strict_and_secure_under_tls() {
        assert_eq!(cookie_value("a=1; covenant_console=abc ; b=2"), Some("abc"));
        assert_eq!(cookie_value("covenant_consolex=abc"), None);
        let plain = set_cookie("abc", false);
        assert!(plain.contains("HttpOnly") && plain.contains("SameSite=Strict"));
        assert!(!plain.contains("Secure"));
        assert!(set_cookie("abc", true).ends_with("; Secure"));
        assert!(clear_cookie(false).contains("Max-Age=0"));
    }
}

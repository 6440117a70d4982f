//! Console sessions: a server-side table keyed by a random id carried in an `HttpOnly`,
//! `SameSite=Strict` cookie (`Secure` when served over TLS), each with its own CSRF token
//! that every state-changing form must echo. A table rather than a signed token: signing out
//! or restarting the server ends a session at once, and no signing key has to be configured
//! or kept.
//!
//! A signed-in session keeps its principal and what shows that the credential it was made
//! from still holds, never the credential itself: for a password, a digest of the user's
//! stored hash as it was at sign-in; for a bearer token, the token's `exp`. Every request
//! checks that proof against the current auth file and clock ([`SignedIn::current_roles`])
//! and decides what the principal may do afresh, so deleting the user, changing the password
//! or letting the token expire ends the session, and a revoked grant is gone on the next
//! request.
//!
//! Signed-in and anonymous sessions live in separate tables, each bounded. Anonymous
//! sessions (needed for the CSRF token of the sign-in form, and of every form when no
//! authentication is configured) are made for every request without a cookie, so that table
//! drops its least recently used entry when full. Signed-in sessions end by their own
//! lifetime; only when their table is full does the oldest one go, so no amount of anonymous
//! traffic can push one out.

use crate::auth::Auth;
use crate::principal::AuthMethod;
use base64::Engine;
use hashlink::{LinkedHashMap, LruCache};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};
use subtle::ConstantTimeEq;

/// The cookie's name.
pub const COOKIE: &str = "covenant_console";
/// How long a session lasts after sign-in, however active.
const LIFETIME: Duration = Duration::from_secs(8 * 3600);
/// Anonymous sessions kept at once; the least recently used is dropped beyond it, so
/// requests without a cookie cannot grow the table without bound.
const ANONYMOUS_CAPACITY: usize = 10_000;
/// Signed-in sessions kept at once; the oldest is dropped beyond it. Only a successful
/// sign-in adds one.
const SIGNED_IN_CAPACITY: usize = 10_000;

/// What shows that the credential a session was made from still holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Proof {
    /// A user name and password: the digest of the user's stored salt and hash at sign-in
    /// (see [`Auth::credential_stamp`]).
    Password { stamp: [u8; 32] },
    /// A bearer token: its `exp`, in seconds since the epoch.
    Token { expires: u64 },
}

/// Who signed in to a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedIn {
    pub name: String,
    /// The roles the credential carried at sign-in (a token's; a password session takes the
    /// user's roles from the current auth file instead).
    pub roles: Vec<String>,
    pub method: AuthMethod,
    pub proof: Proof,
}

impl SignedIn {
    /// The roles the session acts with now, or `None` once its credential no longer holds:
    /// the user is gone from the auth file or its stored password changed since sign-in, or
    /// the token's `exp` is not after `now`.
    pub fn current_roles(&self, auth: &Auth, now: SystemTime) -> Option<Vec<String>> {
        match &self.proof {
            Proof::Password { stamp } => {
                let (current, roles) = auth.credential_stamp(&self.name)?;
                bool::from(current.ct_eq(stamp)).then_some(roles)
            }
            Proof::Token { expires } => {
                // An `exp` too far off to add to the epoch is no limit.
                let still = SystemTime::UNIX_EPOCH
                    .checked_add(Duration::from_secs(*expires))
                    .is_none_or(|end| now < end);
                still.then(|| self.roles.clone())
            }
        }
    }
}

/// The `exp` claim of a bearer token that has already been verified, read from its payload
/// (the signature check is not repeated here).
pub fn token_expiry(token: &str) -> Option<u64> {
    let payload = token.trim().split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let exp = claims.get("exp")?;
    exp.as_u64().or_else(|| {
        exp.as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .map(|f| f as u64)
    })
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

/// The session tables.
pub struct Sessions {
    anonymous: Mutex<LruCache<String, Session>>,
    /// In the order the sessions were made, which (all having the same lifetime) is also
    /// the order they expire in.
    signed_in: Mutex<LinkedHashMap<String, Session>>,
    signed_in_capacity: usize,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions::with_capacity(ANONYMOUS_CAPACITY, SIGNED_IN_CAPACITY)
    }
}

impl Sessions {
    /// Tables holding at most `anonymous` and `signed_in` sessions (at least one each).
    pub fn with_capacity(anonymous: usize, signed_in: usize) -> Sessions {
        Sessions {
            anonymous: Mutex::new(LruCache::new(anonymous.max(1))),
            signed_in: Mutex::new(LinkedHashMap::new()),
            signed_in_capacity: signed_in.max(1),
        }
    }

    /// The live session named by `id`, if any.
    pub fn get(&self, id: &str) -> Option<Session> {
        let now = Instant::now();
        {
            let mut table = self.signed_in.lock().unwrap_or_else(|e| e.into_inner());
            match table.get(id) {
                Some(s) if s.expires > now => return Some(s.clone()),
                Some(_) => {
                    table.remove(id);
                    return None;
                }
                None => {}
            }
        }
        let mut table = self.anonymous.lock().unwrap_or_else(|e| e.into_inner());
        match table.get(id) {
            Some(s) if s.expires > now => Some(s.clone()),
            Some(_) => {
                table.remove(id);
                None
            }
            None => None,
        }
    }

    /// A new session, anonymous or signed in, with a fresh id and CSRF token.
    pub fn create(&self, user: Option<SignedIn>) -> Result<Session, RandomError> {
        let now = Instant::now();
        let session = Session {
            id: random_token()?,
            csrf: random_token()?,
            user,
            expires: now + LIFETIME,
        };
        if session.user.is_some() {
            let mut table = self.signed_in.lock().unwrap_or_else(|e| e.into_inner());
            while table.front().is_some_and(|(_, s)| s.expires <= now) {
                table.pop_front();
            }
            while table.len() >= self.signed_in_capacity {
                table.pop_front();
            }
            table.insert(session.id.clone(), session.clone());
        } else {
            self.anonymous
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(session.id.clone(), session.clone());
        }
        Ok(session)
    }

    /// Ends a session (sign-out, replacement by a signed-in one, or a credential that no
    /// longer holds).
    pub fn remove(&self, id: &str) {
        self.signed_in
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
        self.anonymous
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
            .anonymous
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

    fn user(proof: Proof) -> SignedIn {
        SignedIn {
            name: "reader".into(),
            roles: vec!["team-a".into()],
            method: AuthMethod::Bearer,
            proof,
        }
    }

    fn unix(seconds: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(seconds)
    }

    #[test]
    fn a_token_session_holds_until_the_tokens_exp_and_not_a_second_more() {
        let auth = Auth::disabled();
        let session = user(Proof::Token { expires: 1_000 });
        assert_eq!(
            session.current_roles(&auth, unix(999)),
            Some(vec!["team-a".to_string()])
        );
        assert_eq!(session.current_roles(&auth, unix(1_000)), None);
        assert_eq!(session.current_roles(&auth, unix(1_066)), None);
        let forever = user(Proof::Token { expires: u64::MAX });
        assert!(forever.current_roles(&auth, unix(1_000)).is_some());
    }

    #[test]
    fn a_password_session_holds_while_the_stored_hash_does() {
        use crate::auth::AuthSettings;
        use crate::auth::file::Algorithm;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.json");
        let file = |password: &str, roles: &[&str]| {
            serde_json::json!({"users": [{"username": "reader", "algorithm": "sha256",
                "salt": "s", "password_hash": Algorithm::Sha256.hash(password, "s"),
                "roles": roles}]})
            .to_string()
        };
        std::fs::write(&path, file("pw", &["team-a"])).unwrap();
        let auth = Auth::new(AuthSettings {
            auth_file: Some(path.clone()),
            reload_interval: Some(Duration::ZERO),
            ..AuthSettings::default()
        })
        .unwrap();
        let (stamp, _) = auth.credential_stamp("reader").unwrap();
        let session = user(Proof::Password { stamp });
        let now = SystemTime::now();
        assert_eq!(
            session.current_roles(&auth, now),
            Some(vec!["team-a".to_string()])
        );
        // Roles follow the file without ending the session.
        std::thread::sleep(Duration::from_millis(50));
        std::fs::write(&path, file("pw", &["team-b"])).unwrap();
        assert_eq!(
            session.current_roles(&auth, now),
            Some(vec!["team-b".to_string()])
        );
        std::thread::sleep(Duration::from_millis(50));
        std::fs::write(&path, file("pw2", &["team-b"])).unwrap();
        assert_eq!(session.current_roles(&auth, now), None);
        std::thread::sleep(Duration::from_millis(50));
        std::fs::write(&path, r#"{"users": []}"#).unwrap();
        assert!(auth.credential_stamp("reader").is_none());
        assert_eq!(session.current_roles(&auth, now), None);
    }

    #[test]
    fn the_expiry_is_read_from_the_tokens_claims() {
        let encode = |claims: &str| {
            let b64 = |t: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(t);
            format!("{}.{}.sig", b64(r#"{"alg":"EdDSA"}"#), b64(claims))
        };
        assert_eq!(
            token_expiry(&encode(r#"{"sub":"a","exp":1700000000}"#)),
            Some(1_700_000_000)
        );
        assert_eq!(
            token_expiry(&encode(r#"{"exp":1700000000.5}"#)),
            Some(1_700_000_000)
        );
        assert_eq!(token_expiry(&encode(r#"{"sub":"a"}"#)), None);
        assert_eq!(token_expiry("not-a-token"), None);
    }

    #[test]
    fn anonymous_sessions_never_push_out_signed_in_ones() {
        let sessions = Sessions::with_capacity(3, 2);
        let first = sessions
            .create(Some(user(Proof::Token { expires: u64::MAX })))
            .unwrap();
        for _ in 0..100 {
            sessions.create(None).unwrap();
        }
        assert!(sessions.get(&first.id).is_some());
        assert_eq!(sessions.anonymous.lock().unwrap().len(), 3);
        // A full signed-in table drops its oldest session for a new one.
        let second = sessions
            .create(Some(user(Proof::Token { expires: u64::MAX })))
            .unwrap();
        let third = sessions
            .create(Some(user(Proof::Token { expires: u64::MAX })))
            .unwrap();
        assert!(sessions.get(&first.id).is_none());
        assert!(sessions.get(&second.id).is_some());
        assert!(sessions.get(&third.id).is_some());
        // Expired signed-in sessions make room before anything live is dropped.
        sessions
            .signed_in
            .lock()
            .unwrap()
            .get_mut(&second.id)
            .unwrap()
            .expires = Instant::now() - Duration::from_secs(1);
        let fourth = sessions
            .create(Some(user(Proof::Token { expires: u64::MAX })))
            .unwrap();
        assert!(sessions.get(&third.id).is_some());
        assert!(sessions.get(&fourth.id).is_some());
        sessions.remove(&fourth.id);
        assert!(sessions.get(&fourth.id).is_none());
    }
}

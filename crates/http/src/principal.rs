//! Who is making a request. The authentication layer puts a [`Principal`] into the request's
//! extensions; handlers and governance take the actor from it, never from a body field.
//! Without an authentication layer every request is anonymous, attributed to its
//! `User-Agent` and source address.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use std::convert::Infallible;
use std::net::SocketAddr;

/// How the principal proved who it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthMethod {
    Anonymous,
    Basic,
    Bearer,
    ClientCertificate,
}

/// The caller of one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    /// The authenticated name; `None` when anonymous.
    pub name: Option<String>,
    /// Roles or groups carried by the credential.
    pub roles: Vec<String>,
    pub method: AuthMethod,
    /// The peer address of the connection, when the server knows it.
    pub source: Option<SocketAddr>,
    /// The `User-Agent` header, which attributes anonymous reads.
    pub user_agent: Option<String>,
    /// When the credential stops being valid (a token's `exp`, seconds since the epoch).
    pub expires: Option<u64>,
}

impl Principal {
    /// An anonymous caller, identified only by what the request carries.
    pub fn anonymous(parts: &Parts) -> Principal {
        Principal {
            name: None,
            roles: Vec::new(),
            method: AuthMethod::Anonymous,
            source: parts
                .extensions
                .get::<axum::extract::ConnectInfo<SocketAddr>>()
                .map(|c| c.0),
            user_agent: parts
                .headers
                .get(axum::http::header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            expires: None,
        }
    }

    pub fn is_authenticated(&self) -> bool {
        self.name.is_some()
    }

    /// The name recorded as the actor of an action: the authenticated name, else
    /// `anonymous` with the user agent when there is one.
    pub fn actor(&self) -> String {
        match (&self.name, &self.user_agent) {
            (Some(name), _) => name.clone(),
            (None, Some(agent)) => format!("anonymous ({agent})"),
            (None, None) => "anonymous".to_string(),
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Principal {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(match parts.extensions.get::<Principal>() {
            Some(p) => p.clone(),
            None => Principal::anonymous(parts),
        })
    }
}

//! Whose rights an exporter runs with. An exporter copies subjects long after the request
//! that created it, so it acts as the principal that created it: before each run the
//! creator must still be allowed to administer exporters, and each subject is copied only
//! while the creator may read it (and each DEK of it only while it may read the DEK's KEK
//! too, as a request for that DEK would need). The server's authorization layer answers both questions
//! through [`ExportAuthority`]; a server without authentication answers yes ([`AllowAll`]).

use serde::{Deserialize, Serialize};

/// The principal that created an exporter, as recorded with it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Creator {
    /// The authenticated name; `None` for an anonymous creator (a server without
    /// authentication, or anonymous operations allowed by the server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The roles or groups its credential carried.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
}

impl Creator {
    pub fn anonymous() -> Creator {
        Creator::default()
    }

    /// A named principal with its roles.
    pub fn named(name: impl Into<String>, roles: Vec<String>) -> Creator {
        Creator {
            name: Some(name.into()),
            roles,
        }
    }

    /// As stored: JSON; empty text (an exporter stored before creators were recorded) is the
    /// anonymous principal, which holds only what the server allows anonymous callers.
    pub fn decode(stored: &str) -> Creator {
        if stored.trim().is_empty() {
            return Creator::anonymous();
        }
        serde_json::from_str(stored).unwrap_or_else(|_| Creator::anonymous())
    }

    pub fn encode(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// What an exporter's creator may do now. Asked again before every run and for every
/// subject a run is about to copy, so a narrowed grant takes effect on the next run.
pub trait ExportAuthority: Send + Sync {
    /// Whether the creator may read `subject` (its schemas, soft-deleted ones included).
    fn may_read(&self, creator: &Creator, subject: &str) -> bool;
    /// Whether the creator may read the KEK named (its metadata and the DEKs under it, with
    /// [`ExportAuthority::may_read`] on their subject).
    fn may_read_kek(&self, creator: &Creator, kek: &str) -> bool;
    /// Whether the creator may still administer exporters (create, change, run them).
    fn may_administer(&self, creator: &Creator) -> bool;
}

/// The authority of a server without authentication: everyone may do everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

impl ExportAuthority for AllowAll {
    fn may_read(&self, _: &Creator, _: &str) -> bool {
        true
    }

    fn may_read_kek(&self, _: &Creator, _: &str) -> bool {
        true
    }

    fn may_administer(&self, _: &Creator) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creators_round_trip_and_unknown_ones_are_anonymous() {
        let alice = Creator::named("alice", vec!["ops".into()]);
        assert_eq!(Creator::decode(&alice.encode()), alice);
        assert_eq!(Creator::decode(""), Creator::anonymous());
        assert_eq!(Creator::decode("not json"), Creator::anonymous());
        assert_eq!(
            Creator::decode(&Creator::anonymous().encode()),
            Creator::anonymous()
        );
    }
}

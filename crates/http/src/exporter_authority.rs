//! The exporters' [`ExportAuthority`] over the authentication layer: an exporter's creator
//! is looked up in the current auth file (re-read when it changes) exactly as a request of
//! that principal would be, so narrowing a creator's grants narrows what its exporters copy
//! from their next step on.

use crate::auth::{Access, Auth, Operation, Resource};
use crate::principal::{AuthMethod, Principal};
use covenant_exporter::{Creator, ExportAuthority};
use std::sync::Arc;

/// Answers for exporters' creators from the server's [`Auth`].
pub struct AuthExportAuthority {
    auth: Arc<Auth>,
}

impl AuthExportAuthority {
    pub fn new(auth: Arc<Auth>) -> AuthExportAuthority {
        AuthExportAuthority { auth }
    }

    fn access(&self, creator: &Creator) -> Access {
        self.auth.access_for(&principal_of(creator))
    }
}

/// The principal a creator stands for: authenticated under its recorded name and roles, or
/// the anonymous principal (with only what the server allows anonymous callers).
pub fn principal_of(creator: &Creator) -> Principal {
    let (parts, ()) = axum::http::Request::new(()).into_parts();
    let mut principal = Principal::anonymous(&parts);
    if let Some(name) = &creator.name {
        principal.name = Some(name.clone());
        principal.roles = creator.roles.clone();
        principal.method = AuthMethod::Basic;
    }
    principal
}

/// What the exporter records about the principal creating it.
pub fn creator_of(principal: &Principal) -> Creator {
    match &principal.name {
        Some(name) => Creator::named(name.clone(), principal.roles.clone()),
        None => Creator::anonymous(),
    }
}

impl ExportAuthority for AuthExportAuthority {
    fn may_read(&self, creator: &Creator, subject: &str) -> bool {
        self.access(creator).can_read(subject)
    }

    fn may_read_kek(&self, creator: &Creator, kek: &str) -> bool {
        self.access(creator)
            .allows(Operation::Read, &Resource::Kek(kek.to_string()))
    }

    fn may_administer(&self, creator: &Creator) -> bool {
        self.access(creator)
            .allows(Operation::Admin, &Resource::Global)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{AuthFile, AuthSettings};

    #[test]
    fn creators_are_held_to_the_auth_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("auth.json");
        let mut file = AuthFile::load_or_new(&path).expect("new file");
        file.set_password("alice", "a-pass").expect("alice");
        file.set_password("carol", "c-pass").expect("carol");
        file.grant("alice", "Admin", "Config:").expect("grant");
        file.grant("alice", "Read", "SubjectPrefix:team-a")
            .expect("grant");
        file.grant("carol", "Read", "Subject:.*").expect("grant");
        file.grant("carol", "Read", "Kek:team-b-kek")
            .expect("grant");
        file.save(&path).expect("save");
        let auth = Auth::new(AuthSettings {
            auth_file: Some(path),
            ..AuthSettings::default()
        })
        .expect("auth");
        let authority = AuthExportAuthority::new(Arc::new(auth));
        let alice = Creator::named("alice", Vec::new());
        assert!(authority.may_administer(&alice));
        assert!(authority.may_read(&alice, "team-a-orders"));
        assert!(!authority.may_read(&alice, "team-b-orders"));
        let carol = Creator::named("carol", Vec::new());
        assert!(!authority.may_administer(&carol));
        assert!(authority.may_read(&carol, "team-b-orders"));
        assert!(authority.may_read_kek(&carol, "team-b-kek"));
        assert!(!authority.may_read_kek(&carol, "team-a-kek"));
        assert!(!authority.may_read_kek(&alice, "team-b-kek"));
        let nobody = Creator::anonymous();
        assert!(!authority.may_administer(&nobody));
        assert!(!authority.may_read(&nobody, "team-a-orders"));
        let unknown = Creator::named("mallory", vec!["admins".into()]);
        assert!(!authority.may_administer(&unknown));

        let open = AuthExportAuthority::new(Arc::new(Auth::disabled()));
        assert!(open.may_administer(&Creator::anonymous()));
        assert!(open.may_read(&Creator::anonymous(), "anything"));
        assert!(open.may_read_kek(&Creator::anonymous(), "any_kek"));
    }

    #[test]
    fn principals_and_creators_correspond() {
        let creator = Creator::named("alice", vec!["ops".into()]);
        let principal = principal_of(&creator);
        assert!(principal.is_authenticated());
        assert_eq!(principal.roles, vec!["ops".to_string()]);
        assert_eq!(creator_of(&principal), creator);
        let anonymous = principal_of(&Creator::anonymous());
        assert!(!anonymous.is_authenticated());
        assert_eq!(creator_of(&anonymous), Creator::anonymous());
    }
}

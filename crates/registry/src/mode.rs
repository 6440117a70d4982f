//! Modes along a subject's scope chain: the effective mode a registration is guarded by, the
//! mode routes, and the read-only check every other write makes first.

use crate::config::scope_cache_key;
use crate::contexts::{self, scope_for};
use crate::{Registry, RegistryError, RegistryResult, SubjectUse, validate_subject};
use covenant_store::{Audit, Scope};

/// Registry modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    ReadWrite,
    ReadOnly,
    ReadOnlyOverride,
    Import,
    Forward,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::ReadWrite => "READWRITE",
            Mode::ReadOnly => "READONLY",
            Mode::ReadOnlyOverride => "READONLY_OVERRIDE",
            Mode::Import => "IMPORT",
            Mode::Forward => "FORWARD",
        }
    }

    pub fn parse(text: &str) -> RegistryResult<Mode> {
        match text.trim().to_ascii_uppercase().as_str() {
            "READWRITE" => Ok(Mode::ReadWrite),
            "READONLY" => Ok(Mode::ReadOnly),
            "READONLY_OVERRIDE" => Ok(Mode::ReadOnlyOverride),
            "IMPORT" => Ok(Mode::Import),
            "FORWARD" => Ok(Mode::Forward),
            _ => Err(RegistryError::InvalidMode),
        }
    }

    pub(crate) fn is_read_only(self) -> bool {
        matches!(self, Mode::ReadOnly | Mode::ReadOnlyOverride)
    }

    pub(crate) fn is_import(self) -> bool {
        matches!(self, Mode::Import | Mode::Forward)
    }
}

impl Registry {
    /// The subject's mode along its scope chain; the default context's global
    /// READONLY_OVERRIDE stops every context.
    pub(crate) async fn effective_mode(&self, subject: &str) -> RegistryResult<Mode> {
        self.chain_settings(Some(subject)).await?.mode()
    }

    pub(crate) async fn global_mode(&self) -> RegistryResult<Mode> {
        Ok(self
            .store
            .mode(Scope::Global)
            .await?
            .and_then(|m| Mode::parse(&m).ok())
            .unwrap_or(Mode::ReadWrite))
    }

    pub(crate) async fn ensure_writable(&self, scope: Scope<'_>) -> RegistryResult<()> {
        let (mode, name) = match scope {
            Scope::Global => (self.global_mode().await?, None),
            Scope::Subject(s) => (self.effective_mode(s).await?, Some(s)),
        };
        if mode.is_read_only() {
            return Err(RegistryError::OperationNotPermitted(match name {
                Some(s) => format!(
                    "Subject {s} in context {} is in read-only mode",
                    covenant_store::context::context_of(s)
                ),
                None => "The registry is in read-only mode".into(),
            }));
        }
        Ok(())
    }

    /// `GET /mode[/{s}]`.
    pub async fn mode(
        &self,
        subject: Option<&str>,
        default_to_global: bool,
    ) -> RegistryResult<Mode> {
        let scope = scope_for(subject);
        match (self.store.mode(scope).await?, scope) {
            (Some(m), _) => Mode::parse(&m),
            (None, Scope::Global) if !default_to_global => Ok(Mode::ReadWrite),
            (None, Scope::Subject(s)) if !default_to_global => {
                Err(RegistryError::SubjectModeNotFound(s.to_string()))
            }
            (None, _) => {
                for key in contexts::scope_chain(subject).iter().skip(1) {
                    if let Some(m) = self.store.mode(contexts::scope(key)).await? {
                        return Mode::parse(&m);
                    }
                }
                Ok(Mode::ReadWrite)
            }
        }
    }

    /// `PUT /mode[/{s}]`. Switching to IMPORT needs an empty scope unless `force`.
    pub async fn set_mode(
        &self,
        subject: Option<&str>,
        mode: &str,
        force: bool,
        audit: Audit<'_>,
    ) -> RegistryResult<Mode> {
        let mode = Mode::parse(mode)?;
        if let Some(s) = subject {
            validate_subject(s, SubjectUse::ConfigOrMode)?;
            if mode == Mode::Forward {
                return Err(RegistryError::ForwardModeOnSubject);
            }
        }
        if mode == Mode::Import && !force {
            let has_subjects = match subject {
                Some(s) => self
                    .store
                    .subject_versions(s)
                    .await?
                    .iter()
                    .any(|v| !v.deleted),
                None => self.store.subjects().await?.iter().any(|(_, live)| *live),
            };
            if has_subjects {
                return Err(RegistryError::OperationNotPermitted(
                    "Cannot import since found existing subjects".into(),
                ));
            }
        }
        let scope = scope_for(subject);
        self.store.set_mode(scope, mode.as_str(), audit).await?;
        self.answers.scope_changed(scope_cache_key(scope));
        Ok(mode)
    }

    /// `DELETE /mode[/{s}]`: returns the previous mode.
    pub async fn delete_mode(
        &self,
        subject: Option<&str>,
        audit: Audit<'_>,
    ) -> RegistryResult<Mode> {
        let scope = scope_for(subject);
        let deleted = self.store.delete_mode(scope, audit).await?;
        self.answers.scope_changed(scope_cache_key(scope));
        match (deleted, scope) {
            (Some(old), _) => Mode::parse(&old),
            (None, Scope::Subject(s)) => Err(RegistryError::SubjectNotFound(s.to_string())),
            (None, Scope::Global) => Ok(Mode::ReadWrite),
        }
    }
}

//! The registration's parse step: the request as the registry reads it. Before anything is
//! read, the subject name and the rule set must be valid ([`validate`]); once the snapshot is
//! read, a request outside IMPORT mode is completed from the latest version and the config's
//! data contracts ([`complete`]); and the version it asks for says how it deduplicates and
//! where it may be placed ([`Asked`]).

use super::snapshot::Snapshot;
use crate::contract::validate_rule_set;
use crate::{
    Contract, Mode, RegistryError, RegistryResult, SchemaRequest, SubjectUse, validate_subject,
};
use covenant_store::{Dedupe, Placement};

/// The subject name and the request's own rule set are valid.
pub(crate) fn validate(subject: &str, request: &SchemaRequest) -> RegistryResult<()> {
    validate_subject(subject, SubjectUse::Schemas)?;
    validate_rule_set(&request.rule_set)
}

/// Outside IMPORT mode: an empty schema means the latest version's; absent metadata and rules
/// are the latest version's; then the config's data contracts are merged in
/// (`merge(merge(default, specific), override)`, see [`crate::contract`]).
pub(crate) fn complete(
    mut request: SchemaRequest,
    snapshot: &Snapshot,
) -> RegistryResult<SchemaRequest> {
    if snapshot.mode.is_import() {
        return Ok(request);
    }
    let latest_live = snapshot.latest_live();
    if request.schema.trim().is_empty()
        && let Some(latest) = latest_live
    {
        request.schema = latest.schema.schema.clone();
        request.schema_type = Some(latest.schema.schema_type.clone());
        request.references = latest.schema.references.clone();
    }
    if let Some(latest) = latest_live {
        if request.metadata.is_none() {
            request.metadata = latest.schema.metadata.clone();
        }
        if request.rule_set.is_none() {
            request.rule_set = latest.schema.rule_set.clone();
        }
    }
    let contract = Contract::from_extra(&snapshot.config.extra);
    if !contract.is_empty() {
        request.metadata = contract.metadata(request.metadata.take());
        request.rule_set = contract.rule_set(request.rule_set.take());
        validate_rule_set(&request.rule_set)?;
    }
    Ok(request)
}

/// What the request's `version` asks: which live versions count as the same registration,
/// and an explicit version number.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asked {
    pub dedupe: Dedupe,
    pub explicit_version: Option<i64>,
}

impl Asked {
    /// None or 0: any live version; -1: only the latest; a version number: none (it must be
    /// the next one, or in IMPORT mode the one given).
    pub fn of(version: Option<i64>) -> RegistryResult<Asked> {
        let (dedupe, explicit_version) = match version {
            None | Some(0) => (Dedupe::AnyLive, None),
            Some(-1) => (Dedupe::LatestOnly, None),
            Some(v) if v > 0 && v <= i64::from(i32::MAX) => (Dedupe::Never, Some(v)),
            Some(v) => return Err(RegistryError::InvalidVersion(v.to_string())),
        };
        Ok(Asked {
            dedupe,
            explicit_version,
        })
    }

    /// Where the store may place the version: the given id, and in IMPORT mode the given
    /// version.
    pub fn placement(&self, mode: Mode, id: Option<i64>) -> Placement {
        Placement {
            id,
            version: if mode.is_import() {
                self.explicit_version
            } else {
                None
            },
            dedupe: if mode.is_import() && self.explicit_version.is_some() {
                Dedupe::Never
            } else {
                self.dedupe
            },
        }
    }
}

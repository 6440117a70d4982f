//! `POST /subjects/{s}`: the version of a subject that holds a schema.

use crate::answers::{Answer, RequestKey, Route};
use crate::identity::same_identity;
use crate::{Registry, RegistryError, RegistryResult, SchemaRequest, SubjectRead};
use covenant_store::StoredVersion;
use std::sync::Arc;

impl Registry {
    /// `POST /subjects/{s}`: the version of this subject holding the schema; `first` is what
    /// the request read of the subject with its alias, if it did
    /// ([`Registry::alias_target_for_content`]).
    pub async fn lookup(
        &self,
        subject: &str,
        request: &SchemaRequest,
        normalize: bool,
        deleted: bool,
        first: Option<&SubjectRead>,
    ) -> RegistryResult<StoredVersion> {
        if let Some(answer) = self.looked_up(subject, request, normalize, deleted) {
            return Ok(answer.to_version(subject));
        }
        let key = RequestKey::of(Route::Lookup { normalize, deleted }, subject, request);
        let read = self.subject_read(subject, first).await?;
        let (epoch, versions) = (read.epoch, &read.versions);
        let visible: Vec<&StoredVersion> =
            versions.iter().filter(|v| deleted || !v.deleted).collect();
        if visible.is_empty() {
            return Err(RegistryError::SubjectNotFound(subject.to_string()));
        }
        // A request without a schema (`{}`, `"schema": ""`) matches no version.
        if request.schema.trim().is_empty() {
            return Err(RegistryError::SchemaNotFound);
        }
        let config = read.chain.config(self.default_level);
        let normalize = config.normalizes(normalize);
        let (parsed, candidate) = self.prepare(subject, request, normalize, true).await?;
        let same_text = |v: &&&StoredVersion| {
            v.schema.schema_type == candidate.schema_type
                && v.schema.schema == candidate.schema
                && v.schema.references == candidate.references
        };
        let mut found = visible
            .iter()
            .rev()
            .find(|v| same_identity(&v.schema, &candidate.content_key))
            .or_else(|| visible.iter().rev().find(same_text))
            .copied();
        if found.is_none() {
            found = self
                .same_protobuf(visible.iter().rev().copied().collect(), &candidate)
                .await;
        }
        if let Some(v) = found {
            if let Some(key) = key {
                let schema = Arc::new(v.schema.clone());
                self.answers
                    .insert(epoch, subject, key, Answer::of(v, schema));
            }
            return Ok((*v).clone());
        }
        if normalize {
            let wanted = parsed.normalized();
            for v in visible.iter().rev() {
                if v.schema.schema_type == candidate.schema_type
                    && let Ok(p) = self.parse_record(&v.schema).await
                    && p.normalized() == wanted
                {
                    return Ok((*v).clone());
                }
            }
        }
        Err(RegistryError::SchemaNotFound)
    }
}

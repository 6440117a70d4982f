//! References: resolved transitively from the store, dependencies first, each name once.

use crate::{BoxFuture, Registry, RegistryError, RegistryResult, VersionSpec};
use covenant_engine::Reference;
use covenant_store::{SchemaRef, StoredVersion};

/// How deep references may nest before the chain is judged circular or abusive.
pub(crate) const MAX_REFERENCE_DEPTH: usize = 32;

impl Registry {
    /// Resolves references transitively, dependencies first, each name once. `-1` versions
    /// become the latest version's number in the returned concrete list. An unqualified
    /// reference names a subject of `parent`'s context.
    pub async fn resolve_references(
        &self,
        refs: &[SchemaRef],
        parent: &str,
        allow_deleted: bool,
    ) -> RegistryResult<(Vec<SchemaRef>, Vec<Reference>)> {
        let mut resolved = Vec::new();
        let mut concrete = Vec::new();
        for r in refs {
            let v = self.reference_target(r, parent, allow_deleted).await?;
            concrete.push(SchemaRef {
                name: r.name.clone(),
                subject: r.subject.clone(),
                version: v.version,
            });
            self.collect_reference(r.name.clone(), v, &mut resolved, 0)
                .await?;
        }
        Ok((concrete, resolved))
    }

    pub(crate) async fn reference_target(
        &self,
        r: &SchemaRef,
        parent: &str,
        allow_deleted: bool,
    ) -> RegistryResult<StoredVersion> {
        let spec = if r.version == -1 {
            VersionSpec::Latest
        } else {
            VersionSpec::Number(r.version)
        };
        let subject = covenant_store::context::qualify_with_parent(parent, &r.subject);
        self.version(&subject, spec, allow_deleted)
            .await
            .map_err(|_| {
                RegistryError::InvalidSchema(format!(
                    "No schema reference found for subject \"{}\" and version {}",
                    r.subject, r.version
                ))
            })
    }

    pub(crate) fn collect_reference<'a>(
        &'a self,
        name: String,
        target: StoredVersion,
        out: &'a mut Vec<Reference>,
        depth: usize,
    ) -> BoxFuture<'a, RegistryResult<()>> {
        Box::pin(async move {
            if depth > MAX_REFERENCE_DEPTH {
                return Err(RegistryError::InvalidSchema(format!(
                    "References nest deeper than {MAX_REFERENCE_DEPTH} levels at '{name}'"
                )));
            }
            if out.iter().any(|r| r.name == name) {
                return Ok(());
            }
            for inner in &target.schema.references {
                let v = self.reference_target(inner, &target.subject, true).await?;
                self.collect_reference(inner.name.clone(), v, out, depth + 1)
                    .await?;
            }
            if !out.iter().any(|r| r.name == name) {
                out.push(Reference {
                    name,
                    subject: target.subject.clone(),
                    version: target.version,
                    schema: target.schema.schema.clone(),
                });
            }
            Ok(())
        })
    }
}

//! Contexts (see [`covenant_store::context`]): ids resolved within a context, config and mode
//! looked up along a context's chain, listings across contexts, and the removal of an empty
//! context. Confluent's rules, read from its `QualifiedSubject`, `InMemoryCache` and
//! `AbstractSchemaRegistry.getSchemaKeyUsingContexts`.

use crate::{Registry, RegistryError, RegistryResult};
use covenant_store::context::{self, DEFAULT_CONTEXT, GLOBAL_CONTEXT, MAX_PUBLIC_ID};
use covenant_store::{Audit, Scope};

/// A config or mode key: `None` is the default context's global scope.
pub(crate) type ScopeKey = Option<String>;

pub(crate) fn scope(key: &ScopeKey) -> Scope<'_> {
    key.as_deref().map(Scope::Subject).unwrap_or(Scope::Global)
}

/// The scope a config or mode route addresses: the default context's key (`:.:`) is the
/// global scope, as Confluent redirects it.
pub fn scope_for(subject: Option<&str>) -> Scope<'_> {
    match subject {
        Some(s) if context::is_context_only(s) && context::context_of(s) == DEFAULT_CONTEXT => {
            Scope::Global
        }
        Some(s) => Scope::Subject(s),
        None => Scope::Global,
    }
}

/// The config and mode scopes consulted for `subject`, most specific first: its own, its
/// context's (the global scope for the default context), then `:.__GLOBAL:`. A non-default
/// context does not fall back to the default context's global scope.
pub(crate) fn scope_chain(subject: Option<&str>) -> Vec<ScopeKey> {
    let global_context = Some(context::context_key(GLOBAL_CONTEXT));
    let Some(subject) = subject.filter(|s| !matches!(scope_for(Some(s)), Scope::Global)) else {
        return vec![None, global_context];
    };
    let ctx = context::context_of(subject);
    if ctx == GLOBAL_CONTEXT {
        return vec![global_context];
    }
    let mut chain = Vec::with_capacity(3);
    if !context::is_context_only(subject) {
        chain.push(Some(subject.to_string()));
    }
    chain.push(if ctx == DEFAULT_CONTEXT {
        None
    } else {
        Some(context::context_key(ctx))
    });
    chain.push(global_context);
    chain
}

/// Which subjects a listing's `subjectPrefix` selects: absent or `:*:rest` means every context
/// (names matched without their context), `:.ctx:...` one context, anything else the default
/// context only.
pub fn prefix_matches(prefix: Option<&str>, subject: &str) -> bool {
    match prefix {
        None => true,
        Some(p) if p.starts_with(":*:") => context::unqualified(subject).starts_with(&p[3..]),
        Some(p) if p.starts_with(":.") => subject.starts_with(p),
        Some(p) => !subject.starts_with(":.") && subject.starts_with(p),
    }
}

impl Registry {
    /// The stored id that public id `id` names, seen from `subject` (`?subject=` of the id
    /// routes): without one, the default context; with a qualified one, that context (and,
    /// when it names a subject, only an id that subject uses); with an unqualified one, the
    /// default context if that subject uses it, else the first context where the same-named
    /// subject does, else the default context.
    pub async fn resolve_id(&self, id: i64, subject: Option<&str>) -> RegistryResult<i64> {
        let not_found = || RegistryError::SchemaIdNotFound(id);
        if !(1..=MAX_PUBLIC_ID).contains(&id) {
            return Err(not_found());
        }
        let Some(subject) = subject.filter(|s| !s.is_empty()) else {
            return Ok(id);
        };
        let (ctx, name) = context::split(subject);
        if subject.starts_with(":.") {
            let slot = self.store.context_slot(ctx).await?.ok_or_else(not_found)?;
            let stored = context::stored_id(slot, id);
            if name.is_empty() || self.id_used_by(stored, subject).await? {
                return Ok(stored);
            }
            return Err(not_found());
        }
        if self.id_used_by(id, subject).await? {
            return Ok(id);
        }
        for (ctx, slot) in self.store.contexts().await? {
            let stored = context::stored_id(slot, id);
            if self
                .id_used_by(stored, &context::qualify(&ctx, subject))
                .await?
            {
                return Ok(stored);
            }
        }
        Ok(id)
    }

    async fn id_used_by(&self, stored: i64, subject: &str) -> RegistryResult<bool> {
        Ok(self
            .store
            .versions_with_id(stored)
            .await?
            .iter()
            .any(|(s, _, _)| s == subject))
    }

    /// `GET /contexts`: the default context first, then the others by name.
    pub async fn contexts(&self) -> RegistryResult<Vec<String>> {
        let mut names = vec![DEFAULT_CONTEXT.to_string()];
        names.extend(self.store.contexts().await?.into_iter().map(|(n, _)| n));
        Ok(names)
    }

    /// The name of the context whose ids live in `slot`.
    pub async fn context_of_slot(&self, slot: i64) -> RegistryResult<String> {
        if slot == 0 {
            return Ok(DEFAULT_CONTEXT.to_string());
        }
        Ok(self
            .store
            .contexts()
            .await?
            .into_iter()
            .find(|(_, s)| *s == slot)
            .map(|(name, _)| name)
            .unwrap_or_else(|| DEFAULT_CONTEXT.to_string()))
    }

    /// The context a stored schema belongs to, as a parent subject (`:.ctx:`, or the empty
    /// name for the default context) against which its references are qualified.
    pub(crate) async fn parent_of_stored(&self, stored: i64) -> RegistryResult<String> {
        let ctx = self.context_of_slot(context::slot_of(stored)).await?;
        Ok(if ctx == DEFAULT_CONTEXT {
            String::new()
        } else {
            context::context_key(&ctx)
        })
    }

    /// `DELETE /contexts/{context}`: removes a context without subjects (soft-deleted ones
    /// count, as in Confluent); 42211 otherwise. The default context cannot be removed.
    pub async fn delete_context(&self, context: &str, audit: Audit<'_>) -> RegistryResult<()> {
        let ctx = context::normalize_context(context)
            .filter(|c| c != GLOBAL_CONTEXT)
            .ok_or_else(|| RegistryError::InvalidContext(context.to_string()))?;
        if ctx == DEFAULT_CONTEXT {
            return Err(RegistryError::OperationNotPermitted(
                "The default context cannot be deleted".into(),
            ));
        }
        self.store.delete_context(&ctx, audit).await?;
        self.forget_answers(None);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(chain: Vec<ScopeKey>) -> Vec<String> {
        chain
            .into_iter()
            .map(|k| k.unwrap_or_else(|| "<global>".into()))
            .collect()
    }

    #[test]
    fn a_subject_in_a_context_falls_back_to_its_context_then_the_global_context() {
        assert_eq!(
            keys(scope_chain(Some(":.a:orders"))),
            [":.a:orders", ":.a:", ":.__GLOBAL:"]
        );
        assert_eq!(
            keys(scope_chain(Some("orders"))),
            ["orders", "<global>", ":.__GLOBAL:"]
        );
        assert_eq!(keys(scope_chain(Some(":.a:"))), [":.a:", ":.__GLOBAL:"]);
        assert_eq!(keys(scope_chain(None)), ["<global>", ":.__GLOBAL:"]);
        assert_eq!(keys(scope_chain(Some(":.:"))), ["<global>", ":.__GLOBAL:"]);
        assert_eq!(keys(scope_chain(Some(":.__GLOBAL:"))), [":.__GLOBAL:"]);
    }

    #[test]
    fn prefixes_select_contexts_as_confluent_does() {
        assert!(prefix_matches(None, ":.a:orders"));
        assert!(prefix_matches(None, "orders"));
        assert!(prefix_matches(Some(":*:ord"), ":.a:orders"));
        assert!(prefix_matches(Some(":*:ord"), "orders"));
        assert!(!prefix_matches(Some(":*:x"), "orders"));
        assert!(prefix_matches(Some(":.a:"), ":.a:orders"));
        assert!(!prefix_matches(Some(":.a:"), ":.b:orders"));
        assert!(prefix_matches(Some(""), "orders"));
        assert!(!prefix_matches(Some(""), ":.a:orders"));
        assert!(prefix_matches(Some("ord"), "orders"));
    }
}

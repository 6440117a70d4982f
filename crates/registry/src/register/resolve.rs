//! The registration's resolve step: the request's references resolved from the store
//! (transitively, dependencies first, see [`crate::references`]), then its text parsed into the
//! candidate within the schema limits, with the text stored for it and its content key (see
//! [`crate::identity`]). Lookups and compatibility tests prepare their candidate the same way.

use crate::identity::{content_key, identity_key, stored_text};
use crate::parsing::{parse_schema_with, parse_type};
use crate::{Registry, RegistryResult, SchemaRequest, check_budget};
use covenant_schema::ParsedSchema;
use covenant_store::NewSchema;

impl Registry {
    /// A candidate parsed with its references, its stored text and identity.
    pub(crate) async fn prepare(
        &self,
        subject: &str,
        request: &SchemaRequest,
        normalize: bool,
        allow_deleted_refs: bool,
    ) -> RegistryResult<(ParsedSchema, NewSchema)> {
        let schema_type = parse_type(request.schema_type.as_deref())?;
        let (references, resolved) = self
            .resolve_references(&request.references, subject, allow_deleted_refs)
            .await?;
        let metadata = request.metadata.clone().filter(|m| !m.is_null());
        let rule_set = request.rule_set.clone().filter(|r| !r.is_null());
        let ty = schema_type.as_str();
        let parse = || -> RegistryResult<_> {
            let parsed =
                parse_schema_with(schema_type, &request.schema, &resolved, &self.schema_limits)?;
            let (text, text_is_identity) =
                stored_text(schema_type, &request.schema, &parsed, normalize);
            let key = match (text_is_identity, &parsed) {
                (true, _) => identity_key(ty, &text, &references, &metadata, &rule_set),
                (false, ParsedSchema::Protobuf(p)) => {
                    identity_key(ty, &p.canonical_text(), &references, &metadata, &rule_set)
                }
                (false, _) => content_key(ty, &text, &references, &metadata, &rule_set),
            };
            Ok((parsed, text, key))
        };
        // Parsing a large schema, or one with references, takes a while: off the async
        // workers, so that other requests (and the shutdown signal) are served meanwhile.
        let in_place = check_budget::fits_in_place(&request.schema) && resolved.is_empty();
        let (parsed, text, key) = if in_place {
            parse()?
        } else {
            check_budget::off_workers(parse)?
        };
        Ok((
            parsed,
            NewSchema {
                schema_type: schema_type.as_str().to_string(),
                schema: text,
                references,
                metadata,
                rule_set,
                content_key: key,
            },
        ))
    }
}

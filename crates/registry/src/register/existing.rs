//! The registration's existing step: a live version that already holds the candidate is the
//! answer (registration is idempotent), found before any mode or compatibility check. Which
//! versions count is what the request asked ([`super::parse::Asked`]): any live one, only the
//! latest, or none when it names a version.

use super::snapshot::Snapshot;
use crate::Registry;
use crate::identity::same_identity;
use covenant_store::{Dedupe, NewSchema, StoredVersion};

impl Registry {
    /// The live version of the snapshot that is the candidate, if any: by content key, or for
    /// a Protobuf schema keyed before its printed form was, by parsing it again.
    pub(crate) async fn existing<'s>(
        &self,
        snapshot: &'s Snapshot,
        candidate: &NewSchema,
        dedupe: Dedupe,
    ) -> Option<&'s StoredVersion> {
        let versions = snapshot.versions.as_slice();
        let latest_live = snapshot.latest_live();
        let key = &candidate.content_key;
        let found = match dedupe {
            Dedupe::AnyLive => versions
                .iter()
                .find(|v| !v.deleted && same_identity(&v.schema, key)),
            Dedupe::LatestOnly => latest_live.filter(|v| same_identity(&v.schema, key)),
            Dedupe::Never => None,
        };
        if found.is_some() {
            return found;
        }
        let candidates: Vec<&StoredVersion> = match dedupe {
            Dedupe::AnyLive => versions.iter().filter(|v| !v.deleted).collect(),
            Dedupe::LatestOnly => latest_live.into_iter().collect(),
            Dedupe::Never => Vec::new(),
        };
        self.same_protobuf(candidates, candidate).await
    }
}

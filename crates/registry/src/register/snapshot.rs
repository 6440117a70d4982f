//! The registration's snapshot step: what the registration is judged against, read once: the
//! subject's effective config and mode (along its scope chain, see [`crate::config`] and
//! [`crate::mode`]) and its versions. The write step commits only if the subject is still
//! this snapshot.

use crate::config::ChainSettings;
use crate::{ConfigView, Mode, Registry, RegistryResult, SubjectRead};
use covenant_store::StoredVersion;
use std::sync::Arc;

/// The subject as a registration round read it.
pub(crate) struct Snapshot {
    /// The answers cache's epoch before anything was read: an answer found from this snapshot
    /// is kept only if nothing was invalidated since.
    pub epoch: u64,
    /// The config and mode rows read, which `config` and `mode` come from.
    pub settings: ChainSettings,
    pub config: ConfigView,
    /// Whether the text is stored normalized: asked by the request or set in config.
    pub normalize: bool,
    pub mode: Mode,
    pub versions: Arc<Vec<StoredVersion>>,
}

impl Snapshot {
    /// The latest version that is not soft-deleted.
    pub fn latest_live(&self) -> Option<&StoredVersion> {
        self.versions.iter().rev().find(|v| !v.deleted)
    }
}

impl Registry {
    /// Reads the snapshot of `subject`; `normalize` is what the request asked.
    pub(crate) async fn snapshot(
        &self,
        subject: &str,
        normalize: bool,
        first: Option<&SubjectRead>,
    ) -> RegistryResult<Snapshot> {
        let read = self.subject_read(subject, first).await?;
        let (epoch, settings, versions) = (read.epoch, read.chain, read.versions);
        let config = settings.config(self.default_level);
        let normalize = config.normalizes(normalize);
        let mode = settings.mode()?;
        Ok(Snapshot {
            epoch,
            settings,
            config,
            normalize,
            mode,
            versions,
        })
    }
}

//! The registration's guard step: whether the subject's mode lets a new version in. A
//! read-only subject takes none; an explicit id needs IMPORT mode, and IMPORT mode needs one
//! (an exporter's or a migration's: an id drawn here would diverge from the source's). The
//! other guards are the verdict's (next version, compatibility, the removal gate, see
//! [`super::judge`]) and the commit's (the snapshot unchanged, see [`super::write`]).

use crate::{Mode, RegistryError, RegistryResult};
use covenant_store::context::context_of;

/// Refuses a new version of `subject` in `mode`, with `id` as the request gave it.
pub(crate) fn mode_admits(subject: &str, mode: Mode, id: Option<i64>) -> RegistryResult<()> {
    let refused = |why: &str| {
        Err(RegistryError::OperationNotPermitted(format!(
            "Subject {subject} in context {} is {why}",
            context_of(subject)
        )))
    };
    if mode.is_read_only() {
        return refused("in read-only mode");
    }
    if id.is_some() && !mode.is_import() {
        return refused("not in import mode");
    }
    if id.is_none() && mode.is_import() {
        return refused("not in read-write mode");
    }
    if let Some(id) = id
        && !(1..=i64::from(i32::MAX)).contains(&id)
    {
        return Err(RegistryError::InvalidSchema(format!(
            "Invalid schema id {id}"
        )));
    }
    Ok(())
}

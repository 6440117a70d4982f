//! `POST /subjects/{s}/versions` and its dry run (`POST /covenant/v1/subjects/{s}/check`), as a
//! pipeline of named steps, one module each, in the order [`Registry::register_attempt`] runs
//! them (numbered as in the data flow of `docs/ARCHITECTURE.md`, whose step 1 is the HTTP
//! layer's parse of the request):
//!
//! 2. [`parse`]: the subject name and the request's rule set are valid (`parse::validate`).
//! 3. [`snapshot`]: the subject's effective config and mode, and its versions, read once
//!    (`Registry::snapshot`; for a subject this node knows to be new, taken from memory, see
//!    `crate::known_subjects`); the verdict is about this snapshot and the commit is guarded
//!    by it.
//! 4. [`parse`]: the request completed from the latest version and the config's data contracts
//!    (`parse::complete`).
//! 5. [`resolve`]: references resolved, the text parsed into the candidate with its stored
//!    text and content key (`Registry::prepare`); samples sent with it decoded; the version
//!    asked for read ([`parse`], `parse::Asked`).
//! 6. [`existing`]: a live version that already holds the candidate is the answer
//!    (`Registry::existing`, answered by `Registry::answer_existing`).
//! 7. [`guard`]: the mode admits a new version (`guard::mode_admits`).
//! 8. [`policy`]: what the verdict needs besides the snapshot: evolution settings and
//!    evidence, approvals, the removal gate, the parsed versions (`Registry::policy`).
//! 9. [`judge`]: the verdict, off the async workers under the check budget (`Registry::judge`
//!    over `Judged::verdict`: next version, compatibility with approvals, removal gate). A dry
//!    run stops here.
//! 10. [`write`]: the commit, only if config, mode and versions are still the snapshot's
//!     (`Registry::write`); otherwise the round is judged again.
//! 11. [`answer`]: the registration, cached, the removal gate told (`Registry::answer`).
//!
//! A round that finds the subject changed is run again from step 2, at most
//! [`REGISTER_ATTEMPTS`] times.

mod answer;
mod existing;
mod guard;
pub(crate) mod judge;
mod parse;
mod policy;
mod resolve;
mod snapshot;
mod write;

pub(crate) use judge::SubjectTurns;
pub use judge::WouldRegister;

use crate::answers::{RequestKey, Route};
use crate::{
    RegisterOptions, Registration, Registry, RegistryError, RegistryResult, SchemaRequest,
};
use judge::{Attempt, retry_pause};
use parse::Asked;
use policy::Candidate;

/// How often a registration is judged again when a concurrent write changed the subject (or
/// its config or mode) between the snapshot it was judged on and the commit.
pub(crate) const REGISTER_ATTEMPTS: usize = 12;

/// Whether a registration round writes what it judged ([`Registry::judge_registration`]
/// judges only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Commit {
    Yes,
    No,
}

impl Registry {
    /// `POST /subjects/{s}/versions`, following Confluent's registration algorithm.
    ///
    /// The candidate is judged outside the store's write lock against a snapshot of the
    /// subject, so a slow check never delays other subjects' writes; the store then commits
    /// only if the subject's versions are still exactly the snapshot, and config and mode were
    /// still the judged ones just before the commit. Otherwise the whole registration is
    /// judged again, a bounded number of times (optimistic concurrency).
    pub async fn register(
        &self,
        subject: &str,
        request: SchemaRequest,
        options: RegisterOptions<'_>,
    ) -> RegistryResult<Registration> {
        // Registrations of one subject on this node take turns: each would invalidate the
        // others' verdicts anyway. Other subjects never wait for this.
        let _turn = self.registering.turn(subject).await;
        let route = Route::Register {
            normalize: options.normalize,
        };
        let key = RequestKey::of(route, subject, &request);
        for attempt in 1..=REGISTER_ATTEMPTS {
            // A round after the first starts from the store: the subject changed since.
            let options = RegisterOptions {
                first_read: options.first_read.filter(|_| attempt == 1),
                ..options
            };
            if let Attempt::Done(registration) = self
                .register_attempt(subject, request.clone(), options, key, Commit::Yes)
                .await?
            {
                return Ok(registration);
            }
            tracing::debug!(
                subject,
                attempt,
                "subject changed while judging; judging again"
            );
            tokio::time::sleep(retry_pause(attempt)).await;
        }
        Err(RegistryError::Store(
            "registering schema: the subject kept changing".into(),
        ))
    }

    /// What `POST /subjects/{s}/versions` would do with `request`, judged by the very steps a
    /// registration takes (modes, data contracts, the verdict with approvals, the removal
    /// gate) without writing anything: the same refusal a registration would meet, or what it
    /// would register. Needs only the right to read the subject.
    pub async fn judge_registration(
        &self,
        subject: &str,
        request: SchemaRequest,
        normalize: bool,
    ) -> RegistryResult<WouldRegister> {
        let options = RegisterOptions {
            normalize,
            ..RegisterOptions::default()
        };
        for attempt in 1..=REGISTER_ATTEMPTS {
            if let Attempt::Judged(would) = self
                .register_attempt(subject, request.clone(), options, None, Commit::No)
                .await?
            {
                return Ok(would);
            }
            tokio::time::sleep(retry_pause(attempt)).await;
        }
        Err(RegistryError::Store(
            "judging a registration: the subject kept changing".into(),
        ))
    }

    /// One judge-then-commit round of [`Registry::register`] (with [`Commit::No`], of
    /// [`Registry::judge_registration`]: judged, never written): the pipeline of the module's
    /// steps.
    async fn register_attempt(
        &self,
        subject: &str,
        request: SchemaRequest,
        options: RegisterOptions<'_>,
        key: Option<RequestKey>,
        commit: Commit,
    ) -> RegistryResult<Attempt> {
        parse::validate(subject, &request)?;
        let snapshot = self
            .snapshot(subject, options.normalize, options.first_read)
            .await?;
        let request = parse::complete(request, &snapshot)?;
        let (parsed, schema) = self
            .prepare(subject, &request, snapshot.normalize, false)
            .await?;
        self.check_candidate_samples(&parsed, &request.samples)?;
        let asked = Asked::of(request.version)?;
        if let Some(v) = self.existing(&snapshot, &schema, asked.dedupe).await {
            return Ok(self.answer_existing(subject, v, key, snapshot.epoch, commit));
        }
        guard::mode_admits(subject, snapshot.mode, request.id)?;
        let candidate = Candidate {
            request: &request,
            parsed,
            schema: &schema,
            explicit_version: asked.explicit_version,
            force: options.force,
        };
        let judged = self.policy(subject, &snapshot, candidate).await?;
        let Some(passed) = self.judge(judged).await? else {
            return Ok(Attempt::Retry);
        };
        if commit == Commit::No {
            return Ok(Attempt::Judged(WouldRegister {
                existing_version: None,
                removes: passed.removes,
                approvals: passed.approvals,
            }));
        }
        let placement = asked.placement(snapshot.mode, request.id);
        let written = self
            .write(
                subject,
                &snapshot,
                &schema,
                placement,
                options.audit,
                &passed.approvals,
            )
            .await?;
        let Some(written) = written else {
            return Ok(Attempt::Retry);
        };
        let registration = self.answer(subject, key, written, schema, passed).await?;
        Ok(Attempt::Done(registration))
    }
}

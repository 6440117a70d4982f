//! The registration's answer step: the registration as the client gets it. A committed version
//! is answered with its schema as stored (an id shared with an earlier registration, with that
//! schema), which the id cache and the answers cache keep; a created version tells the removal
//! gate which fields went, and is logged. An existing version found by the existing step is
//! answered the same way, and a dry run answers what a registration would have done.

use super::Commit;
use super::judge::{Attempt, Passed, WouldRegister};
use super::write::Written;
use crate::answers::{Answer, RequestKey};
use crate::{Registration, Registry, RegistryResult};
use covenant_store::{NewSchema, SchemaRecord, StoredVersion};
use std::sync::Arc;

impl Registry {
    /// The answer when the candidate is the live version `v` already: returned (and its
    /// answer cached, if nothing was invalidated since `epoch`), or named by a dry run.
    pub(crate) fn answer_existing(
        &self,
        subject: &str,
        v: &StoredVersion,
        key: Option<RequestKey>,
        epoch: u64,
        commit: Commit,
    ) -> Attempt {
        if commit == Commit::No {
            return Attempt::Judged(WouldRegister {
                existing_version: Some(v.version),
                removes: Vec::new(),
                approvals: Vec::new(),
            });
        }
        let schema = Arc::new(v.schema.clone());
        self.remember(schema.clone());
        if let Some(key) = key {
            self.answers
                .insert(epoch, subject, key, Answer::of(v, schema.clone()));
        }
        Attempt::Done(Registration {
            id: v.schema.id,
            version: v.version,
            schema,
            created: false,
            approvals: Vec::new(),
        })
    }

    /// The answer of a committed registration of `schema`, whose verdict `passed`.
    pub(crate) async fn answer(
        &self,
        subject: &str,
        key: Option<RequestKey>,
        written: Written,
        schema: NewSchema,
        passed: Passed,
    ) -> RegistryResult<Registration> {
        let Written {
            outcome,
            before_commit,
        } = written;
        let record = Arc::new(SchemaRecord {
            id: outcome.id,
            schema_type: schema.schema_type,
            schema: schema.schema,
            references: schema.references,
            metadata: schema.metadata,
            rule_set: schema.rule_set,
            content_key: schema.content_key,
        });
        // An id shared with an earlier registration answers with that schema as stored.
        let record = match outcome.schema_created {
            true => record,
            false => match self.store.schema_by_id(outcome.id).await? {
                Some(stored) => Arc::new(stored),
                None => record,
            },
        };
        self.remember(record.clone());
        self.answer_registered(subject, key, before_commit, &outcome, &record);
        if outcome.created
            && !passed.removes.is_empty()
            && let Some(check) = self.removal_check()
        {
            check
                .removed(subject, &passed.removes, outcome.version)
                .await;
        }
        if outcome.created {
            tracing::info!(
                subject,
                id = outcome.id,
                version = outcome.version,
                "registered schema"
            );
        }
        Ok(Registration {
            id: outcome.id,
            version: outcome.version,
            schema: record,
            created: outcome.created,
            approvals: if outcome.created {
                passed.approvals
            } else {
                Vec::new()
            },
        })
    }

    /// Forgets the subject's cached answers after a registration wrote a version, then keeps
    /// this one's, unless anything else was invalidated since `before_commit` (see [`answers`]).
    pub(crate) fn answer_registered(
        &self,
        subject: &str,
        key: Option<RequestKey>,
        before_commit: u64,
        outcome: &covenant_store::Registered,
        schema: &Arc<SchemaRecord>,
    ) {
        // A write forgets the subject's answers; a version found in the store changed nothing.
        let (epoch, expected) = if outcome.created {
            (self.answers.forget_subject(subject), before_commit + 1)
        } else {
            (before_commit, before_commit)
        };
        if let Some(key) = key
            && epoch == expected
        {
            // Registration answers carry no time.
            let answer = Answer::new(outcome.version, false, 0, schema.clone());
            self.answers.insert(epoch, subject, key, answer);
        }
    }
}

//! Group commit for PostgreSQL: registrations that arrive together are written together.
//!
//! A registration alone is one transaction of a dozen statements sent one after another, and
//! each statement is a round trip that wakes both processes: on two cores shared with the
//! load, a new registration cost 0.7 ms of Covenant's processor time and 0.85 ms of
//! PostgreSQL's, most of it in sending, receiving and switching, not in executing (0.2 ms).
//! Here registrations queue for a few writers. A writer takes every registration queued (at
//! most [`MAX_GROUP`]) and writes them in one transaction whose every step is one statement
//! for all members ([`ops::register_group`]): a group costs the statements and round trips of
//! one registration (32 writers on the store alone: 1,231–1,491/s with a statement per member
//! and step, 2,970–2,993/s with one per step; benches/RESULTS.md). Under light load a group is
//! one registration, written by the same steps; under load the queue grows while the writers
//! are busy, and so do the groups.
//!
//! What stays the same: each registration is acknowledged only after the commit of the
//! transaction that wrote it; a group commits or rolls back whole, so a registration is never
//! half-written, even when its client leaves (the writer finishes the group regardless). The
//! locks are those of a single registration, taken in the same order, so groups and single
//! writes on any number of nodes cannot deadlock. When a group fails (a database error of any
//! member, a lost connection), its members are written again one by one, each in its own
//! transaction, so one bad member fails only itself. The queue holds at most the registrations
//! in flight, which the server's admission bounds.

use crate::postgres::pool_err;
use crate::registry_sql::{self as ops, Member};
use crate::sql::postgres::{in_transaction, pipelined};
use crate::{Registered, StoreError, StoreResult};
use deadpool_postgres::Pool;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::{Mutex, mpsc, oneshot};

/// Writers taking groups from the queue at once: each holds one pooled connection while it
/// writes. Two, so that one group commits while the next takes its locks; more only made the
/// groups smaller (one writer 1,513/s, four 1,453/s on the HTTP benchmark; with the queue
/// handed over at the commit, three gave 2,141–3,739/s against two's 3,281–3,817/s).
const WRITERS: usize = 2;

/// Longest a writer keeps the queue from the other writer while its group has not reached its
/// last round trip (see [`Writer::run`]).
const TURN_AT_MOST: std::time::Duration = std::time::Duration::from_millis(10);

/// Most registrations one group holds: each member's client waits for the whole group.
pub(crate) const MAX_GROUP: usize = 64;

/// The queue of registrations and the writers that take groups from it.
pub(crate) struct Groups {
    queue: mpsc::UnboundedSender<Queued>,
    /// Registrations written in groups of more than one, so far.
    grouped: Arc<AtomicU64>,
}

struct Queued {
    member: Member,
    answer: oneshot::Sender<StoreResult<Registered>>,
}

fn closed() -> StoreError {
    StoreError::Backend("the store's registration writers have stopped".into())
}

impl Groups {
    /// Starts the writers on `pool`; they end when the [`Groups`] is dropped. Must be called
    /// within a Tokio runtime.
    pub(crate) fn start(pool: Pool, target: String) -> Groups {
        let (queue, taken) = mpsc::unbounded_channel();
        let taken = Arc::new(Mutex::new(taken));
        let grouped = Arc::new(AtomicU64::new(0));
        for _ in 0..WRITERS {
            let writer = Writer {
                pool: pool.clone(),
                target: target.clone(),
                grouped: Arc::clone(&grouped),
            };
            tokio::spawn(writer.run(Arc::clone(&taken)));
        }
        Groups { queue, grouped }
    }

    /// Registrations written in groups of more than one, so far.
    pub(crate) fn grouped(&self) -> u64 {
        self.grouped.load(Ordering::Relaxed)
    }

    /// Writes `member` with whatever registrations are queued with it; answers once its
    /// transaction ended.
    pub(crate) async fn register(&self, member: Member) -> StoreResult<Registered> {
        let (answer, answered) = oneshot::channel();
        self.queue
            .send(Queued { member, answer })
            .map_err(|_| closed())?;
        answered.await.map_err(|_| closed())?
    }
}

/// One of the writers: a pooled connection at a time.
struct Writer {
    pool: Pool,
    target: String,
    grouped: Arc<AtomicU64>,
}

impl Writer {
    /// Takes every registration queued, up to [`MAX_GROUP`], and writes them; again and
    /// again until the queue closes.
    ///
    /// The queue is this writer's until its group reaches the round trip that commits: only
    /// then may the other writer gather. So the other writer's group holds everything that
    /// arrived while this one took its locks and wrote its schemas, and starts while this one
    /// commits. When each writer gathered as soon as it was free, the groups alternated between
    /// most of the registrations in flight and a single one, which cost PostgreSQL a group's
    /// statements for one registration (builds in turns on the HTTP benchmark: 3,436/s on
    /// average before, 3,914/s after, the processor time of the whole machine per registration
    /// 11 % lower; benches/RESULTS.md).
    async fn run(self, taken: Arc<Mutex<mpsc::UnboundedReceiver<Queued>>>) {
        loop {
            let mut queue = Arc::clone(&taken).lock_owned().await;
            let Some(first) = queue.recv().await else {
                return;
            };
            let mut group = vec![first];
            while group.len() < MAX_GROUP
                && let Ok(next) = queue.try_recv()
            {
                group.push(next);
            }
            let turn = std::sync::Mutex::new(Some(queue));
            let pass_turn = || drop(turn.lock().map(|mut t| t.take()));
            let mut parts = distinct_subjects(group);
            let last = parts.pop();
            let mut writes = std::pin::pin!(async {
                for part in parts {
                    self.write(part, || ()).await;
                }
                if let Some(part) = last {
                    self.write(part, pass_turn).await;
                }
            });
            tokio::select! {
                biased;
                () = &mut writes => {}
                // A group waiting on a lock that another node holds keeps this node's other
                // writer waiting no longer than this.
                () = tokio::time::sleep(TURN_AT_MOST) => {
                    pass_turn();
                    writes.await;
                }
            }
        }
    }

    /// Writes one group of distinct subjects and answers each member; `last_round` as in
    /// [`ops::register_group`].
    async fn write(&self, part: Vec<Queued>, last_round: impl FnOnce()) {
        let (members, answers): (Vec<Member>, Vec<_>) =
            part.into_iter().map(|q| (q.member, q.answer)).unzip();
        // A group of one too: its steps take 3 round trips, BEGIN and COMMIT included, where
        // `ops::register_member` takes 12.
        let results = self.group(&members, last_round).await;
        for (answer, result) in answers.into_iter().zip(results) {
            // A client that left still had its registration written (or not) whole.
            let _ = answer.send(result);
        }
    }

    /// Writes `members` in one transaction, or one at a time when that fails.
    async fn group(
        &self,
        members: &[Member],
        last_round: impl FnOnce(),
    ) -> Vec<StoreResult<Registered>> {
        let client = match self.client().await {
            Ok(client) => client,
            // No connection to be had: one at a time, each would wait as long again.
            Err(e) => {
                let failed = |_| Err(StoreError::Backend(e.to_string()));
                return members.iter().map(failed).collect();
            }
        };
        let written = pipelined(client, async |tx| {
            Ok::<_, StoreError>(ops::register_group(tx, members, last_round).await?)
        })
        .await;
        match written {
            Ok(results) => {
                let n = members.len() as u64;
                // Groups of more than one: what a registration alone would not have had.
                if n > 1 {
                    self.grouped.fetch_add(n, Ordering::Relaxed);
                    metrics::counter!("covenant_store_pg_groups_total").increment(1);
                    metrics::counter!("covenant_store_pg_group_writes_total").increment(n);
                }
                results
            }
            Err(e) => {
                tracing::debug!(error = %e, members = members.len(), "group failed; writing its members one by one");
                // One at a time: a rare path, which must not take the pool's connections from
                // every other request at once.
                let mut results = Vec::with_capacity(members.len());
                for m in members {
                    results.push(self.alone(m).await);
                }
                results
            }
        }
    }

    async fn alone(&self, m: &Member) -> StoreResult<Registered> {
        let mut client = self.client().await?;
        in_transaction(&mut client, false, async |tx| {
            ops::register_member(tx, m).await
        })
        .await
    }

    async fn client(&self) -> StoreResult<deadpool_postgres::Object> {
        self.pool.get().await.map_err(|e| pool_err(e, &self.target))
    }
}

/// Splits `group` into groups whose members' subjects differ, in queue order: a subject's
/// second registration is judged against its first, so it waits for the first's commit.
fn distinct_subjects(group: Vec<Queued>) -> Vec<Vec<Queued>> {
    let mut parts: Vec<Vec<Queued>> = Vec::new();
    for queued in group {
        let subject = &queued.member.subject;
        let first_free = parts
            .iter()
            .rposition(|p| p.iter().any(|q| &q.member.subject == subject))
            .map_or(0, |last| last + 1);
        match parts.get_mut(first_free) {
            Some(part) => part.push(queued),
            None => parts.push(vec![queued]),
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::schema;
    use crate::{Placement, SharedGuard};

    fn queued(subject: &str) -> Queued {
        let allow: SharedGuard = Arc::new(|_: &[crate::StoredVersion]| Ok(()));
        Queued {
            member: Member {
                subject: subject.into(),
                candidate: schema(subject),
                placement: Placement::default(),
                guard: allow,
                settings: None,
                audit: None,
            },
            answer: oneshot::channel().0,
        }
    }

    #[test]
    fn a_subject_registered_twice_waits_for_the_next_group() {
        let group = ["a", "b", "a", "c", "a", "b"]
            .map(queued)
            .into_iter()
            .collect();
        let parts: Vec<Vec<String>> = distinct_subjects(group)
            .into_iter()
            .map(|p| p.into_iter().map(|q| q.member.subject).collect())
            .collect();
        assert_eq!(parts, [vec!["a", "b", "c"], vec!["a", "b"], vec!["a"]]);
    }
}

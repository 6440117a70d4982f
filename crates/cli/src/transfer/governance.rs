//! The governance part of a dump (format 2): consumers, deprecations, approvals, findings and usage
//! buckets as the governance store holds them, samples and live marks as the sample store
//! holds them. Read with one snapshot per store, restored row for row (see
//! [`GovernanceStore::restore`] and [`SampleStore::restore_samples`] for why not through the
//! workflow, and how a second import leaves one copy).

use super::Dump;
use anyhow::{Context, Result, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use covenant_store::governance::{GovernanceSnapshot, RestoreCounts};
use covenant_store::{GovernanceStore, LiveMark, SampleRecord, SampleStore, SamplesRestored};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// A stored sample; the payload is base64 (standard alphabet, padded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DumpSample {
    pub id: i64,
    pub subject: String,
    pub version: i64,
    pub encoding: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_name: Option<String>,
    pub payload: String,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DumpLiveMark {
    pub subject: String,
    pub version: i64,
    pub marked_at: i64,
}

impl DumpSample {
    fn of(record: SampleRecord) -> DumpSample {
        DumpSample {
            id: record.id,
            subject: record.subject,
            version: record.version,
            encoding: record.encoding,
            message_name: record.message_name,
            payload: STANDARD.encode(record.payload),
            created_at: record.created_at,
        }
    }

    fn record(&self) -> Result<SampleRecord> {
        let payload = STANDARD.decode(&self.payload).with_context(|| {
            format!(
                "sample {} of subject '{}' has a payload that is not base64",
                self.id, self.subject
            )
        })?;
        Ok(SampleRecord {
            id: self.id,
            subject: self.subject.clone(),
            version: self.version,
            encoding: self.encoding.clone(),
            message_name: self.message_name.clone(),
            payload,
            created_at: self.created_at,
        })
    }
}

/// The governance and sample sections of a dump.
pub async fn export(
    governance: &dyn GovernanceStore,
    samples: &dyn SampleStore,
) -> Result<(GovernanceSnapshot, Vec<DumpSample>, Vec<DumpLiveMark>)> {
    let snapshot = governance
        .snapshot()
        .await
        .map_err(|e| anyhow::anyhow!("cannot read governance: {e}"))?;
    let (records, marks) = samples
        .snapshot()
        .await
        .context("cannot read the samples")?;
    let marks = marks
        .into_iter()
        .map(|m| DumpLiveMark {
            subject: m.subject,
            version: m.version,
            marked_at: m.marked_at,
        })
        .collect();
    Ok((
        snapshot,
        records.into_iter().map(DumpSample::of).collect(),
        marks,
    ))
}

/// Refuses what a store would refuse half-way: a name or id twice, a payload that is not base64.
pub fn validate(dump: &Dump) -> Result<()> {
    fn unique<T: Ord + std::fmt::Display>(what: &str, keys: impl Iterator<Item = T>) -> Result<()> {
        let mut seen = BTreeSet::new();
        for key in keys {
            if seen.contains(&key) {
                bail!("{what} {key} appears twice in the dump");
            }
            seen.insert(key);
        }
        Ok(())
    }
    let g = &dump.governance;
    unique(
        "consumer",
        g.consumers.iter().map(|c| format!("'{}'", c.name)),
    )?;
    unique("deprecation", g.deprecations.iter().map(|d| d.id))?;
    unique("approval", g.approvals.iter().map(|a| a.id))?;
    unique("sample", dump.samples.iter().map(|s| s.id))?;
    unique(
        "live mark",
        dump.live_marks
            .iter()
            .map(|m| format!("of version {} of subject '{}'", m.version, m.subject)),
    )?;
    for sample in &dump.samples {
        sample.record()?;
    }
    Ok(())
}

/// What restoring the governance and sample sections did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Restored {
    pub governance: RestoreCounts,
    pub samples: SamplesRestored,
}

/// Restores the sections, governance first (one transaction), then samples (another).
pub async fn import(
    governance: &dyn GovernanceStore,
    samples: &dyn SampleStore,
    dump: &Dump,
) -> Result<Restored> {
    let governance = governance
        .restore(&dump.governance)
        .await
        .map_err(|e| anyhow::anyhow!("cannot import governance: {e}"))?;
    let records = dump
        .samples
        .iter()
        .map(DumpSample::record)
        .collect::<Result<Vec<_>>>()?;
    let marks: Vec<LiveMark> = dump
        .live_marks
        .iter()
        .map(|m| LiveMark {
            subject: m.subject.clone(),
            version: m.version,
            marked_at: m.marked_at,
        })
        .collect();
    let samples = samples
        .restore_samples(&records, &marks)
        .await
        .context("cannot import the samples")?;
    Ok(Restored {
        governance,
        samples,
    })
}

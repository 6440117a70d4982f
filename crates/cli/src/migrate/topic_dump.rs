//! Rebuilding a registry's state from a dump of Confluent's `_schemas` topic (also written by
//! Karapace): one record per line, key JSON, a tab, value JSON; an empty or `null` value is a
//! tombstone. Records are applied in order the way the registries' own readers apply them.

use super::records::{add_schema, config_from, empty_dump, schema_from};
use crate::transfer::{Dump, DumpMode, DumpSchema, DumpSubject, DumpVersion};
use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::collections::BTreeMap;

/// The state the records leave, and how many records were of a type that keeps nothing here.
pub struct Restored {
    pub dump: Dump,
    pub skipped: usize,
}

/// The registry state after the topic's records, in order.
#[derive(Default)]
struct State {
    versions: BTreeMap<String, BTreeMap<i64, (DumpSchema, bool)>>,
    configs: BTreeMap<Option<String>, Value>,
    modes: BTreeMap<Option<String>, String>,
    skipped: usize,
}

pub fn restore(text: &str) -> Result<Restored> {
    let mut state = State::default();
    for (ix, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        state
            .apply_line(line)
            .with_context(|| format!("topic dump line {}", ix + 1))?;
    }
    let skipped = state.skipped;
    Ok(Restored {
        dump: state.into_dump()?,
        skipped,
    })
}

/// The key and value of one line; `None` for a tombstone.
fn split(line: &str) -> Result<(Value, Option<Value>)> {
    let (key, value) = line.split_once('\t').unwrap_or((line, ""));
    let key: Value = serde_json::from_str(key).context("the key is not JSON")?;
    if !key.is_object() {
        bail!("the key is not a JSON object");
    }
    let value = match value.trim() {
        "" | "null" | "NULL" => None,
        text => Some(serde_json::from_str(text).context("the value is not JSON")?),
    };
    Ok((key, value))
}

/// The subject a key names; absent or null is the global scope of CONFIG and MODE.
fn subject_of(key: &Value) -> Option<String> {
    key.get("subject")
        .and_then(Value::as_str)
        .map(str::to_string)
}

impl State {
    fn apply_line(&mut self, line: &str) -> Result<()> {
        let (key, value) = split(line)?;
        let keytype = key
            .get("keytype")
            .and_then(Value::as_str)
            .context("the key has no 'keytype'")?;
        match keytype {
            "SCHEMA" => self.schema(&key, value),
            "CONFIG" => {
                let scope = subject_of(&key);
                match value {
                    Some(v) => self.configs.insert(scope, v),
                    None => self.configs.remove(&scope),
                };
                Ok(())
            }
            "MODE" => self.mode(&key, value),
            "DELETE_SUBJECT" => self.delete_subject(&key, value),
            // Cache clearing, offset probes and context bookkeeping change no kept state.
            "NOOP" | "CLEAR_SUBJECT" | "CONTEXT" => Ok(()),
            _ => {
                self.skipped += 1;
                Ok(())
            }
        }
    }

    fn schema(&mut self, key: &Value, value: Option<Value>) -> Result<()> {
        let subject = subject_of(key).context("a SCHEMA key without 'subject'")?;
        let version = key
            .get("version")
            .and_then(Value::as_i64)
            .context("a SCHEMA key without a numeric 'version'")?;
        let Some(value) = value else {
            if let Some(versions) = self.versions.get_mut(&subject) {
                versions.remove(&version);
            }
            return Ok(());
        };
        let schema = schema_from(&value)?;
        let deleted = value
            .get("deleted")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        self.versions
            .entry(subject)
            .or_default()
            .insert(version, (schema, deleted));
        Ok(())
    }

    fn mode(&mut self, key: &Value, value: Option<Value>) -> Result<()> {
        let scope = subject_of(key);
        match value {
            None => {
                self.modes.remove(&scope);
            }
            Some(v) => {
                let mode = v
                    .get("mode")
                    .and_then(Value::as_str)
                    .context("a MODE value without 'mode'")?;
                self.modes.insert(scope, mode.to_string());
            }
        }
        Ok(())
    }

    /// Soft-deletes every version up to the one the value names, as Confluent's reader does.
    fn delete_subject(&mut self, key: &Value, value: Option<Value>) -> Result<()> {
        let value = value.context("a DELETE_SUBJECT record without a value")?;
        let subject = value
            .get("subject")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| subject_of(key))
            .context("a DELETE_SUBJECT record without 'subject'")?;
        let upto = value
            .get("version")
            .and_then(Value::as_i64)
            .context("a DELETE_SUBJECT value without a numeric 'version'")?;
        if let Some(versions) = self.versions.get_mut(&subject) {
            for (_, (_, deleted)) in versions.range_mut(..=upto) {
                *deleted = true;
            }
        }
        Ok(())
    }

    fn into_dump(self) -> Result<Dump> {
        let mut dump = empty_dump();
        let mut schemas = BTreeMap::new();
        for (name, versions) in self.versions {
            if versions.is_empty() {
                continue;
            }
            let mut subject = DumpSubject {
                name,
                versions: Vec::new(),
            };
            for (version, (schema, deleted)) in versions {
                subject.versions.push(DumpVersion {
                    version,
                    id: schema.id,
                    deleted,
                    created_at: None,
                });
                add_schema(&mut schemas, &subject.name, schema)?;
            }
            dump.subjects.push(subject);
        }
        dump.schemas = schemas.into_values().map(|(_, s)| s).collect();
        dump.configs = self
            .configs
            .iter()
            .map(|(scope, value)| config_from(scope.as_deref(), value))
            .collect();
        dump.modes = self
            .modes
            .into_iter()
            .map(|(subject, mode)| DumpMode { subject, mode })
            .collect();
        Ok(dump)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AVRO: &str = r#"{\"type\":\"record\",\"name\":\"Order\",\"fields\":[{\"name\":\"id\",\"type\":\"long\"}]}"#;

    fn schema_line(subject: &str, version: i64, id: i64, deleted: bool) -> String {
        format!(
            "{{\"keytype\":\"SCHEMA\",\"subject\":\"{subject}\",\"version\":{version},\"magic\":1}}\t\
             {{\"subject\":\"{subject}\",\"version\":{version},\"id\":{id},\"schema\":\"{AVRO}\",\"deleted\":{deleted}}}"
        )
    }

    #[test]
    fn records_apply_in_order() {
        let text = [
            schema_line("orders-value", 1, 1, false),
            schema_line("orders-value", 2, 1, false),
            schema_line("orders-value", 2, 1, true),
            schema_line("gone", 1, 1, false),
            "{\"keytype\":\"SCHEMA\",\"subject\":\"gone\",\"version\":1,\"magic\":1}\t".into(),
            "{\"keytype\":\"CONFIG\",\"magic\":0}\t{\"compatibilityLevel\":\"FULL\"}".into(),
            "{\"keytype\":\"CONFIG\",\"subject\":null,\"magic\":0}\t{\"compatibilityLevel\":\"NONE\"}"
                .into(),
            "{\"keytype\":\"MODE\",\"subject\":\"orders-value\",\"magic\":0}\t{\"subject\":\"orders-value\",\"mode\":\"READONLY\"}".into(),
            "{\"keytype\":\"NOOP\",\"magic\":0}\tnull".into(),
            "{\"keytype\":\"ASSOC\",\"magic\":0}\t{}".into(),
        ]
        .join("\n");
        let restored = restore(&text).expect("restores");
        let dump = restored.dump;
        assert_eq!(restored.skipped, 1);
        assert_eq!(dump.subjects.len(), 1, "the tombstone removed 'gone'");
        let deleted: Vec<(i64, bool)> = dump.subjects[0]
            .versions
            .iter()
            .map(|v| (v.version, v.deleted))
            .collect();
        assert_eq!(deleted, [(1, false), (2, true)]);
        assert_eq!(dump.configs.len(), 1, "both global keys are one scope");
        assert_eq!(dump.configs[0].compatibility.as_deref(), Some("NONE"));
        assert_eq!(dump.modes[0].mode, "READONLY");
    }

    #[test]
    fn delete_subject_soft_deletes_up_to_its_version() {
        let text = [
            schema_line("s", 1, 3, false),
            schema_line("s", 2, 3, false),
            schema_line("s", 3, 3, false),
            "{\"keytype\":\"DELETE_SUBJECT\",\"subject\":\"s\",\"magic\":0}\t{\"subject\":\"s\",\"version\":2}".into(),
        ]
        .join("\n");
        let dump = restore(&text).expect("restores").dump;
        let deleted: Vec<bool> = dump.subjects[0]
            .versions
            .iter()
            .map(|v| v.deleted)
            .collect();
        assert_eq!(deleted, [true, true, false]);
    }

    #[test]
    fn bad_lines_name_their_line() {
        let text = format!("{}\nnot json\t{{}}", schema_line("s", 1, 1, false));
        let err = restore(&text).err().expect("refused");
        assert!(
            format!("{err:#}").starts_with("topic dump line 2"),
            "{err:#}"
        );
        let err = restore("{\"keytype\":\"DELETE_SUBJECT\",\"subject\":\"s\"}\t")
            .err()
            .expect("refused");
        assert!(format!("{err:#}").contains("without a value"), "{err:#}");
    }
}

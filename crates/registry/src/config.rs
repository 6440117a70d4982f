//! Config along a subject's scope chain (subject, context, global; see [`crate::contexts`]):
//! the effective config a registration is judged under, the config routes, aliases, and the
//! config and mode rows kept in memory when this process is the store's only writer.

use crate::contexts::{self, scope_for};
use crate::contract::validate_rule_set;
use crate::{
    Registry, RegistryError, RegistryResult, SubjectUse, answers, evolution, profiles,
    validate_subject,
};
use covenant_engine::{CheckOptions, JsonPolicy, Level, ProtobufStrictness};
use covenant_store::{Audit, ConfigRecord, Scope};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::str::FromStr;

/// A config as read: the effective level plus the scope's other settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigView {
    pub level: Level,
    pub extra: Map<String, Value>,
}

impl ConfigView {
    /// Whether schema text is normalized: when the request asks (`requested`) or the config's
    /// `normalize` setting says so.
    pub fn normalizes(&self, requested: bool) -> bool {
        requested || self.extra.get("normalize").and_then(Value::as_bool) == Some(true)
    }
}

/// A partial config update: absent keys keep their value, `Some(Value::Null)` clears one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigUpdate {
    pub compatibility: Option<Value>,
    pub extra: Map<String, Value>,
}

pub(crate) fn scope_cache_key(scope: Scope<'_>) -> Option<String> {
    match scope {
        Scope::Global => None,
        Scope::Subject(s) => Some(s.to_string()),
    }
}

pub(crate) fn check_options(extra: &Map<String, Value>) -> CheckOptions {
    let mut options = CheckOptions::default();
    if let Some(s) = extra
        .get("protobufStrictness")
        .and_then(Value::as_str)
        .and_then(ProtobufStrictness::parse)
    {
        options.protobuf_strictness = s;
    }
    if extra
        .get("compatibilityPolicy")
        .and_then(Value::as_str)
        .is_some_and(|p| p.eq_ignore_ascii_case("LENIENT"))
    {
        options.json_policy = JsonPolicy::Lenient;
    }
    options
}

pub(crate) fn group_value<'a>(metadata: &'a Option<Value>, group: &str) -> Option<&'a Value> {
    metadata
        .as_ref()
        .and_then(|m| m.get("properties"))
        .and_then(|p| p.get(group))
}

impl Registry {
    /// The subject's config merged along its scope chain (see [`contexts`]): the level of the
    /// most specific scope that sets one, the extra settings of all, nearer ones winning.
    pub(crate) async fn effective_config(&self, subject: &str) -> RegistryResult<ConfigView> {
        let mut records = Vec::new();
        for key in contexts::scope_chain(Some(subject)) {
            records.push(self.config_row(contexts::scope(&key)).await?);
        }
        let mut extra = Map::new();
        for record in records.iter().rev().flatten() {
            for (k, v) in &record.extra {
                extra.insert(k.clone(), v.clone());
            }
        }
        let level = records
            .iter()
            .flatten()
            .find_map(|c| c.compatibility.as_deref())
            .and_then(|l| Level::from_str(l).ok())
            .unwrap_or(self.default_level);
        Ok(ConfigView { level, extra })
    }

    /// The config row of `scope`, from memory when this process is the store's only writer
    /// (every change then goes through [`Registry::set_config`] and friends, which forget it).
    pub(crate) async fn config_row(
        &self,
        scope: Scope<'_>,
    ) -> RegistryResult<Option<ConfigRecord>> {
        if !self.store.only_writer() {
            return Ok(self.store.config(scope).await?);
        }
        let key = scope_cache_key(scope);
        if let Some(row) = self.answers.config(&key) {
            return Ok(row);
        }
        Ok(self.read_rows(scope).await?.0)
    }

    /// The mode row of `scope`, like [`Registry::config_row`].
    pub(crate) async fn mode_row(&self, scope: Scope<'_>) -> RegistryResult<Option<String>> {
        if !self.store.only_writer() {
            return Ok(self.store.mode(scope).await?);
        }
        let key = scope_cache_key(scope);
        if let Some(row) = self.answers.mode(&key) {
            return Ok(row);
        }
        Ok(self.read_rows(scope).await?.1)
    }

    /// Reads the config and mode rows of `scope` into the answers cache (every row the first
    /// time, then only those of a changed scope) and returns that scope's two.
    pub(crate) async fn read_rows(
        &self,
        scope: Scope<'_>,
    ) -> RegistryResult<(Option<ConfigRecord>, Option<String>)> {
        let epoch = self.answers.epoch();
        let key = scope_cache_key(scope);
        if self.answers.rows_loaded() {
            let config = self.store.config(scope).await?;
            let mode = self.store.mode(scope).await?;
            self.answers
                .known_again(epoch, key, config.clone(), mode.clone());
            return Ok((config, mode));
        }
        let configs: HashMap<_, _> = self.store.all_configs().await?.into_iter().collect();
        let modes: HashMap<_, _> = self.store.all_modes().await?.into_iter().collect();
        let own = (configs.get(&key).cloned(), modes.get(&key).cloned());
        self.answers.load_rows(
            epoch,
            answers::Rows {
                configs,
                modes,
                unknown: HashSet::new(),
            },
        );
        Ok(own)
    }

    /// The first config along `subject`'s chain after its own scope, as `defaultToGlobal`
    /// reads it.
    pub(crate) async fn inherited_config(
        &self,
        subject: Option<&str>,
    ) -> RegistryResult<ConfigView> {
        for key in contexts::scope_chain(subject).iter().skip(1) {
            if let Some(c) = self.config_row(contexts::scope(key)).await? {
                return Ok(self.config_view(c));
            }
        }
        Ok(ConfigView {
            level: self.default_level,
            extra: Map::new(),
        })
    }

    pub(crate) fn config_view(&self, c: ConfigRecord) -> ConfigView {
        ConfigView {
            level: c
                .compatibility
                .as_deref()
                .and_then(|l| Level::from_str(l).ok())
                .unwrap_or(self.default_level),
            extra: c.extra,
        }
    }

    /// The subject that reads of `subject` go to: the `alias` of its own config (one step, so
    /// aliases cannot loop), as in Confluent, or `None` when it names no other subject.
    pub async fn alias_target(&self, subject: &str) -> RegistryResult<Option<String>> {
        if let Some(target) = self.answers.alias(subject) {
            return Ok(target);
        }
        let epoch = self.answers.epoch();
        let config = self.store.config(Scope::Subject(subject)).await?;
        let target = config
            .and_then(|c| {
                c.extra
                    .get("alias")
                    .and_then(Value::as_str)
                    .filter(|alias| !alias.is_empty())
                    .map(|alias| covenant_store::context::qualify_with_parent(subject, alias))
            })
            .filter(|target| target != subject);
        self.answers.insert_alias(epoch, subject, target.clone());
        Ok(target)
    }

    /// `GET /config[/{s}]`.
    pub async fn config(
        &self,
        subject: Option<&str>,
        default_to_global: bool,
    ) -> RegistryResult<ConfigView> {
        let scope = scope_for(subject);
        match (self.store.config(scope).await?, scope) {
            (Some(c), _) => Ok(self.config_view(c)),
            (None, Scope::Global) if !default_to_global => Ok(ConfigView {
                level: self.default_level,
                extra: Map::new(),
            }),
            (None, Scope::Subject(s)) if !default_to_global => {
                Err(RegistryError::SubjectConfigNotFound(s.to_string()))
            }
            (None, _) => self.inherited_config(subject).await,
        }
    }

    /// `PUT /config[/{s}]`: a partial update; returns the stored record.
    pub async fn set_config(
        &self,
        subject: Option<&str>,
        update: ConfigUpdate,
        audit: Audit<'_>,
    ) -> RegistryResult<ConfigRecord> {
        if let Some(s) = subject {
            validate_subject(s, SubjectUse::ConfigOrMode)?;
        }
        let scope = scope_for(subject);
        self.ensure_writable(scope).await?;
        let mut record = self.store.config(scope).await?.unwrap_or_default();
        match update.compatibility {
            None => {}
            Some(Value::Null) => record.compatibility = None,
            Some(Value::String(level)) => {
                let level = Level::from_str(&level)
                    .map_err(|_| RegistryError::InvalidCompatibilityLevel)?;
                record.compatibility = Some(level.as_str().to_string());
            }
            Some(_) => return Err(RegistryError::InvalidCompatibilityLevel),
        }
        for key in ["defaultRuleSet", "overrideRuleSet"] {
            if let Some(v) = update.extra.get(key) {
                validate_rule_set(&Some(v.clone()))?;
            }
        }
        evolution::validate_update(&update.extra)?;
        profiles::validate_update(&update.extra)?;
        if let Some(v) = update.extra.get("protobufStrictness")
            && !v.is_null()
            && v.as_str().and_then(ProtobufStrictness::parse).is_none()
        {
            return Err(RegistryError::InvalidSchema(
                "Invalid protobufStrictness. Valid values are confluent, wire and wire_json".into(),
            ));
        }
        for (k, v) in update.extra {
            if v.is_null() {
                record.extra.remove(&k);
            } else {
                record.extra.insert(k, v);
            }
        }
        self.store.set_config(scope, &record, audit).await?;
        self.answers.scope_changed(scope_cache_key(scope));
        Ok(record)
    }

    /// `DELETE /config[/{s}]`: returns the previous config.
    pub async fn delete_config(
        &self,
        subject: Option<&str>,
        audit: Audit<'_>,
    ) -> RegistryResult<ConfigView> {
        let scope = scope_for(subject);
        self.ensure_writable(scope).await?;
        let deleted = self.store.delete_config(scope, audit).await?;
        self.answers.scope_changed(scope_cache_key(scope));
        match (deleted, scope) {
            (Some(old), _) => Ok(self.config_view(old)),
            (None, Scope::Subject(s)) => Err(RegistryError::SubjectNotFound(s.to_string())),
            (None, Scope::Global) => Ok(ConfigView {
                level: self.default_level,
                extra: Map::new(),
            }),
        }
    }
}

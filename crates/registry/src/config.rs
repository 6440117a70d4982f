//! Config along a subject's scope chain (subject, context, global; see [`crate::contexts`]):
//! the effective config a registration is judged under, the config routes, aliases, and the
//! config and mode rows kept in memory when this process is the store's only writer.

use crate::contexts::{self, ScopeKey, scope_for};
use crate::contract::validate_rule_set;
use crate::mode::Mode;
use crate::{
    Registry, RegistryError, RegistryResult, SubjectUse, answers, evolution, profiles,
    validate_subject,
};
use covenant_engine::{CheckOptions, JsonPolicy, Level, ProtobufStrictness};
use covenant_store::{Audit, ConfigRecord, Scope, Settings, StoredVersion};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::str::FromStr;
use std::sync::Arc;

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

/// What a registration or lookup by content reads first of its subject, read by the request
/// itself (with its alias, see [`Registry::alias_target_for_content`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SubjectRead {
    /// The answers' epoch read before the versions were.
    pub(crate) epoch: u64,
    pub(crate) chain: ChainSettings,
    pub(crate) versions: Arc<Vec<StoredVersion>>,
}

/// The scope chain of `subject` (the global scope's for `None`), nearest first, and the keys
/// of the rows read for it: the chain's, the global scope's and the subject's own.
fn chain_keys(subject: Option<&str>) -> (Vec<ScopeKey>, Vec<ScopeKey>) {
    let chain = contexts::scope_chain(subject);
    let mut keys = chain.clone();
    for key in [None, subject.map(str::to_string)] {
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    (chain, keys)
}

/// The config and mode rows a request is judged by, read together (a registration reads them
/// for its snapshot and again just before its commit): those along a subject's scope chain
/// (see [`contexts`]), the global scope's and the subject's own.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChainSettings {
    /// The chain's scopes, nearest first.
    chain: Vec<ScopeKey>,
    rows: HashMap<ScopeKey, Settings>,
}

impl ChainSettings {
    fn row(&self, key: &ScopeKey) -> Option<&Settings> {
        self.rows.get(key)
    }

    /// Each scope read with its rows.
    fn rows(&self) -> impl Iterator<Item = (&ScopeKey, &Settings)> {
        self.rows.iter()
    }

    /// The scopes whose rows these are.
    pub(crate) fn scopes(&self) -> Vec<ScopeKey> {
        self.rows.keys().cloned().collect()
    }

    /// `chain` with `rows`, read for `keys` (in their order).
    fn of_rows(chain: Vec<ScopeKey>, keys: Vec<ScopeKey>, rows: Vec<Settings>) -> ChainSettings {
        ChainSettings {
            chain,
            rows: keys.into_iter().zip(rows).collect(),
        }
    }

    /// The same chain with `rows` read again for `keys` (in their order).
    pub(crate) fn with_rows(&self, keys: &[ScopeKey], rows: &[Settings]) -> ChainSettings {
        ChainSettings::of_rows(self.chain.clone(), keys.to_vec(), rows.to_vec())
    }

    /// The config rows along the chain, nearest first.
    fn chain_configs(&self) -> impl Iterator<Item = &ConfigRecord> {
        self.chain
            .iter()
            .filter_map(|k| self.row(k)?.config.as_ref())
    }

    /// The config merged along the chain: the level of the nearest scope that sets one (else
    /// `default_level`), the extra settings of all, nearer ones winning.
    pub(crate) fn config(&self, default_level: Level) -> ConfigView {
        let records: Vec<&ConfigRecord> = self.chain_configs().collect();
        let mut extra = Map::new();
        for record in records.iter().rev() {
            for (k, v) in &record.extra {
                extra.insert(k.clone(), v.clone());
            }
        }
        let level = records
            .iter()
            .find_map(|c| c.compatibility.as_deref())
            .and_then(|l| Level::from_str(l).ok())
            .unwrap_or(default_level);
        ConfigView { level, extra }
    }

    /// The mode of the nearest scope that sets one; the default context's global
    /// READONLY_OVERRIDE stops every context.
    pub(crate) fn mode(&self) -> RegistryResult<Mode> {
        let global = self.row(&None).and_then(|r| r.mode.as_deref());
        if let Some(Mode::ReadOnlyOverride) = global.and_then(|m| Mode::parse(m).ok()) {
            return Ok(Mode::ReadOnlyOverride);
        }
        match self.chain.iter().find_map(|k| self.row(k)?.mode.as_deref()) {
            Some(mode) => Mode::parse(mode),
            None => Ok(Mode::ReadWrite),
        }
    }

    /// The config row of the global scope (`None`) or of one subject.
    pub(crate) fn own_config(&self, key: &ScopeKey) -> Option<&ConfigRecord> {
        self.row(key)?.config.as_ref()
    }

    /// The configs along the chain, nearest first, for settings taken from the nearest scope
    /// that sets them.
    pub(crate) fn nearest<T>(&self, take: impl Fn(&ConfigRecord) -> Option<T>) -> Option<T> {
        self.chain_configs().find_map(take)
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
    /// What a registration or lookup by content reads first of `subject`: `first`, the read
    /// its alias lookup made ([`Registry::alias_target_for_content`]), else a read of its own.
    pub(crate) async fn subject_read(
        &self,
        subject: &str,
        first: Option<&SubjectRead>,
    ) -> RegistryResult<SubjectRead> {
        if let Some(read) = first {
            return Ok(read.clone());
        }
        let epoch = self.answers.epoch();
        let (chain, versions) = if self.store.only_writer() {
            let chain = self.chain_settings(Some(subject)).await?;
            (chain, self.store.subject_versions(subject).await?)
        } else {
            self.chain_and_versions(subject).await?
        };
        Ok(SubjectRead {
            epoch,
            chain,
            versions: Arc::new(versions),
        })
    }

    /// The subject's config merged along its scope chain (see [`ChainSettings::config`]).
    pub(crate) async fn effective_config(&self, subject: &str) -> RegistryResult<ConfigView> {
        Ok(self
            .chain_settings(Some(subject))
            .await?
            .config(self.default_level))
    }

    /// The config and mode rows along `subject`'s scope chain (the global scope's for
    /// `None`), with the global scope's and the subject's own: from memory when this process is
    /// the store's only writer, else in one read of the store.
    pub(crate) async fn chain_settings(
        &self,
        subject: Option<&str>,
    ) -> RegistryResult<ChainSettings> {
        let (chain, keys) = chain_keys(subject);
        let scopes: Vec<Scope<'_>> = keys.iter().map(contexts::scope).collect();
        let rows = if self.store.only_writer() {
            let mut rows = Vec::with_capacity(scopes.len());
            for scope in &scopes {
                rows.push(Settings {
                    config: self.config_row(*scope).await?,
                    mode: self.mode_row(*scope).await?,
                });
            }
            rows
        } else {
            self.store.settings(&scopes).await?
        };
        drop(scopes);
        Ok(ChainSettings::of_rows(chain, keys, rows))
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
        let epoch = self.answers.rows_epoch();
        let key = scope_cache_key(scope);
        if self.answers.rows_loaded() {
            let Settings { config, mode } = self
                .store
                .settings(&[scope])
                .await?
                .pop()
                .unwrap_or_default();
            self.answers
                .known_again(epoch, key, config.clone(), mode.clone());
            return Ok((config, mode));
        }
        self.load_rows(&key).await
    }

    /// Reads every config and mode row into the answers cache; returns those of `key`.
    async fn load_rows(
        &self,
        key: &ScopeKey,
    ) -> RegistryResult<(Option<ConfigRecord>, Option<String>)> {
        let epoch = self.answers.rows_epoch();
        let configs: HashMap<_, _> = self.store.all_configs().await?.into_iter().collect();
        let modes: HashMap<_, _> = self.store.all_modes().await?.into_iter().collect();
        let own = (configs.get(key).cloned(), modes.get(key).cloned());
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
        Ok(self.alias_target_reading(subject, false).await?.0)
    }

    /// [`Registry::alias_target`] for a registration or a lookup by content, which read the
    /// subject's scope chain and versions first: where the alias is read from a store with
    /// other writers, one round trip reads those with it, and they come back to be passed to
    /// [`Registry::register`] (`RegisterOptions::first_read`) or [`Registry::lookup`]. On
    /// PostgreSQL a new subject's registration then makes one round trip before its commit,
    /// where it made four (alias, config, versions, config again; see `register::write` for
    /// the last).
    pub async fn alias_target_for_content(
        &self,
        subject: &str,
    ) -> RegistryResult<(Option<String>, Option<SubjectRead>)> {
        self.alias_target_reading(subject, true).await
    }

    /// [`Registry::alias_target_for_content`] for a registration, which the commit confirms
    /// (`register::write`): where other nodes write and this node knows the subject is new,
    /// the read is made from memory, without a round trip ([`crate::known_subjects`]).
    pub async fn alias_target_for_registration(
        &self,
        subject: &str,
    ) -> RegistryResult<(Option<String>, Option<SubjectRead>)> {
        match self.new_subject_read(subject) {
            Some(read) => {
                let own = read.chain.row(&Some(subject.to_string()));
                let target = alias_in(subject, own.and_then(|r| r.config.as_ref()));
                Ok((target.clone(), Some(read).filter(|_| target.is_none())))
            }
            None => self.alias_target_reading(subject, true).await,
        }
    }

    /// What a store with other writers would answer of a subject this node knows to be new:
    /// no versions, and the config and mode rows kept from the last read of each (forgotten by
    /// every change the feed tells). `None` when any of that is not known.
    fn new_subject_read(&self, subject: &str) -> Option<SubjectRead> {
        if self.store.only_writer() || !self.store.follows_changes() {
            return None;
        }
        let epoch = self.answers.epoch();
        if !self.known_subjects.surely_new(subject) {
            self.known_subjects.load_in_background(&self.store);
            return None;
        }
        let (chain, keys) = chain_keys(Some(subject));
        let rows = self.answers.rows_of(&keys)?;
        Some(SubjectRead {
            epoch,
            chain: ChainSettings::of_rows(chain, keys, rows),
            versions: Arc::new(Vec::new()),
        })
    }

    async fn alias_target_reading(
        &self,
        subject: &str,
        for_content: bool,
    ) -> RegistryResult<(Option<String>, Option<SubjectRead>)> {
        if let Some(target) = self.answers.alias(subject) {
            return Ok((target, None));
        }
        let epoch = self.answers.epoch();
        let (config, read) = if for_content && !self.store.only_writer() {
            let rows_epoch = self.answers.rows_epoch();
            let (chain, versions) = self.chain_and_versions(subject).await?;
            self.keep_rows(rows_epoch, &chain).await?;
            let own = chain
                .row(&Some(subject.to_string()))
                .and_then(|r| r.config.clone());
            let versions = Arc::new(versions);
            (
                own,
                Some(SubjectRead {
                    epoch,
                    chain,
                    versions,
                }),
            )
        } else {
            (self.config_row(Scope::Subject(subject)).await?, None)
        };
        let target = alias_in(subject, config.as_ref());
        self.answers.insert_alias(epoch, subject, target.clone());
        // A read of the alias is of no use to a request that goes to its target.
        let read = read.filter(|_| target.is_none());
        Ok((target, read))
    }

    /// Where other nodes write and their changes are heard: keeps the rows of `chain`, read
    /// after `rows_epoch`, for [`Registry::new_subject_read`], reading every row the first time.
    async fn keep_rows(&self, rows_epoch: u64, chain: &ChainSettings) -> RegistryResult<()> {
        if !self.store.follows_changes() || !self.answers.keeps() {
            return Ok(());
        }
        if !self.answers.rows_loaded() {
            return self.load_rows(&None).await.map(drop);
        }
        // Usually every row is known already: only a scope changed since is kept again.
        let unknown = chain.rows().filter(|(key, _)| !self.answers.knows(key));
        for (key, row) in unknown {
            self.answers.known_again(
                rows_epoch,
                key.clone(),
                row.config.clone(),
                row.mode.clone(),
            );
        }
        Ok(())
    }

    /// [`Registry::chain_settings`] of a subject and its versions, by one read of a store with
    /// other writers ([`covenant_store::Store::settings_and_versions`]).
    async fn chain_and_versions(
        &self,
        subject: &str,
    ) -> RegistryResult<(ChainSettings, Vec<StoredVersion>)> {
        let (chain, keys) = chain_keys(Some(subject));
        let scopes: Vec<Scope<'_>> = keys.iter().map(contexts::scope).collect();
        let (rows, versions) = self.store.settings_and_versions(&scopes, subject).await?;
        drop(scopes);
        Ok((ChainSettings::of_rows(chain, keys, rows), versions))
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

/// The subject `config` (the subject's own config row) makes `subject` an alias of: its
/// `alias` (one step, so aliases cannot loop), as in Confluent, unless that names no other
/// subject.
fn alias_in(subject: &str, config: Option<&ConfigRecord>) -> Option<String> {
    config
        .and_then(|c| {
            c.extra
                .get("alias")
                .and_then(Value::as_str)
                .filter(|alias| !alias.is_empty())
                .map(|alias| covenant_store::context::qualify_with_parent(subject, alias))
        })
        .filter(|target| target != subject)
}

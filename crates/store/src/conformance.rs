//! Behaviour every [`Store`] backend must show, written once and run against each backend
//! (SQLite in this crate's tests; PostgreSQL through the same entry point). Checks use their
//! own subject names and compare ids relative to the store's state, so they can share one
//! store. Failures panic with a message naming the broken expectation, as test code should.

use crate::{
    AuditContext, AuditEntry, AuditQuery, ConfigRecord, Dedupe, NewSchema, Placement, Registration,
    Rejection, SchemaRef, Scope, Settings, SettingsCheck, SharedGuard, Store, StoreError,
    StoredVersion,
};
use futures_util::future::join_all;
use std::collections::HashMap;
use std::sync::Arc;

/// An Avro candidate whose content key is made from its text, for tests of stores and of what
/// is built on them.
pub fn schema(text: &str) -> NewSchema {
    NewSchema {
        schema_type: "AVRO".into(),
        schema: text.into(),
        references: Vec::new(),
        metadata: None,
        rule_set: None,
        content_key: format!("key:{text}"),
    }
}

/// A guard that allows every registration.
pub fn allow(_: &[StoredVersion]) -> Result<(), Rejection> {
    Ok(())
}

#[derive(Debug)]
struct Refused;
impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("refused")
    }
}
impl std::error::Error for Refused {}

/// Runs every check against `store`.
pub async fn run_all(store: &dyn Store) {
    ids_and_dedupe(store).await;
    version_numbering(store).await;
    guard_sees_versions_and_can_refuse(store).await;
    soft_and_permanent_deletes(store).await;
    explicit_ids_and_versions(store).await;
    batches_register_all_or_nothing(store).await;
    versions_page_by_subject_and_version(store).await;
    references_are_indexed(store).await;
    references_must_be_live(store).await;
    guarded_deletes_see_references(store).await;
    config_and_mode(store).await;
    settings_read_together(store).await;
    shared_registrations_are_each_whole(store).await;
    checked_registrations_see_the_settings_at_their_write(store).await;
    audit_entries_commit_with_their_change(store).await;
    contexts_have_their_own_ids(store).await;
    schema_type_counts_count_each_schema_once(store).await;
}

pub async fn ids_and_dedupe(store: &dyn Store) {
    let base = store.max_schema_id().await.expect("max id");
    let a = store
        .register(
            "conf-ids-a",
            &schema("ids-one"),
            Placement::default(),
            &allow,
            None,
        )
        .await
        .expect("register");
    assert_eq!(
        (a.id, a.version, a.created),
        (base + 1, 1, true),
        "first schema gets the next id"
    );
    let again = store
        .register(
            "conf-ids-a",
            &schema("ids-one"),
            Placement::default(),
            &allow,
            None,
        )
        .await
        .expect("re-register");
    assert_eq!(
        (again.id, again.version, again.created),
        (a.id, 1, false),
        "re-registering is idempotent"
    );
    let other_subject = store
        .register(
            "conf-ids-b",
            &schema("ids-one"),
            Placement::default(),
            &allow,
            None,
        )
        .await
        .expect("register under another subject");
    assert_eq!(
        (
            other_subject.id,
            other_subject.version,
            other_subject.created
        ),
        (a.id, 1, true),
        "same content under another subject shares the id"
    );
    let second = store
        .register(
            "conf-ids-a",
            &schema("ids-two"),
            Placement::default(),
            &allow,
            None,
        )
        .await
        .expect("second schema");
    assert_eq!((second.id, second.version), (base + 2, 2));
    let record = store
        .schema_by_id(a.id)
        .await
        .expect("by id")
        .expect("id resolves");
    assert_eq!(record.schema, "ids-one");
    assert_eq!(
        store
            .schema_by_key("key:ids-two")
            .await
            .expect("by key")
            .map(|r| r.id),
        Some(second.id)
    );
    assert_eq!(
        store
            .schema_ids_by_guid(&record.guid())
            .await
            .expect("by guid"),
        vec![a.id],
        "the stored guid finds the id"
    );
    assert!(
        store
            .schema_ids_by_guid("00000000-0000-0000-0000-000000000000")
            .await
            .expect("by guid")
            .is_empty(),
        "an unknown guid finds nothing"
    );
    assert!(
        store
            .schema_by_id(base + 1000)
            .await
            .expect("by id")
            .is_none(),
        "unknown id is absent"
    );
    let with_id = store
        .versions_with_id(a.id)
        .await
        .expect("versions with id");
    assert_eq!(
        with_id,
        vec![
            ("conf-ids-a".to_string(), 1, false),
            ("conf-ids-b".to_string(), 1, false)
        ]
    );
}

pub async fn version_numbering(store: &dyn Store) {
    let s = "conf-numbering";
    for (i, text) in ["num-1", "num-2", "num-3"].iter().enumerate() {
        let r = store
            .register(s, &schema(text), Placement::default(), &allow, None)
            .await
            .expect("register");
        assert_eq!(r.version, i as i64 + 1, "versions are contiguous from 1");
    }
    store.soft_delete(s, &[3]).await.expect("soft delete");
    let r = store
        .register(s, &schema("num-4"), Placement::default(), &allow, None)
        .await
        .expect("register after soft delete");
    assert_eq!(r.version, 4, "soft-deleted numbers are not reused");
    // Re-registering the soft-deleted content makes a new version with the same id.
    let old = store.subject_versions(s).await.expect("versions")[2]
        .schema
        .id;
    let r = store
        .register(s, &schema("num-3"), Placement::default(), &allow, None)
        .await
        .expect("re-register deleted content");
    assert_eq!((r.version, r.id, r.created), (5, old, true));
    // Latest-only dedupe writes a new version when an older one matches.
    let r = store
        .register(
            s,
            &schema("num-1"),
            Placement {
                dedupe: Dedupe::LatestOnly,
                ..Placement::default()
            },
            &allow,
            None,
        )
        .await
        .expect("rollback registration");
    assert_eq!((r.version, r.created), (6, true));
    let versions: Vec<i64> = store
        .subject_versions(s)
        .await
        .expect("versions")
        .iter()
        .map(|v| v.version)
        .collect();
    assert_eq!(versions, vec![1, 2, 3, 4, 5, 6], "oldest first");
}

pub async fn guard_sees_versions_and_can_refuse(store: &dyn Store) {
    let s = "conf-guard";
    store
        .register(s, &schema("guard-1"), Placement::default(), &allow, None)
        .await
        .expect("register");
    let seen = std::sync::Mutex::new(Vec::new());
    let record = |versions: &[StoredVersion]| -> Result<(), Rejection> {
        if let Ok(mut seen) = seen.lock() {
            *seen = versions.iter().map(|v| v.version).collect();
        }
        Err(Rejection::new(Refused))
    };
    let before = store.max_schema_id().await.expect("max id");
    let err = store
        .register(s, &schema("guard-2"), Placement::default(), &record, None)
        .await
        .expect_err("guard refuses");
    match err {
        StoreError::Rejected(r) => assert_eq!(r.to_string(), "refused"),
        other => panic!("expected a rejection, got {other:?}"),
    }
    assert_eq!(*seen.lock().expect("lock"), vec![1], "guard saw version 1");
    assert_eq!(
        store.max_schema_id().await.expect("max id"),
        before,
        "a refused registration writes nothing"
    );
    assert_eq!(store.subject_versions(s).await.expect("versions").len(), 1);
    // The guard is not consulted for an idempotent re-registration.
    let r = store
        .register(s, &schema("guard-1"), Placement::default(), &record, None)
        .await
        .expect("existing version returned without the guard");
    assert!(!r.created);
}

pub async fn soft_and_permanent_deletes(store: &dyn Store) {
    let s = "conf-delete";
    let a = store
        .register(s, &schema("del-1"), Placement::default(), &allow, None)
        .await
        .expect("register");
    store
        .register(s, &schema("del-2"), Placement::default(), &allow, None)
        .await
        .expect("register");
    store
        .set_config(
            Scope::Subject(s),
            &ConfigRecord {
                compatibility: Some("NONE".into()),
                extra: Default::default(),
            },
            None,
        )
        .await
        .expect("config");
    store
        .set_mode(Scope::Subject(s), "READWRITE", None)
        .await
        .expect("mode");
    store.soft_delete(s, &[1]).await.expect("soft delete");
    let versions = store.subject_versions(s).await.expect("versions");
    assert!(versions[0].deleted && !versions[1].deleted);
    assert!(
        store.schema_by_id(a.id).await.expect("by id").is_some(),
        "a soft-deleted version's id still resolves"
    );
    assert_eq!(
        store
            .subjects()
            .await
            .expect("subjects")
            .iter()
            .find(|(n, _)| n == s),
        Some(&(s.to_string(), true))
    );
    store.soft_delete(s, &[2]).await.expect("soft delete");
    assert_eq!(
        store
            .subjects()
            .await
            .expect("subjects")
            .iter()
            .find(|(n, _)| n == s),
        Some(&(s.to_string(), false)),
        "a subject with only deleted versions is listed as not live"
    );
    assert!(
        store
            .config(Scope::Subject(s))
            .await
            .expect("config")
            .is_some(),
        "soft delete keeps config"
    );
    store.hard_delete(s, &[1]).await.expect("hard delete");
    assert_eq!(store.subject_versions(s).await.expect("versions").len(), 1);
    assert!(
        store
            .config(Scope::Subject(s))
            .await
            .expect("config")
            .is_some(),
        "config stays while versions remain"
    );
    store.hard_delete(s, &[2]).await.expect("hard delete");
    assert!(
        store
            .subject_versions(s)
            .await
            .expect("versions")
            .is_empty()
    );
    assert!(
        store
            .config(Scope::Subject(s))
            .await
            .expect("config")
            .is_none(),
        "config goes with the last version"
    );
    assert!(store.mode(Scope::Subject(s)).await.expect("mode").is_none());
    assert!(
        store.schema_by_id(a.id).await.expect("by id").is_none(),
        "an id no version carries no longer resolves"
    );
    let r = store
        .register(s, &schema("del-1"), Placement::default(), &allow, None)
        .await
        .expect("register after permanent delete");
    assert_eq!(
        (r.version, r.id),
        (1, a.id),
        "numbering restarts; id is kept"
    );
    match store.soft_delete(s, &[9]).await {
        Err(StoreError::NoSuchVersion { version: 9, .. }) => {}
        other => panic!("expected NoSuchVersion, got {other:?}"),
    }
}

pub async fn explicit_ids_and_versions(store: &dyn Store) {
    let s = "conf-import";
    let id = store.max_schema_id().await.expect("max id") + 100;
    let placement = Placement {
        id: Some(id),
        version: Some(7),
        dedupe: Dedupe::Never,
    };
    let r = store
        .register(s, &schema("imp-1"), placement, &allow, None)
        .await
        .expect("import");
    assert_eq!((r.id, r.version), (id, 7));
    match store
        .register(
            s,
            &schema("imp-2"),
            Placement {
                version: Some(8),
                ..placement
            },
            &allow,
            None,
        )
        .await
    {
        Err(StoreError::IdConflict { id: got }) => assert_eq!(got, id),
        other => panic!("expected IdConflict, got {other:?}"),
    }
    match store
        .register(
            s,
            &schema("imp-2"),
            Placement {
                id: Some(id + 1),
                ..placement
            },
            &allow,
            None,
        )
        .await
    {
        Err(StoreError::VersionExists { version: 7, .. }) => {}
        other => panic!("expected VersionExists, got {other:?}"),
    }
    let next = store
        .register(s, &schema("imp-3"), Placement::default(), &allow, None)
        .await
        .expect("register after import");
    assert_eq!(
        (next.id, next.version),
        (id + 1, 8),
        "allocation continues after the highest id and version"
    );
}

/// [`Store::register_all`]: a batch is written in order, as one registration after another
/// (a later member sees an earlier one's version and id), or not at all.
pub async fn batches_register_all_or_nothing(store: &dyn Store) {
    let id = store.max_schema_id().await.expect("max id") + 200;
    let (one, two) = (schema("batch-1"), schema("batch-2"));
    let at = |id, version| Placement {
        id: Some(id),
        version: Some(version),
        dedupe: Dedupe::Never,
    };
    let member = |subject, candidate, placement| Registration {
        subject,
        candidate,
        placement,
        audit: None,
    };
    let written = store
        .register_all(&[
            member("conf-batch-a", &one, at(id, 1)),
            member("conf-batch-a", &two, at(id + 1, 2)),
            member("conf-batch-b", &one, at(id, 1)),
        ])
        .await
        .expect("batch");
    let placed: Vec<_> = written
        .iter()
        .map(|r| (r.id, r.version, r.schema_created))
        .collect();
    assert_eq!(placed, [(id, 1, true), (id + 1, 2, true), (id, 1, false)]);
    let versions = store
        .subject_versions("conf-batch-a")
        .await
        .expect("versions");
    assert_eq!(versions.len(), 2, "both versions of the batch are there");
    let next = store
        .register(
            "conf-batch-d",
            &schema("batch-5"),
            Placement::default(),
            &allow,
            None,
        )
        .await
        .expect("register after the batch");
    assert_eq!(next.id, id + 2, "new ids continue past the batch's highest");

    let before = store.max_schema_id().await.expect("max id");
    let refused = store
        .register_all(&[
            member("conf-batch-c", &schema("batch-3"), at(id + 3, 1)),
            member("conf-batch-a", &schema("batch-4"), at(id + 4, 2)),
        ])
        .await;
    match refused {
        Err(StoreError::VersionExists { version: 2, .. }) => {}
        other => panic!("expected VersionExists for the second member, got {other:?}"),
    }
    let c = store
        .subject_versions("conf-batch-c")
        .await
        .expect("versions");
    assert!(
        c.is_empty(),
        "the first member is rolled back with the batch: {c:?}"
    );
    assert_eq!(store.max_schema_id().await.expect("max id"), before);
    assert!(store.register_all(&[]).await.expect("empty").is_empty());
}

/// [`Store::versions_after`] pages through [`Store::all_versions`]: the same versions in the
/// same order, a page starting after the key it is given.
pub async fn versions_page_by_subject_and_version(store: &dyn Store) {
    for (subject, text) in [
        ("conf-page-b", "p1"),
        ("conf-page-a", "p2"),
        ("conf-page-b", "p3"),
    ] {
        store
            .register(subject, &schema(text), Placement::default(), &allow, None)
            .await
            .expect("register");
    }
    let key = |v: &StoredVersion| (v.subject.clone(), v.version);
    let all: Vec<_> = store
        .all_versions()
        .await
        .expect("all")
        .iter()
        .map(key)
        .collect();
    let mut paged = Vec::new();
    let mut after = (String::new(), 0);
    loop {
        let page = store
            .versions_after(&after.0, after.1, 2)
            .await
            .expect("page");
        assert!(page.len() <= 2, "a page holds at most its limit");
        paged.extend(page.iter().map(key));
        match page.last() {
            Some(last) if page.len() == 2 => after = key(last),
            _ => break,
        }
    }
    assert_eq!(paged, all, "pages of two give every version in order");
    let subjects = store.subjects().await.expect("subjects");
    let mut paged = Vec::new();
    let mut after = String::new();
    loop {
        let page = store.subjects_after(&after, 2).await.expect("page");
        assert!(page.len() <= 2, "a page holds at most its limit");
        paged.extend(page.iter().cloned());
        match page.last() {
            Some((last, _)) if page.len() == 2 => after = last.clone(),
            _ => break,
        }
    }
    assert_eq!(paged, subjects, "pages of two give every subject in order");
    let b: Vec<_> = store
        .versions_after("conf-page-b", 1, 10)
        .await
        .expect("page")
        .iter()
        .map(key)
        .take_while(|(s, _)| s == "conf-page-b")
        .collect();
    assert_eq!(b, [("conf-page-b".to_string(), 2)]);
    let from_a = store
        .versions_after("conf-page-a", 0, 1)
        .await
        .expect("page");
    assert_eq!(
        from_a.iter().map(key).collect::<Vec<_>>(),
        [("conf-page-a".to_string(), 1)]
    );
}

pub async fn references_are_indexed(store: &dyn Store) {
    let base = store
        .register(
            "conf-ref-base",
            &schema("ref-base"),
            Placement::default(),
            &allow,
            None,
        )
        .await
        .expect("register base");
    let mut user = schema("ref-user");
    user.references = vec![SchemaRef {
        name: "Base".into(),
        subject: "conf-ref-base".into(),
        version: base.version,
    }];
    user.metadata = Some(serde_json::json!({"properties": {"owner": "team"}}));
    let u = store
        .register("conf-ref-user", &user, Placement::default(), &allow, None)
        .await
        .expect("register user");
    let by = store
        .referencing_versions("conf-ref-base", base.version)
        .await
        .expect("referenced by");
    assert_eq!(by.len(), 1);
    assert_eq!(by[0].schema.id, u.id);
    assert_eq!(by[0].schema.references, user.references);
    assert_eq!(by[0].schema.metadata, user.metadata);
    assert!(
        store
            .referencing_versions("conf-ref-user", u.version)
            .await
            .expect("referenced by")
            .is_empty()
    );
}

pub async fn config_and_mode(store: &dyn Store) {
    let s = Scope::Subject("conf-config");
    assert!(store.config(s).await.expect("config").is_none());
    let mut extra = serde_json::Map::new();
    extra.insert("normalize".into(), serde_json::Value::Bool(true));
    let cfg = ConfigRecord {
        compatibility: Some("FULL".into()),
        extra,
    };
    store.set_config(s, &cfg, None).await.expect("set config");
    assert_eq!(store.config(s).await.expect("config"), Some(cfg.clone()));
    let global = ConfigRecord {
        compatibility: Some("NONE".into()),
        extra: Default::default(),
    };
    store
        .set_config(Scope::Global, &global, None)
        .await
        .expect("set global");
    assert_eq!(
        store.config(Scope::Global).await.expect("global"),
        Some(global.clone())
    );
    assert_eq!(
        store.delete_config(s, None).await.expect("delete"),
        Some(cfg)
    );
    assert!(store.config(s).await.expect("config").is_none());
    assert_eq!(
        store
            .delete_config(Scope::Global, None)
            .await
            .expect("delete global"),
        Some(global)
    );

    assert!(store.mode(s).await.expect("mode").is_none());
    store.set_mode(s, "READONLY", None).await.expect("set mode");
    store
        .set_mode(s, "IMPORT", None)
        .await
        .expect("replace mode");
    assert_eq!(
        store.mode(s).await.expect("mode").as_deref(),
        Some("IMPORT")
    );
    store
        .set_mode(Scope::Global, "READWRITE", None)
        .await
        .expect("global mode");
    assert_eq!(
        store.delete_mode(s, None).await.expect("delete").as_deref(),
        Some("IMPORT")
    );
    assert!(store.mode(s).await.expect("mode").is_none());
    assert_eq!(
        store.mode(Scope::Global).await.expect("mode").as_deref(),
        Some("READWRITE")
    );
    store
        .delete_mode(Scope::Global, None)
        .await
        .expect("delete global mode");
}

/// `settings` reads the config and mode rows of several scopes at once, each in its place,
/// and agrees with `config` and `mode` read one by one.
pub async fn settings_read_together(store: &dyn Store) {
    let (a, b, none) = (
        Scope::Subject("conf-settings-a"),
        Scope::Subject("conf-settings-b"),
        Scope::Subject("conf-settings-none"),
    );
    let mut extra = serde_json::Map::new();
    extra.insert("compatibilityGroup".into(), "app".into());
    let config_a = ConfigRecord {
        compatibility: Some("FULL".into()),
        extra,
    };
    let global = ConfigRecord {
        compatibility: None,
        extra: serde_json::Map::from_iter([("normalize".to_string(), true.into())]),
    };
    store
        .set_config(a, &config_a, None)
        .await
        .expect("config a");
    store.set_mode(b, "READONLY", None).await.expect("mode b");
    store
        .set_config(Scope::Global, &global, None)
        .await
        .expect("global");
    store
        .set_mode(Scope::Global, "IMPORT", None)
        .await
        .expect("global mode");

    let read = store
        .settings(&[none, a, Scope::Global, b, a])
        .await
        .expect("settings");
    let settings = |config: Option<&ConfigRecord>, mode: Option<&str>| Settings {
        config: config.cloned(),
        mode: mode.map(str::to_string),
    };
    assert_eq!(
        read,
        vec![
            Settings::default(),
            settings(Some(&config_a), None),
            settings(Some(&global), Some("IMPORT")),
            settings(None, Some("READONLY")),
            settings(Some(&config_a), None),
        ]
    );
    for (scope, got) in [none, a, Scope::Global, b].into_iter().zip(&read) {
        assert_eq!(store.config(scope).await.expect("config"), got.config);
        assert_eq!(store.mode(scope).await.expect("mode"), got.mode);
    }
    assert!(store.settings(&[]).await.expect("no scopes").is_empty());
    // With a subject's versions, at once: the same rows, and the same versions.
    let subject = "conf-settings-a";
    store
        .register(
            subject,
            &schema("settings-a"),
            Placement::default(),
            &allow,
            None,
        )
        .await
        .expect("register");
    let (together, versions) = store
        .settings_and_versions(&[none, a, Scope::Global, b, a], subject)
        .await
        .expect("settings and versions");
    assert_eq!(together, read);
    assert_eq!(versions.len(), 1);
    assert_eq!(
        versions,
        store.subject_versions(subject).await.expect("versions")
    );

    store.delete_config(a, None).await.expect("delete a");
    store.delete_mode(b, None).await.expect("delete b");
    store
        .delete_config(Scope::Global, None)
        .await
        .expect("delete global");
    store
        .delete_mode(Scope::Global, None)
        .await
        .expect("delete global mode");
}

/// Registrations made at once through [`Store::register_shared`] (which PostgreSQL writes in
/// groups) are each answered as if alone: a new subject gets version 1, one content gets one
/// id whatever subjects it is registered under and is created once, a refused registration
/// writes nothing and fails only itself, each written one leaves its own audit entry, and a
/// second registration of the same content under a subject finds the first.
pub async fn shared_registrations_are_each_whole(store: &dyn Store) {
    let who = "conf-shared-writer";
    let audit = audited_by(who);
    let allow: SharedGuard = Arc::new(allow);
    let refuse: SharedGuard = Arc::new(|_: &[StoredVersion]| Err(Rejection::new(Refused)));
    let n = 48;
    let subjects: Vec<String> = (0..n).map(|i| format!("conf-shared-{i}")).collect();
    // Four subjects share each content.
    let content = |i: usize| schema(&format!("{{\"type\":\"conf-shared-{}\"}}", i / 4));
    let candidates: Vec<NewSchema> = (0..n).map(content).collect();
    let refused = |i: usize| i % 12 == 5;
    let results = join_all((0..n).map(|i| {
        let guard = if refused(i) { &refuse } else { &allow };
        store.register_shared(
            &subjects[i],
            &candidates[i],
            Placement::default(),
            Arc::clone(guard),
            Some(&audit),
        )
    }))
    .await;
    let mut ids: HashMap<String, (i64, usize)> = HashMap::new();
    let mut expected_trail = Vec::new();
    for (i, result) in results.into_iter().enumerate() {
        let versions = store
            .subject_versions(&subjects[i])
            .await
            .expect("versions");
        if refused(i) {
            assert!(
                matches!(result, Err(StoreError::Rejected(_))),
                "{i}: {result:?}"
            );
            assert!(
                versions.is_empty(),
                "a refused registration wrote {versions:?}"
            );
            continue;
        }
        let r = result.unwrap_or_else(|e| panic!("registration {i} failed: {e}"));
        assert_eq!((r.version, r.created), (1, true), "{i}");
        assert_eq!(versions.len(), 1);
        assert_eq!(versions[0].schema.id, r.id);
        expected_trail.push((subjects[i].clone(), r.version, r.id));
        let (id, created) = ids
            .entry(candidates[i].content_key.clone())
            .or_insert((r.id, 0));
        assert_eq!(*id, r.id, "one content, one id");
        *created += usize::from(r.schema_created);
    }
    assert_eq!(ids.len(), n / 4);
    assert!(ids.values().all(|(_, created)| *created == 1), "{ids:?}");
    let distinct: std::collections::HashSet<i64> = ids.values().map(|(id, _)| *id).collect();
    assert_eq!(distinct.len(), n / 4, "distinct contents share an id");
    let mut trail: Vec<(String, i64, i64)> = trail_of(store, who)
        .await
        .into_iter()
        .map(|e| {
            assert_eq!(e.operation, "register");
            let subject = e.subject.expect("the entry names its subject");
            (subject, e.version.unwrap_or(0), e.schema_id.unwrap_or(0))
        })
        .collect();
    trail.sort();
    expected_trail.sort();
    assert_eq!(
        trail, expected_trail,
        "one audit entry per written registration"
    );

    // Again, at once: every one finds its version.
    let again = join_all((0..n).filter(|i| !refused(*i)).map(|i| {
        store.register_shared(
            &subjects[i],
            &candidates[i],
            Placement::default(),
            Arc::clone(&allow),
            None,
        )
    }))
    .await;
    for r in again {
        let r = r.expect("registered again");
        assert_eq!((r.version, r.created), (1, false));
    }
}

/// A registration's settings check ([`Store::register_checked`]) is given the config and mode
/// rows of the scopes it names as they are when the registration is written: one that finds
/// them changed writes nothing and fails only itself, also among registrations made at once.
pub async fn checked_registrations_see_the_settings_at_their_write(store: &dyn Store) {
    let allow: SharedGuard = Arc::new(allow);
    // Passes when the subject's own row has the level `want` (`None`: no row).
    let expecting = |subject: &str, want: Option<&'static str>| SettingsCheck {
        scopes: vec![Some(subject.to_string()), None],
        unchanged: Arc::new(move |rows: &[Settings]| {
            let level = rows[0]
                .config
                .as_ref()
                .and_then(|c| c.compatibility.as_deref());
            if rows.len() == 2 && level == want {
                Ok(())
            } else {
                Err(Rejection::new(Refused))
            }
        }),
    };
    let s = "conf-checked";
    let register = |n: usize, check: SettingsCheck| {
        let candidate = schema(&format!("checked-{n}"));
        let guard = Arc::clone(&allow);
        async move {
            store
                .register_checked(s, &candidate, Placement::default(), guard, check, None)
                .await
        }
    };
    let first = register(1, expecting(s, None))
        .await
        .expect("no row, as judged");
    assert_eq!((first.version, first.created), (1, true));
    let none = ConfigRecord {
        compatibility: Some("NONE".into()),
        ..ConfigRecord::default()
    };
    store
        .set_config(Scope::Subject(s), &none, None)
        .await
        .expect("set config");
    let stale = register(2, expecting(s, None)).await;
    assert!(matches!(stale, Err(StoreError::Rejected(_))), "{stale:?}");
    let fresh = register(3, expecting(s, Some("NONE")))
        .await
        .expect("the row as judged");
    assert_eq!(fresh.version, 2);
    assert_eq!(store.subject_versions(s).await.expect("versions").len(), 2);

    // At once, on subjects of their own: the stale ones alone fail.
    let subjects: Vec<String> = (0..24).map(|i| format!("conf-checked-{i}")).collect();
    for subject in subjects.iter().step_by(3) {
        store
            .set_config(Scope::Subject(subject), &none, None)
            .await
            .expect("set config");
    }
    let candidates: Vec<NewSchema> = (0..24)
        .map(|i| schema(&format!("checked-at-once-{i}")))
        .collect();
    let results = join_all(
        subjects
            .iter()
            .zip(&candidates)
            .map(|(subject, candidate)| {
                store.register_checked(
                    subject,
                    candidate,
                    Placement::default(),
                    Arc::clone(&allow),
                    expecting(subject, None),
                    None,
                )
            }),
    )
    .await;
    for (i, (subject, result)) in subjects.iter().zip(results).enumerate() {
        let written = store
            .subject_versions(subject)
            .await
            .expect("versions")
            .len();
        if i % 3 == 0 {
            assert!(
                matches!(result, Err(StoreError::Rejected(_))),
                "{i}: {result:?}"
            );
            assert_eq!(written, 0, "{i}");
        } else {
            assert_eq!(result.map(|r| r.version).ok(), Some(1), "{i}");
            assert_eq!(written, 1, "{i}");
        }
    }
}

/// A new version may only reference live versions; the check runs inside the write.
pub async fn references_must_be_live(store: &dyn Store) {
    let base = store
        .register(
            "conf-live-base",
            &schema("live-base"),
            Placement::default(),
            &allow,
            None,
        )
        .await
        .expect("register base");
    let reference = |version| SchemaRef {
        name: "Base".into(),
        subject: "conf-live-base".into(),
        version,
    };
    let mut missing = schema("live-user-missing");
    missing.references = vec![reference(base.version + 1)];
    match store
        .register(
            "conf-live-user",
            &missing,
            Placement::default(),
            &allow,
            None,
        )
        .await
    {
        Err(StoreError::NoSuchVersion { subject, version }) => {
            assert_eq!(
                (subject.as_str(), version),
                ("conf-live-base", base.version + 1)
            );
        }
        other => panic!("a reference to a missing version must fail, got {other:?}"),
    }
    store
        .soft_delete("conf-live-base", &[base.version])
        .await
        .expect("soft delete base");
    let mut user = schema("live-user");
    user.references = vec![reference(base.version)];
    assert!(
        matches!(
            store
                .register("conf-live-user", &user, Placement::default(), &allow, None)
                .await,
            Err(StoreError::NoSuchVersion { .. })
        ),
        "a reference to a soft-deleted version must fail"
    );
    assert!(
        store
            .subject_versions("conf-live-user")
            .await
            .expect("versions")
            .is_empty(),
        "a refused registration writes nothing"
    );
}

/// `delete_guarded` hands the guard every referencing version and deletes only when it agrees.
pub async fn guarded_deletes_see_references(store: &dyn Store) {
    let base = store
        .register(
            "conf-gdel-base",
            &schema("gdel-base"),
            Placement::default(),
            &allow,
            None,
        )
        .await
        .expect("register base");
    let other = store
        .register(
            "conf-gdel-base",
            &schema("gdel-base-2"),
            Placement::default(),
            &allow,
            None,
        )
        .await
        .expect("register base v2");
    let mut user = schema("gdel-user");
    user.references = vec![SchemaRef {
        name: "Base".into(),
        subject: "conf-gdel-base".into(),
        version: base.version,
    }];
    let u = store
        .register("conf-gdel-user", &user, Placement::default(), &allow, None)
        .await
        .expect("register user");

    let seen = std::sync::Mutex::new(Vec::new());
    let refuse = |referencing: &[StoredVersion]| -> Result<(), Rejection> {
        if let Ok(mut s) = seen.lock() {
            s.extend(referencing.iter().map(|v| (v.subject.clone(), v.version)));
        }
        if referencing.is_empty() {
            Ok(())
        } else {
            Err(Rejection::new(Refused))
        }
    };
    match store
        .delete_guarded(
            "conf-gdel-base",
            &[base.version, other.version],
            false,
            &refuse,
            None,
        )
        .await
    {
        Err(StoreError::Rejected(r)) => assert_eq!(r.to_string(), "refused"),
        other => panic!("the guard's refusal must come back, got {other:?}"),
    }
    assert_eq!(
        seen.lock().map(|s| s.clone()).unwrap_or_default(),
        vec![("conf-gdel-user".to_string(), u.version)],
        "the guard sees the referencing version once"
    );
    let versions = store
        .subject_versions("conf-gdel-base")
        .await
        .expect("versions");
    assert!(
        versions.iter().all(|v| !v.deleted),
        "a refused delete changes nothing"
    );

    // An unreferenced version goes; the guard sees nothing for it.
    store
        .delete_guarded("conf-gdel-base", &[other.version], false, &refuse, None)
        .await
        .expect("soft delete of an unreferenced version");
    store
        .delete_guarded("conf-gdel-base", &[other.version], true, &refuse, None)
        .await
        .expect("permanent delete of an unreferenced version");
    let versions = store
        .subject_versions("conf-gdel-base")
        .await
        .expect("versions");
    assert_eq!(
        versions
            .iter()
            .map(|v| (v.version, v.deleted))
            .collect::<Vec<_>>(),
        vec![(base.version, false)]
    );

    // Once the referencing version is gone for good, the base may go too.
    store
        .delete_guarded("conf-gdel-user", &[u.version], false, &allow, None)
        .await
        .expect("soft delete user");
    store
        .delete_guarded("conf-gdel-user", &[u.version], true, &allow, None)
        .await
        .expect("permanent delete user");
    store
        .delete_guarded("conf-gdel-base", &[base.version], false, &refuse, None)
        .await
        .expect("base is unreferenced now");
    assert!(matches!(
        store
            .delete_guarded("conf-gdel-base", &[base.version + 100], false, &allow, None)
            .await,
        Err(StoreError::NoSuchVersion { .. })
    ));
}

fn audited_by(principal: &str) -> AuditContext {
    AuditContext {
        principal: principal.into(),
        source: Some("127.0.0.1:9".into()),
        request_id: Some(format!("req-{principal}")),
        detail: None,
    }
}

async fn trail_of(store: &dyn Store, principal: &str) -> Vec<AuditEntry> {
    store
        .audit_entries(&AuditQuery {
            principal: Some(principal.into()),
            limit: 1000,
            ..AuditQuery::default()
        })
        .await
        .expect("audit entries")
}

/// Every audited write leaves exactly one entry when it changes something and none when it is
/// refused or changes nothing; filters, paging and pruning work on the trail.
pub async fn audit_entries_commit_with_their_change(store: &dyn Store) {
    let who = "conf-audit-alice";
    let ctx = audited_by(who);
    let s = "conf-audit";
    let r = store
        .register(
            s,
            &schema("audit-1"),
            Placement::default(),
            &allow,
            Some(&ctx),
        )
        .await
        .expect("register");
    let again = store
        .register(
            s,
            &schema("audit-1"),
            Placement::default(),
            &allow,
            Some(&ctx),
        )
        .await
        .expect("dedupe");
    assert!(!again.created, "the same schema twice is not a new version");
    let refuse = |_: &[StoredVersion]| Err(Rejection::new(Refused));
    let refused = store
        .register(
            s,
            &schema("audit-2"),
            Placement::default(),
            &refuse,
            Some(&ctx),
        )
        .await;
    assert!(matches!(refused, Err(StoreError::Rejected(_))));
    let config = ConfigRecord {
        compatibility: Some("FULL".into()),
        ..ConfigRecord::default()
    };
    store
        .set_config(Scope::Subject(s), &config, Some(&ctx))
        .await
        .expect("config");
    store
        .set_mode(Scope::Subject(s), "READONLY", Some(&ctx))
        .await
        .expect("mode");
    store
        .delete_mode(Scope::Subject(s), Some(&ctx))
        .await
        .expect("mode delete");
    let none = |_: &[StoredVersion]| Ok(());
    store
        .delete_guarded(s, &[r.version], false, &none, Some(&ctx))
        .await
        .expect("soft delete");
    store
        .delete_guarded(s, &[r.version], true, &none, Some(&ctx))
        .await
        .expect("permanent delete");

    let trail = trail_of(store, who).await;
    let ops: Vec<&str> = trail.iter().map(|e| e.operation.as_str()).collect();
    assert_eq!(
        ops,
        [
            "register",
            "config.set",
            "mode.set",
            "mode.delete",
            "delete.soft",
            "delete.permanent"
        ],
        "one entry per committed change, none for the dedupe or the refusal"
    );
    let first = &trail[0];
    assert_eq!(first.subject.as_deref(), Some(s));
    assert_eq!(
        (first.version, first.schema_id),
        (Some(r.version), Some(r.id))
    );
    assert_eq!(first.request_id.as_deref(), Some("req-conf-audit-alice"));
    assert_eq!(first.source.as_deref(), Some("127.0.0.1:9"));
    assert_eq!(first.outcome, crate::audit::OUTCOME_OK);
    assert_eq!(trail[1].detail.as_deref(), Some("FULL"));
    assert_eq!(trail[1].config_key.as_deref(), Some("config"));
    assert!(trail.windows(2).all(|w| w[0].seq < w[1].seq));

    // Denied attempts are appended on their own.
    let mut denied = ctx.entry("Delete", crate::AuditTarget::subject(Some(s)));
    denied.outcome = crate::audit::OUTCOME_DENIED.into();
    store.record_audit(&denied).await.expect("record denied");
    let page = store
        .audit_entries(&AuditQuery {
            principal: Some(who.into()),
            outcome: Some("denied".into()),
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .expect("denied entries");
    assert_eq!(page.len(), 1);
    assert_eq!(page[0].operation, "Delete");

    // Paging: two at a time after a cursor.
    let page = store
        .audit_entries(&AuditQuery {
            principal: Some(who.into()),
            after: trail[1].seq,
            limit: 2,
            ..AuditQuery::default()
        })
        .await
        .expect("page");
    let ops: Vec<&str> = page.iter().map(|e| e.operation.as_str()).collect();
    assert_eq!(ops, ["mode.set", "mode.delete"]);

    // Unaudited writes leave no entry; pruning removes old entries only.
    let before = trail_of(store, who).await.len();
    store
        .set_config(Scope::Subject(s), &config, None)
        .await
        .expect("config");
    assert_eq!(trail_of(store, who).await.len(), before);
    let mut old = ctx.entry("register", crate::AuditTarget::subject(Some(s)));
    old.principal = "conf-audit-old".into();
    old.at = 1_000;
    store.record_audit(&old).await.expect("old entry");
    assert!(store.prune_audit(2_000).await.expect("prune") >= 1);
    assert!(trail_of(store, "conf-audit-old").await.is_empty());
    assert_eq!(trail_of(store, who).await.len(), before);
}

/// Each context numbers its schemas from 1 (the same content gets an id per context), explicit
/// ids land in the subject's context, references resolve in the referrer's context, and a
/// context goes only once no subject (soft-deleted ones included) is left in it.
pub async fn contexts_have_their_own_ids(store: &dyn Store) {
    use crate::context::{public_id, slot_of};
    let context = format!(".conf-{}", store.max_schema_id().await.expect("max id"));
    let subject = |name: &str| format!(":{context}:{name}");
    let register = |subject: String, candidate: NewSchema, id: Option<i64>| async move {
        let placement = Placement {
            id,
            ..Placement::default()
        };
        store
            .register(&subject, &candidate, placement, &allow, None)
            .await
            .expect("register in a context")
    };
    let first = register(subject("a"), schema("ctx-one"), None).await;
    assert_eq!(public_id(first.id), 1, "a context's first id is 1");
    assert_ne!(
        slot_of(first.id),
        0,
        "stored apart from the default context"
    );
    let again = register(subject("b"), schema("ctx-one"), None).await;
    assert_eq!(
        again.id, first.id,
        "the same content in the same context: the same id"
    );
    let second = register(subject("c"), schema("ctx-two"), None).await;
    assert_eq!(public_id(second.id), 2);
    let imported = register(subject("d"), schema("ctx-three"), Some(40)).await;
    assert_eq!(
        (public_id(imported.id), slot_of(imported.id)),
        (40, slot_of(first.id))
    );
    let mut referrer = schema("ctx-referrer");
    referrer.references = vec![SchemaRef {
        name: "one".into(),
        subject: "a".into(),
        version: 1,
    }];
    register(subject("e"), referrer, None).await;
    let referencing = store
        .referencing_versions(&subject("a"), 1)
        .await
        .expect("referrers");
    assert_eq!(
        referencing.len(),
        1,
        "an unqualified reference names its own context"
    );
    let slot = store.context_slot(&context).await.expect("slot");
    assert_eq!(slot, Some(slot_of(first.id)));
    assert!(
        store
            .contexts()
            .await
            .expect("contexts")
            .iter()
            .any(|(name, s)| name == &context && Some(*s) == slot)
    );
    match store.delete_context(&context, None).await {
        Err(StoreError::ContextNotEmpty(name)) => assert_eq!(name, context),
        other => panic!("a context with subjects was deleted: {other:?}"),
    }
    for name in ["e", "a", "b", "c", "d"] {
        store
            .hard_delete(&subject(name), &[1])
            .await
            .expect("hard delete");
    }
    assert!(store.delete_context(&context, None).await.expect("delete"));
    assert_eq!(store.context_slot(&context).await.expect("slot"), None);
    let fresh = register(subject("a"), schema("ctx-two"), None).await;
    assert_eq!(public_id(fresh.id), 1, "a context made again starts afresh");
}

pub async fn schema_type_counts_count_each_schema_once(store: &dyn Store) {
    let count = |counts: &[(String, u64)], t: &str| {
        counts
            .iter()
            .find(|(k, _)| k == t)
            .map(|(_, n)| *n)
            .unwrap_or(0)
    };
    let before = store.schema_type_counts().await.expect("counts");
    let avro = schema("counts-shared");
    for subject in ["conf-counts-a", "conf-counts-b"] {
        store
            .register(subject, &avro, Placement::default(), &allow, None)
            .await
            .expect("register");
    }
    let json = NewSchema {
        schema_type: "JSON".into(),
        ..schema("counts-json")
    };
    store
        .register(
            "conf-counts-json",
            &json,
            Placement::default(),
            &allow,
            None,
        )
        .await
        .expect("register JSON");
    store
        .soft_delete("conf-counts-json", &[1])
        .await
        .expect("soft delete");
    let after = store.schema_type_counts().await.expect("counts");
    assert_eq!(
        count(&after, "AVRO"),
        count(&before, "AVRO") + 1,
        "a schema under two subjects counts once: {after:?}"
    );
    assert_eq!(
        count(&after, "JSON"),
        count(&before, "JSON") + 1,
        "a soft-deleted version still carries its schema: {after:?}"
    );
}

use super::*;
use crate::contract::validate_rule_set;
use covenant_store::SqliteStore;
use covenant_store::{NewSchema, Placement, SchemaRef, StoredVersion};
use serde_json::{Map, Value};
use sha2::Digest;

fn registry() -> (tempfile::TempDir, Registry) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path()).expect("open store");
    (dir, Registry::new(Arc::new(store)))
}

/// Writes a version straight to the store, for tests of rules that do not parse schemas.
async fn put(reg: &Registry, subject: &str, text: &str, refs: Vec<SchemaRef>) -> i64 {
    let schema = NewSchema {
        schema_type: "AVRO".into(),
        schema: text.into(),
        references: refs,
        metadata: None,
        rule_set: None,
        content_key: format!("k:{text}"),
    };
    reg.store
        .register(
            subject,
            &schema,
            Placement::default(),
            &|_: &[StoredVersion]| Ok(()),
            None,
        )
        .await
        .expect("register")
        .version
}

#[test]
fn version_specs_follow_confluent() {
    assert_eq!(VersionSpec::parse("latest").ok(), Some(VersionSpec::Latest));
    assert_eq!(
        VersionSpec::parse(" LATEST ").ok(),
        Some(VersionSpec::Latest)
    );
    assert_eq!(VersionSpec::parse("-1").ok(), Some(VersionSpec::Latest));
    assert_eq!(VersionSpec::parse("3").ok(), Some(VersionSpec::Number(3)));
    for bad in ["0", "-2", "abc", "2147483648", ""] {
        assert!(
            matches!(
                VersionSpec::parse(bad),
                Err(RegistryError::InvalidVersion(_))
            ),
            "{bad}"
        );
    }
}

#[test]
fn modes_parse_case_insensitively() {
    assert_eq!(Mode::parse("import").ok(), Some(Mode::Import));
    assert_eq!(Mode::parse("ReadOnly").ok(), Some(Mode::ReadOnly));
    assert!(matches!(
        Mode::parse("sideways"),
        Err(RegistryError::InvalidMode)
    ));
}

#[test]
fn rule_sets_are_validated() {
    let dup = serde_json::json!({"domainRules": [
        {"name": "a", "type": "CEL"}, {"name": "a", "type": "CEL"}]});
    assert!(matches!(
        validate_rule_set(&Some(dup)),
        Err(RegistryError::InvalidRuleSet(m)) if m.contains("duplicate name 'a'")
    ));
    let bad_mode =
        serde_json::json!({"migrationRules": [{"name": "m", "type": "JSONATA", "mode": "WRITE"}]});
    assert!(validate_rule_set(&Some(bad_mode)).is_err());
    let ok = serde_json::json!({"domainRules": [{"name": "r", "type": "CEL", "mode": "write"}]});
    assert!(validate_rule_set(&Some(ok)).is_ok());
}

#[test]
fn incompatible_message_names_subject_and_findings() {
    let finding = covenant_engine::Finding {
        rule: "TYPE_MISMATCH".into(),
        severity: covenant_engine::Severity::Error,
        path: "/fields/amount".into(),
        message: "Field 'amount' changed type.".into(),
        hint: "Add a new field.".into(),
        version: Some(2),
    };
    let e = RegistryError::Incompatible {
        subject: "orders-value".into(),
        findings: vec![finding],
    };
    let text = e.to_string();
    assert!(text.contains("subject \"orders-value\""), "{text}");
    assert!(
        text.contains("TYPE_MISMATCH")
            && text.contains("/fields/amount")
            && text.contains("version 2"),
        "{text}"
    );
}

#[tokio::test]
async fn config_levels_fall_back_and_subject_config_is_404_without_default() {
    let (_d, reg) = registry();
    assert_eq!(
        reg.config(None, false).await.expect("global").level,
        Level::Backward
    );
    assert!(matches!(
        reg.config(Some("s"), false).await,
        Err(RegistryError::SubjectConfigNotFound(_))
    ));
    assert_eq!(
        reg.config(Some("s"), true).await.expect("default").level,
        Level::Backward
    );
    let stored = reg
        .set_config(
            Some("s"),
            ConfigUpdate {
                compatibility: Some(Value::String("full_transitive".into())),
                extra: Map::new(),
            },
            None,
        )
        .await
        .expect("set");
    assert_eq!(stored.compatibility.as_deref(), Some("FULL_TRANSITIVE"));
    assert_eq!(
        reg.effective_config("s").await.expect("effective").level,
        Level::FullTransitive
    );
    assert!(matches!(
        reg.set_config(
            None,
            ConfigUpdate {
                compatibility: Some(Value::String("sideways".into())),
                extra: Map::new()
            },
            None
        )
        .await,
        Err(RegistryError::InvalidCompatibilityLevel)
    ));
    let old = reg.delete_config(Some("s"), None).await.expect("delete");
    assert_eq!(old.level, Level::FullTransitive);
    assert!(matches!(
        reg.delete_config(Some("s"), None).await,
        Err(RegistryError::SubjectNotFound(_))
    ));
}

#[tokio::test]
async fn import_mode_needs_an_empty_scope_unless_forced() {
    let (_d, reg) = registry();
    put(&reg, "s", "a", vec![]).await;
    assert!(matches!(
        reg.set_mode(Some("s"), "IMPORT", false, None).await,
        Err(RegistryError::OperationNotPermitted(m)) if m == "Cannot import since found existing subjects"
    ));
    assert_eq!(
        reg.set_mode(Some("s"), "import", true, None)
            .await
            .expect("forced"),
        Mode::Import
    );
    assert!(matches!(
        reg.set_mode(Some("s"), "FORWARD", false, None).await,
        Err(RegistryError::ForwardModeOnSubject)
    ));
    assert!(matches!(
        reg.mode(Some("t"), false).await,
        Err(RegistryError::SubjectModeNotFound(_))
    ));
    assert_eq!(
        reg.mode(Some("t"), true).await.expect("global"),
        Mode::ReadWrite
    );
    reg.set_mode(None, "READONLY", false, None)
        .await
        .expect("readonly");
    reg.delete_mode(Some("s"), None)
        .await
        .expect("drop subject mode");
    assert!(matches!(
        reg.delete_subject("s", false, None).await,
        Err(RegistryError::OperationNotPermitted(_))
    ));
}

#[tokio::test]
async fn read_only_blocks_deletes_and_config() {
    let (_d, reg) = registry();
    put(&reg, "s", "a", vec![]).await;
    reg.set_mode(Some("s"), "READONLY", false, None)
        .await
        .expect("mode");
    assert!(matches!(
        reg.delete_subject("s", false, None).await,
        Err(RegistryError::OperationNotPermitted(m)) if m.contains("read-only")
    ));
    assert!(matches!(
        reg.set_config(Some("s"), ConfigUpdate::default(), None)
            .await,
        Err(RegistryError::OperationNotPermitted(_))
    ));
}

#[tokio::test]
async fn delete_state_machine_follows_confluent() {
    let (_d, reg) = registry();
    put(&reg, "s", "a", vec![]).await;
    put(&reg, "s", "b", vec![]).await;
    assert!(matches!(
        reg.delete_version("s", VersionSpec::Number(1), true, None)
            .await,
        Err(RegistryError::VersionNotSoftDeleted(_, 1))
    ));
    assert_eq!(
        reg.delete_version("s", VersionSpec::Number(1), false, None)
            .await
            .expect("soft"),
        1
    );
    assert!(matches!(
        reg.delete_version("s", VersionSpec::Number(1), false, None)
            .await,
        Err(RegistryError::VersionSoftDeleted(_, 1))
    ));
    assert!(matches!(
        reg.delete_version("s", VersionSpec::Number(9), false, None).await,
        Err(RegistryError::VersionNotFound(v)) if v == "9"
    ));
    assert!(matches!(
        reg.delete_subject("s", true, None).await,
        Err(RegistryError::SubjectNotSoftDeleted(_))
    ));
    assert_eq!(
        reg.versions("s", false, false).await.expect("versions"),
        vec![2]
    );
    assert_eq!(
        reg.versions("s", true, false).await.expect("versions"),
        vec![1, 2]
    );
    assert_eq!(
        reg.versions("s", false, true).await.expect("versions"),
        vec![1]
    );
    assert_eq!(
        reg.delete_subject("s", false, None)
            .await
            .expect("soft subject"),
        vec![2]
    );
    assert!(matches!(
        reg.delete_subject("s", false, None).await,
        Err(RegistryError::SubjectSoftDeleted(_))
    ));
    assert!(matches!(
        reg.versions("s", false, false).await,
        Err(RegistryError::SubjectNotFound(_))
    ));
    assert_eq!(
        reg.subjects(Some(""), false, false)
            .await
            .expect("subjects"),
        Vec::<String>::new()
    );
    assert_eq!(
        reg.subjects(Some(""), true, false).await.expect("subjects"),
        vec!["s".to_string()]
    );
    assert_eq!(
        reg.delete_subject("s", true, None)
            .await
            .expect("permanent"),
        vec![1, 2]
    );
    assert!(matches!(
        reg.delete_subject("s", false, None).await,
        Err(RegistryError::SubjectNotFound(_))
    ));
}

#[tokio::test]
async fn referenced_versions_cannot_be_deleted() {
    let (_d, reg) = registry();
    let base = put(&reg, "base", "b", vec![]).await;
    put(
        &reg,
        "user",
        "u",
        vec![SchemaRef {
            name: "B".into(),
            subject: "base".into(),
            version: base,
        }],
    )
    .await;
    assert!(matches!(
        reg.delete_version("base", VersionSpec::Latest, false, None).await,
        Err(RegistryError::Referenced(s, 1)) if s == "base"
    ));
    assert!(matches!(
        reg.delete_subject("base", false, None).await,
        Err(RegistryError::Referenced(_, _))
    ));
    let ids = reg
        .referenced_by("base", VersionSpec::Number(1), false)
        .await
        .expect("referencedby");
    assert_eq!(ids.len(), 1);
    // Once the referencing version is soft-deleted, a soft delete is allowed but a permanent one is not.
    reg.delete_subject("user", false, None)
        .await
        .expect("soft delete user");
    reg.delete_subject("base", false, None)
        .await
        .expect("soft delete base");
    assert!(matches!(
        reg.delete_subject("base", true, None).await,
        Err(RegistryError::Referenced(_, _))
    ));
}

#[tokio::test]
async fn references_resolve_transitively_dependencies_first() {
    let (_d, reg) = registry();
    put(&reg, "a", "A-text", vec![]).await;
    put(
        &reg,
        "b",
        "B-text",
        vec![SchemaRef {
            name: "A".into(),
            subject: "a".into(),
            version: 1,
        }],
    )
    .await;
    let (concrete, resolved) = reg
        .resolve_references(
            &[SchemaRef {
                name: "B".into(),
                subject: "b".into(),
                version: -1,
            }],
            "referrer",
            false,
        )
        .await
        .expect("resolve");
    assert_eq!(
        concrete[0].version, 1,
        "-1 becomes the concrete latest version"
    );
    let names: Vec<&str> = resolved.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, vec!["A", "B"]);
    assert_eq!(resolved[0].schema, "A-text");
    let missing = reg
        .resolve_references(
            &[SchemaRef {
                name: "X".into(),
                subject: "nope".into(),
                version: 1,
            }],
            "referrer",
            false,
        )
        .await;
    assert!(matches!(
        missing,
        Err(RegistryError::InvalidSchema(m)) if m == "No schema reference found for subject \"nope\" and version 1"
    ));
}

#[tokio::test]
async fn unknown_schema_type_and_empty_schema_are_invalid() {
    let (_d, reg) = registry();
    let req = SchemaRequest {
        schema: "x".into(),
        schema_type: Some("XML".into()),
        ..Default::default()
    };
    assert!(matches!(
        reg.register("s", req, RegisterOptions::default()).await,
        Err(RegistryError::InvalidSchema(m)) if m == "Invalid schema type XML"
    ));
    let req = SchemaRequest {
        schema: "  ".into(),
        ..Default::default()
    };
    assert!(matches!(
        reg.register("s", req, RegisterOptions::default()).await,
        Err(RegistryError::InvalidSchema(m)) if m == "Empty schema"
    ));
    let req = SchemaRequest {
        schema: "\"string\"".into(),
        ..Default::default()
    };
    assert!(matches!(
        reg.register("bad\u{1}", req, RegisterOptions::default())
            .await,
        Err(RegistryError::InvalidSubject(_))
    ));
}

fn avro_request(text: &str) -> SchemaRequest {
    SchemaRequest {
        schema: text.into(),
        ..SchemaRequest::default()
    }
}

fn extra(pairs: serde_json::Value) -> ConfigUpdate {
    ConfigUpdate {
        compatibility: None,
        extra: pairs.as_object().cloned().unwrap_or_default(),
    }
}

#[tokio::test]
async fn config_data_contracts_merge_into_registrations() {
    use serde_json::json;
    let (_d, reg) = registry();
    let rule = |name: &str, expr: &str| json!({"name": name, "kind": "CONDITION", "type": "CEL", "expr": expr});
    reg.set_config(
        None,
        extra(json!({
            "defaultMetadata": {"properties": {"owner": "unknown", "tier": "bronze"}},
            "overrideMetadata": {"properties": {"region": "eu"}, "sensitive": ["secret"]},
            "defaultRuleSet": {"domainRules": [rule("checkId", "message.id > 0")]},
        })),
        None,
    )
    .await
    .expect("global config");
    // The subject's own default replaces the global one key by key; the global override stays.
    reg.set_config(
        Some("orders"),
        extra(json!({"defaultMetadata": {"properties": {"owner": "shop"}}})),
        None,
    )
    .await
    .expect("subject config");

    let mut v1 =
        avro_request(r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"int"}]}"#);
    v1.metadata = Some(json!({"properties": {"tier": "gold", "region": "us"}}));
    let first = reg
        .register("orders", v1, RegisterOptions::default())
        .await
        .expect("register v1");
    assert_eq!(
        first.schema.metadata,
        Some(
            json!({"properties": {"owner": "shop", "region": "eu", "tier": "gold"},
                    "sensitive": ["secret"]})
        ),
        "default < request < override"
    );
    assert_eq!(
        first.schema.rule_set,
        Some(json!({"domainRules": [rule("checkId", "message.id > 0")]})),
        "the global default rule set applies where the subject sets none"
    );

    // Without metadata the previous version's (already merged) metadata is the specific one.
    let v2 = avro_request(
        r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"int"},{"name":"note","type":"string","default":""}]}"#,
    );
    let second = reg
        .register("orders", v2, RegisterOptions::default())
        .await
        .expect("register v2");
    assert_eq!(second.version, 2);
    assert_eq!(second.schema.metadata, first.schema.metadata);

    // An override rule set is appended after the specific rules, replacing same-named ones.
    reg.set_config(
        Some("orders"),
        extra(json!({"overrideRuleSet": {"domainRules": [rule("checkId", "message.id >= 0")]}})),
        None,
    )
    .await
    .expect("override rules");
    let mut v3 = avro_request(
        r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"int"},{"name":"note","type":"string","default":""},{"name":"qty","type":"int","default":1}]}"#,
    );
    v3.rule_set = Some(json!({"domainRules": [rule("checkQty", "message.qty > 0")]}));
    let third = reg
        .register("orders", v3, RegisterOptions::default())
        .await
        .expect("register v3");
    assert_eq!(
        third.schema.rule_set,
        Some(json!({"domainRules": [
            rule("checkQty", "message.qty > 0"),
            rule("checkId", "message.id >= 0"),
        ]}))
    );

    // Registering the same schema again resolves to the same merged identity: no new version.
    let again = reg
        .register(
            "orders",
            avro_request(
                r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"int"},{"name":"note","type":"string","default":""},{"name":"qty","type":"int","default":1}]}"#,
            ),
            RegisterOptions::default(),
        )
        .await
        .expect("re-register v3");
    assert_eq!(
        (again.id, again.version, again.created),
        (third.id, 3, false)
    );
}

#[tokio::test]
async fn an_invalid_rule_set_in_a_contract_is_refused_at_registration() {
    use serde_json::json;
    let (_d, reg) = registry();
    // A merge can produce a clash the config alone does not show: the same rule name in two lists.
    reg.set_config(
        None,
        extra(json!({"overrideRuleSet": {"migrationRules": [
            {"name": "r", "type": "JSONATA", "mode": "UPGRADE"}]}})),
        None,
    )
    .await
    .expect("config");
    let mut request = avro_request(r#""string""#);
    request.rule_set = Some(json!({"domainRules": [{"name": "r", "type": "CEL"}]}));
    assert!(matches!(
        reg.register("s", request, RegisterOptions::default()).await,
        Err(RegistryError::InvalidRuleSet(m)) if m.contains("duplicate name 'r'")
    ));
}

/// A delete racing a registration that adds a reference to the deleted version: exactly one
/// wins, and a live version never references a deleted one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_and_referencing_registration_do_not_race() {
    let (_d, reg) = registry();
    let reg = Arc::new(reg);
    for i in 0..25 {
        let base = format!("base-{i}");
        let user = format!("user-{i}");
        reg.register(
            &base,
            avro_request(
                r#"{"type":"record","name":"Base","fields":[{"name":"a","type":"string"}]}"#,
            ),
            RegisterOptions::default(),
        )
        .await
        .expect("register base");
        let mut request = avro_request(
            r#"{"type":"record","name":"User","fields":[{"name":"b","type":"Base"}]}"#,
        );
        request.references = vec![SchemaRef {
            name: "Base".into(),
            subject: base.clone(),
            version: 1,
        }];
        let (r1, r2) = (reg.clone(), reg.clone());
        let (b1, u1) = (base.clone(), user.clone());
        let registering =
            tokio::spawn(
                async move { r1.register(&u1, request, RegisterOptions::default()).await },
            );
        let deleting = tokio::spawn(async move {
            r2.delete_version(&b1, VersionSpec::Number(1), false, None)
                .await
        });
        let registered = registering.await.expect("join");
        let deleted = deleting.await.expect("join");
        match (&registered, &deleted) {
            (Ok(_), Err(RegistryError::Referenced(s, 1))) => assert_eq!(s, &base),
            (Err(RegistryError::InvalidSchema(m)), Ok(1)) => {
                assert!(m.contains("No schema reference found"), "{m}")
            }
            other => panic!("round {i}: exactly one of register/delete must win, got {other:?}"),
        }
        let base_deleted = reg
            .store
            .subject_versions(&base)
            .await
            .expect("versions")
            .iter()
            .all(|v| v.deleted);
        let user_live = reg
            .store
            .subject_versions(&user)
            .await
            .expect("versions")
            .iter()
            .any(|v| !v.deleted);
        assert!(
            !(base_deleted && user_live),
            "round {i}: a live reference to a deleted version"
        );
    }
}

/// The id caches stay within their bound however many schemas pass through them, and an
/// evicted id is still served (from the store) with the same content.
#[tokio::test]
async fn id_caches_never_grow_past_their_bound() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path()).expect("open store");
    let reg = Registry::new(Arc::new(store)).with_cache_entries(4);
    let mut ids = Vec::new();
    for s in 0..12 {
        for v in 0..3 {
            let mut fields = vec![r#"{"name":"a","type":"string"}"#.to_string()];
            for f in 0..v {
                fields.push(format!(
                    r#"{{"name":"f{f}","type":["null","string"],"default":null}}"#
                ));
            }
            let schema = format!(
                r#"{{"type":"record","name":"R{s}","fields":[{}]}}"#,
                fields.join(",")
            );
            let r = reg
                .register(
                    &format!("s{s}"),
                    SchemaRequest {
                        schema,
                        ..SchemaRequest::default()
                    },
                    RegisterOptions::default(),
                )
                .await
                .expect("register");
            ids.push((r.id, r.schema.schema.clone()));
            let usage = reg.cache_usage();
            assert_eq!(usage.capacity, 4);
            assert!(
                usage.records <= 4 && usage.parsed <= 4,
                "caches grew past 4 entries: {usage:?}"
            );
        }
    }
    for (id, text) in &ids {
        let record = reg.schema_by_id(*id).await.expect("by id");
        assert_eq!(&record.schema, text);
        let usage = reg.cache_usage();
        assert!(usage.records <= 4, "{usage:?}");
    }
    assert_eq!(reg.cache_usage().records, 4);
}

/// A subject with more versions than the cache holds still registers under a transitive
/// level: the priors the check needs are kept for the registration, not only in the cache.
#[tokio::test]
async fn transitive_check_works_with_a_tiny_cache() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path()).expect("open store");
    let reg = Registry::new(Arc::new(store)).with_cache_entries(1);
    reg.set_config(
        None,
        ConfigUpdate {
            compatibility: Some(Value::String("FULL_TRANSITIVE".into())),
            extra: Map::new(),
        },
        None,
    )
    .await
    .expect("config");
    let mut fields = Vec::new();
    for v in 0..6 {
        fields.push(format!(
            r#"{{"name":"f{v}","type":["null","string"],"default":null}}"#
        ));
        let schema = format!(
            r#"{{"type":"record","name":"T","fields":[{}]}}"#,
            fields.join(",")
        );
        let r = reg
            .register(
                "t",
                SchemaRequest {
                    schema,
                    ..SchemaRequest::default()
                },
                RegisterOptions::default(),
            )
            .await
            .expect("register under a one-entry cache");
        assert_eq!(r.version, v + 1);
    }
    let bad = r#"{"type":"record","name":"T","fields":[{"name":"f0","type":"int"}]}"#;
    let refused = reg
        .register(
            "t",
            SchemaRequest {
                schema: bad.into(),
                ..SchemaRequest::default()
            },
            RegisterOptions::default(),
        )
        .await;
    assert!(
        matches!(refused, Err(RegistryError::Incompatible { .. })),
        "{refused:?}"
    );
}

#[tokio::test]
async fn audited_writes_record_their_actor_and_refusals_record_nothing() {
    let (_dir, reg) = registry();
    let ctx = AuditContext {
        principal: "alice".into(),
        source: None,
        request_id: Some("r-1".into()),
        detail: None,
    };
    let options = RegisterOptions {
        audit: Some(&ctx),
        ..RegisterOptions::default()
    };
    let record = |fields: &str| SchemaRequest {
        schema: format!(r#"{{"type":"record","name":"R","fields":[{fields}]}}"#),
        ..SchemaRequest::default()
    };
    let first = reg
        .register("orders", record(r#"{"name":"a","type":"int"}"#), options)
        .await
        .expect("v1");
    // A new field without a default is not BACKWARD compatible: refused, nothing recorded.
    let refused = reg
        .register("orders", record(r#"{"name":"b","type":"int"}"#), options)
        .await;
    assert!(matches!(refused, Err(RegistryError::Incompatible { .. })));
    reg.delete_version("orders", VersionSpec::Number(1), false, Some(&ctx))
        .await
        .expect("soft delete");
    let trail = reg
        .store()
        .audit_entries(&covenant_store::AuditQuery {
            limit: 10,
            ..Default::default()
        })
        .await
        .expect("trail");
    let seen: Vec<(&str, &str, Option<i64>)> = trail
        .iter()
        .map(|e| (e.operation.as_str(), e.principal.as_str(), e.version))
        .collect();
    assert_eq!(
        seen,
        [
            ("register", "alice", Some(first.version)),
            ("delete.soft", "alice", Some(1))
        ]
    );
    assert_eq!(trail[0].schema_id, Some(first.id));
}

#[tokio::test]
async fn limits_and_the_check_budget_apply_to_registrations_and_tests() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path()).expect("open store");
    let reg = Registry::new(Arc::new(store))
        .with_schema_limits(Limits {
            max_fields: 4,
            ..Limits::default()
        })
        .with_check_budget(CheckBudget {
            time: std::time::Duration::from_secs(5),
            max_work: 40,
        });
    let record = |n: usize| {
        let fields: Vec<String> = (0..n)
            .map(|i| format!(r#"{{"name":"f{i}","type":"int","default":0}}"#))
            .collect();
        avro_request(&format!(
            r#"{{"type":"record","name":"R","fields":[{{"name":"inner","type":{{"type":"record","name":"I","fields":[{}]}}}}]}}"#,
            fields.join(",")
        ))
    };
    match reg
        .register("s", record(4), RegisterOptions::default())
        .await
    {
        Err(RegistryError::InvalidSchema(m)) => assert!(m.contains("max-fields = 4"), "{m}"),
        other => panic!("expected a limit error, got {other:?}"),
    }
    // The nested record's three fields lower into 24 units of field tree: the first version
    // fits, a second one (old and new trees) does not.
    reg.register("s", record(3), RegisterOptions::default())
        .await
        .expect("first version within the budget");
    for outcome in [
        reg.register("s", record(2), RegisterOptions::default())
            .await
            .map(|_| ()),
        reg.test_compatibility("s", None, &record(2), false)
            .await
            .map(|_| ()),
    ] {
        assert!(
            matches!(outcome, Err(RegistryError::CheckBudgetExceeded(_))),
            "{outcome:?}"
        );
    }
}

/// Two nodes' worth of registries on one store (so they do not take turns), racing two
/// candidates that each follow v1 but not each other: both are judged on the same snapshot,
/// and the commit guard must let exactly one land.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_registries_racing_incompatible_candidates_land_exactly_one() {
    use serde_json::json;
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(SqliteStore::open(dir.path()).expect("open store"));
    let (a, b) = (
        Arc::new(Registry::new(store.clone())),
        Arc::new(Registry::new(store)),
    );
    // Wide records make judging slow enough for both verdicts to overlap.
    let record = |x: Option<(&str, Value)>| {
        let mut fields: Vec<Value> = (0..1500)
            .map(|i| json!({"name": format!("f{i}"), "type": "string"}))
            .collect();
        if let Some((kind, default)) = x {
            fields.push(json!({"name": "x", "type": kind, "default": default}));
        }
        json!({"type": "record", "name": "R", "fields": fields}).to_string()
    };
    for round in 0..12 {
        let subject = format!("race-{round}");
        a.register(
            &subject,
            avro_request(&record(None)),
            RegisterOptions::default(),
        )
        .await
        .expect("v1");
        let (ra, rb, sa, sb) = (a.clone(), b.clone(), subject.clone(), subject.clone());
        let (int_x, string_x) = (
            avro_request(&record(Some(("int", json!(0))))),
            avro_request(&record(Some(("string", json!(""))))),
        );
        let first =
            tokio::spawn(async move { ra.register(&sa, int_x, RegisterOptions::default()).await });
        let second =
            tokio::spawn(
                async move { rb.register(&sb, string_x, RegisterOptions::default()).await },
            );
        let outcomes = [first.await.expect("join"), second.await.expect("join")];
        let landed = outcomes.iter().filter(|o| o.is_ok()).count();
        let refused = outcomes
            .iter()
            .filter(|o| matches!(o, Err(RegistryError::Incompatible { .. })))
            .count();
        let kinds: Vec<String> = outcomes
            .iter()
            .map(|o| match o {
                Ok(r) => format!("landed as v{}", r.version),
                Err(e) => format!("{e}").chars().take(120).collect(),
            })
            .collect();
        assert_eq!((landed, refused), (1, 1), "round {round}: {kinds:?}");
        let versions = a.store.subject_versions(&subject).await.expect("versions");
        assert_eq!(versions.len(), 2, "round {round}");
    }
}

#[test]
fn subject_names_follow_confluent_and_the_documented_limit() {
    use crate::{MAX_SUBJECT_CHARS, SubjectUse, validate_subject};
    let ok = |s: &str, using| validate_subject(s, using).is_ok();
    for s in [
        "orders-value",
        "../x",
        "...",
        " ",
        ":.ctx:orders",
        "\u{2603}",
    ] {
        assert!(ok(s, SubjectUse::Schemas), "{s}");
    }
    assert!(ok(&"s".repeat(MAX_SUBJECT_CHARS), SubjectUse::Schemas));
    for s in [
        "",
        ".",
        "..",
        ":.ctx:..",
        // The wildcard context selects listings; nothing lives in it.
        ":*:orders",
        "__GLOBAL",
        ":.ctx:__EMPTY",
        "a\u{7f}",
        ":.ctx:",
    ] {
        assert!(!ok(s, SubjectUse::Schemas), "{s:?}");
    }
    assert!(!ok(&"s".repeat(MAX_SUBJECT_CHARS + 1), SubjectUse::Schemas));
    assert!(!ok(":.__GLOBAL:orders", SubjectUse::Schemas));
    assert!(ok(":.__GLOBAL:", SubjectUse::ConfigOrMode));
    assert!(ok(":.ctx", SubjectUse::ConfigOrMode));
    assert!(!ok("__GLOBAL", SubjectUse::ConfigOrMode));
}

#[tokio::test]
async fn cached_answers_follow_deletes_config_and_new_versions() {
    use serde_json::json;
    let (_d, reg) = registry();
    // Registering v1 again after v2 removes 'b', which only Confluent's verdicts allow.
    reg.set_config(None, extra(json!({"policyPreset": "confluent"})), None)
        .await
        .expect("preset");
    let v1 = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}"#;
    let v2 = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"int","default":0}]}"#;
    let first = reg
        .register("s", avro_request(v1), RegisterOptions::default())
        .await
        .expect("v1");
    // Filled on write: the same request is answered without the store.
    let cached = reg
        .registered("s", &avro_request(v1), false)
        .expect("cached");
    assert_eq!((cached.schema.id, cached.version), (first.id, 1));
    assert!(
        reg.registered("s", &avro_request(v1), true).is_none(),
        "normalize is another key"
    );
    let found = reg
        .lookup("s", &avro_request(v1), false, false, None)
        .await
        .expect("lookup");
    assert_eq!(found.version, 1);
    assert!(
        reg.cache_usage().answers >= 2,
        "{:?}",
        reg.cache_usage().answers
    );

    reg.register("s", avro_request(v2), RegisterOptions::default())
        .await
        .expect("v2");
    // A soft delete is seen at once by both routes.
    reg.delete_version("s", VersionSpec::Number(1), false, None)
        .await
        .expect("soft delete");
    assert!(reg.registered("s", &avro_request(v1), false).is_none());
    assert!(matches!(
        reg.lookup("s", &avro_request(v1), false, false, None).await,
        Err(RegistryError::SchemaNotFound)
    ));
    let deleted = reg
        .lookup("s", &avro_request(v1), false, true, None)
        .await
        .expect("deleted=true");
    assert!(deleted.deleted);
    // Registering it again makes a new version, not the cached old answer.
    let again = reg
        .register("s", avro_request(v1), RegisterOptions::default())
        .await
        .expect("again");
    assert_eq!((again.version, again.created), (3, true));

    // Settings a request inherits: metadata from config changes what the same body registers.
    let before = reg
        .register("s", avro_request(v1), RegisterOptions::default())
        .await
        .expect("idempotent");
    assert!(!before.created);
    reg.set_config(
        Some("s"),
        extra(json!({"overrideMetadata": {"properties": {"owner": "team"}}})),
        None,
    )
    .await
    .expect("config");
    assert!(reg.registered("s", &avro_request(v1), false).is_none());
    let with_metadata = reg
        .register("s", avro_request(v1), RegisterOptions::default())
        .await
        .expect("with metadata");
    assert!(with_metadata.created, "the override makes it a new schema");
}

#[tokio::test]
async fn a_stale_answer_is_never_cached_across_a_hard_delete() {
    let (_d, reg) = registry();
    let text = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}"#;
    for round in 0..3 {
        let r = reg
            .register("s", avro_request(text), RegisterOptions::default())
            .await
            .expect("register");
        reg.lookup("s", &avro_request(text), false, false, None)
            .await
            .expect("lookup");
        reg.delete_subject("s", false, None).await.expect("soft");
        reg.delete_subject("s", true, None).await.expect("hard");
        assert!(
            matches!(
                reg.lookup("s", &avro_request(text), false, false, None)
                    .await,
                Err(RegistryError::SubjectNotFound(_))
            ),
            "round {round}: lookup answered {r:?} after a permanent delete"
        );
        assert!(reg.registered("s", &avro_request(text), false).is_none());
    }
}

/// Stored schemas keep their content keys across releases: the key must stay the SHA-256 of
/// the compact JSON array `[type, identity text, references, metadata, rule set]`.
#[test]
fn content_key_is_the_digest_of_the_identity_array() {
    fn reference_key(
        ty: &str,
        text: &str,
        refs: &[SchemaRef],
        meta: &Option<Value>,
        rules: &Option<Value>,
    ) -> String {
        let printed = match ty {
            "AVRO" => covenant_avro::identity_string(text),
            "PROTOBUF" => covenant_protobuf::identity_string(text),
            _ => None,
        };
        let text = printed.as_deref().unwrap_or(text);
        let identity = serde_json::json!([ty, text, refs, meta, rules]);
        let digest = sha2::Sha256::digest(identity.to_string().as_bytes());
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }
    let refs = vec![SchemaRef {
        name: "other \"quoted\".proto".into(),
        subject: "s\u{e9}".into(),
        version: 3,
    }];
    let meta = Some(serde_json::json!({"properties": {"owner": "team\t\u{2028}", "a": 1}}));
    let rules = Some(serde_json::json!({"domainRules": [{"name": "r", "disabled": false}]}));
    type Case<'a> = (
        &'a str,
        &'a str,
        &'a [SchemaRef],
        &'a Option<Value>,
        &'a Option<Value>,
    );
    let cases: [Case; 4] = [
        (
            "AVRO",
            r#"{"type": "record", "name": "R", "fields": []}"#,
            &[],
            &None,
            &None,
        ),
        ("AVRO", "not avro at all", &refs, &meta, &None),
        (
            "PROTOBUF",
            "syntax = \"proto3\";\nmessage M {}\n",
            &refs,
            &meta,
            &rules,
        ),
        (
            "JSON",
            "{\"description\":\"\\u0001 control\"}",
            &[],
            &None,
            &rules,
        ),
    ];
    for (ty, text, refs, meta, rules) in cases {
        let key = content_key(ty, text, refs, meta, rules);
        assert_eq!(
            key,
            reference_key(ty, text, refs, meta, rules),
            "{ty} {text}"
        );
        assert_eq!(key.len(), 64);
    }
}

/// A registration keys an Avro schema from the text it stored, without parsing that text
/// again: the key must be the one [`content_key`] derives from that text.
#[tokio::test]
async fn registered_avro_keys_are_the_content_keys_of_their_stored_text() {
    let (_dir, reg) = registry();
    let texts = [
        r#"{"type": "int"}"#,
        r#"  "string"  "#,
        r#"{"type": "record", "name": "R", "namespace": "a.b", "doc": "caf\u00e9 \"q\"",
            "fields": [{"name": "f", "type": ["null", {"type": "enum", "name": "E",
            "symbols": ["X"]}], "default": null, "order": "descending"},
            {"name": "g", "type": "double", "default": -0.0},
            {"name": "h", "type": "long", "default": 12345678901234},
            {"name": "i", "type": {"type": "fixed", "name": "F", "size": 2}, "default": "\u00ff\u0001"},
            {"name": "j", "type": {"type": "map", "values": "float"}, "default": {"k": 1.5e3}}]}"#,
        r#"{"fields": [], "name": "c.d.Q", "type": "record", "aliases": ["x.Old"]}"#,
        r#"{"type": "array", "items": {"type": "long", "logicalType": "timestamp-millis"}}"#,
    ];
    for (n, text) in texts.iter().enumerate() {
        let subject = format!("keys-{n}");
        reg.register(&subject, avro_request(text), RegisterOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{text}: {e}"));
        let versions = reg
            .store
            .subject_versions(&subject)
            .await
            .expect("versions");
        let stored = &versions.last().expect("a version").schema;
        let expected = content_key(
            &stored.schema_type,
            &stored.schema,
            &stored.references,
            &stored.metadata,
            &stored.rule_set,
        );
        assert_eq!(stored.content_key, expected, "{text}");
    }
}

/// A registration that starts from a read its request made earlier (`first_read`, what the
/// alias lookup read) lands on the subject as it is at its commit: a version registered since
/// sends it back to the store, and it takes the next number; a later attempt never reuses that
/// read.
#[tokio::test]
async fn a_registration_starting_from_an_old_read_lands_on_the_subject_as_it_is() {
    let (_dir, reg) = registry();
    let record = |fields: &str| {
        avro_request(&format!(
            r#"{{"type": "record", "name": "R", "fields": [{fields}]}}"#
        ))
    };
    let a = r#"{"name": "a", "type": "int"}"#;
    let b = r#"{"name": "b", "type": "int", "default": 0}"#;
    let c = r#"{"name": "c", "type": "int", "default": 0}"#;
    reg.register("s", record(a), RegisterOptions::default())
        .await
        .expect("v1");
    let old = reg.subject_read("s", None).await.expect("read");
    assert_eq!(old.versions.len(), 1);
    reg.register(
        "s",
        record(&format!("{a}, {b}")),
        RegisterOptions::default(),
    )
    .await
    .expect("v2");
    let options = RegisterOptions {
        first_read: Some(&old),
        ..RegisterOptions::default()
    };
    let v3 = reg
        .register("s", record(&format!("{a}, {b}, {c}")), options)
        .await
        .expect("v3");
    assert_eq!((v3.version, v3.created), (3, true));
    // The old read says v2 does not exist; the subject says it does.
    let again = reg
        .register("s", record(&format!("{a}, {b}")), options)
        .await
        .expect("v2 again");
    assert_eq!((again.version, again.created), (2, false));
    let versions = reg.store.subject_versions("s").await.expect("versions");
    assert_eq!(versions.len(), 3);
}

"""The remaining SchemaRegistryClient calls: listing, versions, deletes, normalized lookups,
levels, modes, compatibility tests, formats and data contracts set in config."""

import json
import urllib.request
from contextlib import contextmanager

import pytest
from confluent_kafka.schema_registry import (
    ConfigCompatibilityLevel,
    Metadata,
    MetadataProperties,
    Rule,
    RuleKind,
    RuleMode,
    RuleSet,
    Schema,
    SchemaReference,
    SchemaRegistryClient,
    ServerConfig,
)
from confluent_kafka.schema_registry.error import SchemaRegistryError

V1 = json.dumps({
    "type": "record", "name": "Item", "namespace": "acme.calls",
    "fields": [{"name": "sku", "type": "string"}],
})
V2 = json.dumps({
    "type": "record", "name": "Item", "namespace": "acme.calls",
    "fields": [{"name": "sku", "type": "string"},
               {"name": "qty", "type": "int", "default": 1}],
})
V3_INCOMPATIBLE = json.dumps({
    "type": "record", "name": "Item", "namespace": "acme.calls",
    "fields": [{"name": "sku", "type": "long"}],
})


def avro(text):
    return Schema(text, "AVRO", [])


@contextmanager
def global_level(client, level):
    """Sets the global level for the block and puts the previous one back."""
    before = client.get_compatibility()
    client.set_compatibility(level=level)
    try:
        yield
    finally:
        client.set_compatibility(level=before)


def test_get_subjects_filters_pages_and_shows_deleted(client, subject):
    names = [f"{subject}-{c}" for c in "abc"]
    for name in names:
        client.register_schema(name, avro(V1))
    assert client.get_subjects(subject_prefix=subject) == names
    assert client.get_subjects(subject_prefix=subject, offset=1, limit=1) == [names[1]]
    client.delete_subject(names[0])
    assert client.get_subjects(subject_prefix=subject) == names[1:]
    assert client.get_subjects(subject_prefix=subject, deleted=True) == names
    everything = client.get_subjects()
    assert names[1] in everything and names[0] not in everything


def test_get_version_by_number_latest_and_deleted(client, subject):
    id1 = client.register_schema(subject, avro(V1))
    id2 = client.register_schema(subject, avro(V2))
    v1 = client.get_version(subject, 1)
    assert (v1.schema_id, v1.version, v1.subject) == (id1, 1, subject)
    assert json.loads(v1.schema.schema_str) == json.loads(V1)
    latest = client.get_version(subject, "latest")
    assert (latest.schema_id, latest.version) == (id2, 2)
    with pytest.raises(SchemaRegistryError) as e:
        client.get_version(subject, 3)
    assert (e.value.http_status_code, e.value.error_code) == (404, 40402)
    with pytest.raises(SchemaRegistryError) as e:
        client.get_version(subject + "-missing", 1)
    assert e.value.error_code == 40401


def test_delete_version_soft_then_permanent(client, subject, url):
    client.register_schema(subject, avro(V1))
    id2 = client.register_schema(subject, avro(V2))
    assert client.delete_version(subject, 2) == 2
    assert client.get_versions(subject) == [1]
    fresh = SchemaRegistryClient({"url": url})
    try:
        with pytest.raises(SchemaRegistryError) as e:
            fresh.get_version(subject, 2)
        assert e.value.error_code == 40402
        soft = fresh.get_version(subject, 2, deleted=True)
        assert (soft.schema_id, soft.version) == (id2, 2)
        assert fresh.get_schema(id2).schema_str, "the id of a soft-deleted version resolves"
        with pytest.raises(SchemaRegistryError) as e:
            fresh.delete_version(subject, 2)
        assert e.value.error_code == 40406, "a second soft delete says it was soft deleted"
        assert fresh.delete_version(subject, 2, permanent=True) == 2
        with pytest.raises(SchemaRegistryError) as e:
            fresh.get_version(subject, 2, deleted=True)
        assert e.value.error_code == 40402
    finally:
        fresh.close()
    with pytest.raises(SchemaRegistryError) as e:
        client.delete_version(subject, 1, permanent=True)
    assert e.value.error_code == 40407, "permanent delete needs a soft delete first"
    # Content keeps its id; the permanently deleted version number is free again.
    assert client.register_schema(subject, avro(V2)) == id2
    assert client.get_versions(subject) == [1, 2]


def test_lookup_and_register_ignore_key_order_like_confluent(client, subject):
    sid = client.register_schema(subject, avro(V1))
    # Same schema, other key order and the long form of a primitive: Confluent compares the
    # schema as Avro prints it, so it is the same schema with or without normalize.
    reordered = json.dumps({
        "fields": [{"type": {"type": "string"}, "name": "sku"}],
        "namespace": "acme.calls", "name": "Item", "type": "record",
    })
    found = client.lookup_schema(subject, avro(reordered))
    assert (found.schema_id, found.version, found.subject) == (sid, 1, subject)
    found = client.lookup_schema(subject, avro(reordered), normalize_schemas=True)
    assert (found.schema_id, found.version, found.subject) == (sid, 1, subject)
    # Registering it finds the same version instead of adding one.
    assert client.register_schema(subject, avro(reordered)) == sid
    assert client.register_schema(subject, avro(reordered), normalize_schemas=True) == sid
    assert client.get_versions(subject) == [1]
    # Another field is another schema.
    widened = json.dumps({
        "type": "record", "name": "Item", "namespace": "acme.calls",
        "fields": [{"name": "sku", "type": "string"}, {"name": "note", "type": ["null", "string"], "default": None}],
    })
    with pytest.raises(SchemaRegistryError) as e:
        client.lookup_schema(subject, avro(widened))
    assert e.value.error_code == 40403


def test_lookup_of_soft_deleted_version_needs_deleted(client, subject):
    sid = client.register_schema(subject, avro(V1))
    client.register_schema(subject, avro(V2))
    client.delete_version(subject, 1)
    with pytest.raises(SchemaRegistryError) as e:
        client.lookup_schema(subject, avro(V1))
    assert e.value.error_code == 40403
    found = client.lookup_schema(subject, avro(V1), deleted=True)
    assert (found.schema_id, found.version) == (sid, 1)


def test_compatibility_levels_per_subject_and_global(client, subject):
    client.register_schema(subject, avro(V1))
    assert client.set_compatibility(subject_name=subject, level="FORWARD") == {"compatibility": "FORWARD"}
    assert client.get_compatibility(subject) == "FORWARD"
    with global_level(client, "FULL_TRANSITIVE"):
        assert client.get_compatibility() == "FULL_TRANSITIVE"
        assert client.get_compatibility(subject) == "FORWARD", "the subject's own level wins"
        other = subject + "-other"
        client.register_schema(other, avro(V1))
        # A type change fails FULL in both directions; a defaulted field passes.
        assert client.test_compatibility(other, avro(V3_INCOMPATIBLE)) is False
        assert client.test_compatibility(other, avro(V2)) is True
    with pytest.raises(SchemaRegistryError) as e:
        client.set_compatibility(subject_name=subject, level="SIDEWAYS")
    assert (e.value.http_status_code, e.value.error_code) == (422, 42203)
    config = client.set_config(
        subject, ServerConfig(compatibility=ConfigCompatibilityLevel.NONE, compatibility_group="major"))
    assert config == {"compatibility": "NONE", "compatibilityGroup": "major"}
    got = client.get_config(subject)
    assert (got.compatibility_level, got.compatibility_group) == (ConfigCompatibilityLevel.NONE, "major")


def test_test_compatibility_reports_incompatible_schemas(client, subject, url):
    client.register_schema(subject, avro(V1))
    client.register_schema(subject, avro(V2))
    assert client.test_compatibility(subject, avro(V3_INCOMPATIBLE)) is False
    assert client.test_compatibility(subject, avro(V3_INCOMPATIBLE), version=1) is False
    assert client.test_compatibility(subject, avro(V2), version="latest") is True
    assert client.test_compatibility(subject, avro(V3_INCOMPATIBLE), verbose=True) is False
    assert client.test_compatibility_all_versions(subject, avro(V3_INCOMPATIBLE)) is False
    with pytest.raises(SchemaRegistryError) as e:
        client.test_compatibility(subject, avro(V2), version=9)
    assert e.value.error_code == 40402
    # verbose=true carries the reasons, each naming a rule and a path.
    req = urllib.request.Request(
        f"{url}/compatibility/subjects/{subject}/versions/latest?verbose=true",
        data=json.dumps({"schema": V3_INCOMPATIBLE}).encode(),
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"}, method="POST")
    with urllib.request.urlopen(req) as r:
        body = json.loads(r.read())
    assert body["is_compatible"] is False
    assert any("sku" in m for m in body["messages"]), body


def test_modes_per_subject_and_global(client, subject):
    client.register_schema(subject, avro(V1))
    assert client.update_mode(subject, "READONLY") == "READONLY"
    assert client.get_mode(subject) == "READONLY"
    with pytest.raises(SchemaRegistryError) as e:
        client.delete_version(subject, 1)
    assert e.value.error_code == 42205
    assert client.update_mode(subject, "READWRITE") == "READWRITE"
    assert client.delete_mode(subject) == "READWRITE"
    assert client.get_global_mode() == "READWRITE"
    assert client.update_global_mode("READONLY") == "READONLY"
    try:
        assert client.get_global_mode() == "READONLY"
        with pytest.raises(SchemaRegistryError) as e:
            client.register_schema(subject + "-new", avro(V1))
        assert e.value.error_code == 42205
    finally:
        assert client.update_global_mode("READWRITE") == "READWRITE"
    with pytest.raises(SchemaRegistryError) as e:
        client.update_mode(subject, "FORWARD")
    assert e.value.error_code == 42204
    with pytest.raises(SchemaRegistryError) as e:
        client.update_mode(subject, "SIDEWAYS")
    assert e.value.error_code == 42204


def test_get_schema_with_format(client, subject, url):
    address = json.dumps({"type": "record", "name": "Address", "namespace": "acme.calls",
                          "fields": [{"name": "street", "type": "string"}]})
    person = json.dumps({"type": "record", "name": "Person", "namespace": "acme.calls",
                         "fields": [{"name": "home", "type": "acme.calls.Address"}]})
    client.register_schema(subject + "-address", avro(address))
    ref = SchemaReference("acme.calls.Address", subject + "-address", 1)
    pid = client.register_schema(subject, Schema(person, "AVRO", [ref]))
    plain = client.get_schema(pid)
    # Stored as Avro's printer writes it (what Confluent stores: AvroSchema.canonicalString()),
    # so a type in the record's own namespace is named by its short name.
    assert json.loads(plain.schema_str)["fields"][0]["type"] == "Address"
    fresh = SchemaRegistryClient({"url": url})
    try:
        resolved = fresh.get_schema(pid, fmt="resolved")
        home = json.loads(resolved.schema_str)["fields"][0]["type"]
        assert home["name"] == "acme.calls.Address", resolved.schema_str
        assert home["fields"][0]["name"] == "street"
        # Unknown formats fall back to the stored text.
        other = SchemaRegistryClient({"url": url})
        try:
            assert json.loads(other.get_schema(pid, fmt="nonsense").schema_str) == json.loads(plain.schema_str)
        finally:
            other.close()
        by_version = fresh.get_version(subject, 1, fmt="resolved")
        assert json.loads(by_version.schema.schema_str)["fields"][0]["type"]["name"] == "acme.calls.Address"
        assert fresh.get_latest_version(subject, fmt="resolved").schema_id == pid
    finally:
        fresh.close()


def test_config_data_contracts_apply_at_registration(client, subject):
    rule = Rule(name="positiveQty", doc=None, kind=RuleKind.CONDITION, mode=RuleMode.WRITE,
                type="CEL", tags=None, params=None, expr="message.qty > 0",
                on_success=None, on_failure=None, disabled=True)
    config = ServerConfig(
        default_metadata=Metadata(None, MetadataProperties({"owner": "unknown", "tier": "bronze"}), None),
        override_metadata=Metadata(None, MetadataProperties({"region": "eu"}), None),
        default_rule_set=RuleSet(migration_rules=None, domain_rules=[rule]),
    )
    client.set_config(subject, config)
    got = client.get_config(subject)
    assert got.override_metadata.properties.properties == {"region": "eu"}
    assert [r.name for r in got.default_rule_set.domain_rules] == ["positiveQty"]

    mine = Metadata(None, MetadataProperties({"owner": "shop", "region": "us"}), None)
    client.register_schema(subject, Schema(V1, "AVRO", [], metadata=mine))
    v1 = client.get_version(subject, 1)
    assert v1.schema.metadata.properties.properties == {
        "owner": "shop", "region": "eu", "tier": "bronze"}, "default < request < override"
    assert [r.name for r in v1.schema.rule_set.domain_rules] == ["positiveQty"]

    # Without metadata in the request the previous version's is carried over.
    client.register_schema(subject, avro(V2))
    v2 = client.get_version(subject, 2)
    assert v2.schema.metadata.properties.properties == v1.schema.metadata.properties.properties
    latest = client.get_latest_with_metadata(subject, {"owner": "shop"})
    assert latest.version == 2

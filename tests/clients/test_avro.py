"""Avro through SchemaRegistryClient and the Avro serde: every call the client makes."""

import json

import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

V1 = json.dumps({
    "type": "record", "name": "User", "namespace": "acme",
    "fields": [{"name": "name", "type": "string"}],
})
V2_DEFAULT = json.dumps({
    "type": "record", "name": "User", "namespace": "acme",
    "fields": [{"name": "name", "type": "string"},
               {"name": "age", "type": "int", "default": 7}],
})
V2_NO_DEFAULT = json.dumps({
    "type": "record", "name": "User", "namespace": "acme",
    "fields": [{"name": "name", "type": "string"},
               {"name": "age", "type": "int"}],
})


def avro(text, refs=None):
    return Schema(text, "AVRO", refs or [])


def test_register_lookup_and_read_back(client, subject):
    sid = client.register_schema(subject, avro(V1))
    assert sid > 0
    assert client.register_schema(subject, avro(V1)) == sid, "re-registering is idempotent"
    found = client.lookup_schema(subject, avro(V1))
    assert (found.schema_id, found.version, found.subject) == (sid, 1, subject)
    by_id = client.get_schema(sid)
    assert by_id.schema_type == "AVRO"
    assert json.loads(by_id.schema_str) == json.loads(V1)
    assert client.get_versions(subject) == [1]
    latest = client.get_latest_version(subject)
    assert (latest.schema_id, latest.version) == (sid, 1)
    assert client.get_version(subject, 1).schema_id == sid
    assert subject in client.get_subjects()
    assert client.get_subjects_by_schema_id(sid) == [subject]
    assert [(v.subject, v.version) for v in client.get_schema_versions(sid)] == [(subject, 1)]
    # Confluent's three types, and Apache Iceberg table schemas.
    assert set(client.get_schema_types()) == {"AVRO", "JSON", "PROTOBUF", "ICEBERG"}
    assert client.get_contexts()[0] == "."


def test_lookup_of_unknown_schema_is_40403(client, subject):
    client.register_schema(subject, avro(V1))
    with pytest.raises(SchemaRegistryError) as e:
        client.lookup_schema(subject, avro('"string"'))
    assert e.value.error_code == 40403
    with pytest.raises(SchemaRegistryError) as e:
        client.lookup_schema(subject + "-missing", avro(V1))
    assert e.value.error_code == 40401


def test_same_schema_under_two_subjects_shares_the_id(client, subject):
    a = client.register_schema(subject + "-a", avro(V1))
    b = client.register_schema(subject + "-b", avro(V1))
    assert a == b


def test_backward_compatibility_is_enforced_with_findings(client, subject):
    client.register_schema(subject, avro(V1))
    assert client.test_compatibility(subject, avro(V2_DEFAULT)) is True
    assert client.test_compatibility(subject, avro(V2_NO_DEFAULT)) is False
    assert client.test_compatibility_all_versions(subject, avro(V2_NO_DEFAULT)) is False
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema(subject, avro(V2_NO_DEFAULT))
    assert e.value.http_status_code == 409
    assert e.value.error_code == 40901
    assert subject in e.value.error_message
    assert "age" in e.value.error_message
    assert client.register_schema(subject, avro(V2_DEFAULT)) > 0
    assert client.get_versions(subject) == [1, 2]


def test_invalid_schema_is_42201(client, subject):
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema(subject, avro('{"type": "record", "name": "X"}'))
    assert e.value.error_code == 42201


def test_config_levels(client, subject):
    client.register_schema(subject, avro(V1))
    with pytest.raises(SchemaRegistryError) as e:
        client.get_config(subject)
    assert e.value.error_code == 40408
    assert client.set_compatibility(subject_name=subject, level="none") == {"compatibility": "NONE"}
    assert client.get_compatibility(subject) == "NONE"
    assert client.get_config(subject).compatibility_level == "NONE"
    # With NONE anything goes.
    assert client.register_schema(subject, avro(V2_NO_DEFAULT)) > 0
    client.delete_config(subject)
    with pytest.raises(SchemaRegistryError) as e:
        client.get_config(subject)
    assert e.value.error_code == 40408
    assert client.get_compatibility() in {"BACKWARD", "NONE", "FULL", "FORWARD",
                                          "BACKWARD_TRANSITIVE", "FORWARD_TRANSITIVE",
                                          "FULL_TRANSITIVE"}


def test_modes(client, subject):
    client.register_schema(subject, avro(V1))
    assert client.get_global_mode() == "READWRITE"
    assert client.update_mode(subject, "READONLY") == "READONLY"
    assert client.get_mode(subject) == "READONLY"
    # An existing schema is still returned in read-only mode; a new one is refused.
    assert client.register_schema(subject, avro(V1)) > 0
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema(subject, avro(V2_DEFAULT))
    assert e.value.error_code == 42205
    with pytest.raises(SchemaRegistryError) as e:
        client.update_mode(subject, "IMPORT")
    assert e.value.error_code == 42205
    assert client.update_mode(subject, "IMPORT", force=True) == "IMPORT"
    assert client.delete_mode(subject) == "IMPORT"
    with pytest.raises(SchemaRegistryError) as e:
        client.get_mode(subject)
    assert e.value.error_code == 40409


def test_soft_and_permanent_deletes(client, subject):
    sid = client.register_schema(subject, avro(V1))
    client.register_schema(subject, avro(V2_DEFAULT))
    with pytest.raises(SchemaRegistryError) as e:
        client.delete_version(subject, 1, permanent=True)
    assert e.value.error_code == 40407
    assert client.delete_version(subject, 1) == 1
    assert client.get_versions(subject) == [2]
    assert client.get_schema(sid).schema_str, "a soft-deleted version's id still resolves"
    with pytest.raises(SchemaRegistryError) as e:
        client.delete_subject(subject, permanent=True)
    assert e.value.error_code == 40405
    assert client.delete_subject(subject) == [2]
    assert subject not in client.get_subjects()
    with pytest.raises(SchemaRegistryError) as e:
        client.delete_subject(subject)
    assert e.value.error_code == 40404
    assert sorted(client.delete_subject(subject, permanent=True)) == [1, 2]
    with pytest.raises(SchemaRegistryError) as e:
        client.get_versions(subject)
    assert e.value.error_code == 40401


def test_named_type_references(client, subject):
    address = json.dumps({"type": "record", "name": "Address", "namespace": "acme",
                          "fields": [{"name": "street", "type": "string"}]})
    person = json.dumps({"type": "record", "name": "Person", "namespace": "acme",
                         "fields": [{"name": "home", "type": "acme.Address"}]})
    addr_subject = subject + "-address"
    addr_id = client.register_schema(addr_subject, avro(address))
    ref = SchemaReference("acme.Address", addr_subject, 1)
    pid = client.register_schema(subject, avro(person, [ref]))
    got = client.get_schema(pid)
    assert [(r.name, r.subject, r.version) for r in got.references] == [("acme.Address", addr_subject, 1)]
    assert client.get_referenced_by(addr_subject, 1) == [pid]
    assert addr_id != pid
    with pytest.raises(SchemaRegistryError) as e:
        client.delete_subject(addr_subject)
    assert e.value.error_code == 42206
    missing = SchemaReference("acme.Address", subject + "-nowhere", 1)
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema(subject + "-2", avro(person, [missing]))
    assert e.value.error_code == 42201


def test_serialize_then_read_with_an_evolved_schema(client, topic):
    ctx = SerializationContext(topic, MessageField.VALUE)
    ser = AvroSerializer(client, V1, conf={"auto.register.schemas": True})
    data = ser({"name": "ann"}, ctx)
    assert data[0] == 0
    writer_id = int.from_bytes(data[1:5], "big")
    assert client.get_latest_version(f"{topic}-value").schema_id == writer_id
    client.register_schema(f"{topic}-value", avro(V2_DEFAULT))
    de = AvroDeserializer(client, schema_str=V2_DEFAULT)
    assert de(data, ctx) == {"name": "ann", "age": 7}
    plain = AvroDeserializer(client)
    assert plain(data, ctx) == {"name": "ann"}


def test_serializer_lookup_without_auto_register(client, topic):
    ctx = SerializationContext(topic, MessageField.VALUE)
    client.register_schema(f"{topic}-value", avro(V1))
    ser = AvroSerializer(client, V1, conf={"auto.register.schemas": False})
    data = ser({"name": "bob"}, ctx)
    assert AvroDeserializer(client)(data, ctx) == {"name": "bob"}
    latest = AvroSerializer(client, None, conf={"auto.register.schemas": False,
                                                 "use.latest.version": True})
    assert AvroDeserializer(client)(latest({"name": "cy"}, ctx), ctx) == {"name": "cy"}


def test_guid_framing_through_kafka_headers(url, topic):
    """Confluent 8 framing: the schema's guid in the `__value_schema_id` header, the payload
    unframed; a fresh client resolves the guid through GET /schemas/guids/{guid}."""
    from confluent_kafka.schema_registry import (
        SchemaRegistryClient, dual_schema_id_deserializer, header_schema_id_serializer)
    headers = []
    ctx = SerializationContext(topic, MessageField.VALUE, headers)
    writer = SchemaRegistryClient({"url": url})
    ser = AvroSerializer(writer, V1, conf={"auto.register.schemas": True,
                                            "schema.id.serializer": header_schema_id_serializer})
    # (The deserializer insists on more than 5 bytes before it looks at the headers.)
    data = ser({"name": "gilbert the reader"}, ctx)
    (key, guid_bytes), = headers
    assert key == "__value_schema_id" and guid_bytes[0] == 1 and len(guid_bytes) == 17
    registered = writer.get_latest_version(f"{topic}-value")
    assert registered.guid is not None
    import uuid as _uuid
    assert _uuid.UUID(bytes=guid_bytes[1:]) == _uuid.UUID(registered.guid)
    reader = SchemaRegistryClient({"url": url})
    de = AvroDeserializer(reader, conf={"schema.id.deserializer": dual_schema_id_deserializer})
    assert de(data, SerializationContext(topic, MessageField.VALUE, headers)) == {"name": "gilbert the reader"}
    by_guid = reader.get_schema_by_guid(registered.guid)
    assert json.loads(by_guid.schema_str) == json.loads(V1)


def test_whitespace_variants_of_an_avro_schema_get_one_id(client, topic):
    """Confluent keys an Avro schema by its canonical form (AvroSchema.canonicalString()),
    so the serializer's compact text and a hand-indented copy are one schema."""
    subject = f"{topic}-value"
    compact = ('{"type":"record","name":"Reading","namespace":"acme",'
               '"fields":[{"name":"v","type":"double"}]}')
    spaced = """{
        "type" : "record",  "name" : "Reading", "namespace" : "acme",
        "fields" : [ { "name" : "v", "type" : "double" } ]
    }"""
    first = client.register_schema(subject, Schema(spaced, "AVRO"))
    for normalize in (False, True):
        assert client.register_schema(subject, Schema(compact, "AVRO"),
                                      normalize_schemas=normalize) == first
        assert client.lookup_schema(subject, Schema(spaced, "AVRO"),
                                    normalize_schemas=normalize).schema_id == first
        ser = AvroSerializer(client, compact, conf={"auto.register.schemas": True,
                                                    "normalize.schemas": normalize})
        data = ser({"v": 1.5}, SerializationContext(topic, MessageField.VALUE))
        assert int.from_bytes(data[1:5], "big") == first
    assert client.get_versions(subject) == [1]

"""JSON Schema through the client and the JSON serde."""

import json

import pytest
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

V1 = json.dumps({
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order", "type": "object",
    "properties": {"id": {"type": "integer"}},
    "required": ["id"],
    "additionalProperties": False,
})


def test_register_lookup_and_serde(client, topic):
    subject = f"{topic}-value"
    sid = client.register_schema(subject, Schema(V1, "JSON"))
    got = client.get_schema(sid)
    assert got.schema_type == "JSON"
    assert client.lookup_schema(subject, Schema(V1, "JSON")).version == 1
    ctx = SerializationContext(topic, MessageField.VALUE)
    data = JSONSerializer(V1, client, conf={"auto.register.schemas": False,
                                            "use.latest.version": True})({"id": 5}, ctx)
    assert int.from_bytes(data[1:5], "big") == sid
    assert JSONDeserializer(V1, schema_registry_client=client)(data, ctx) == {"id": 5}


def test_invalid_json_schema_is_42201(client, subject):
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema(subject, Schema('{"type": 12}', "JSON"))
    assert e.value.error_code == 42201


V2 = json.dumps({
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order", "type": "object",
    "properties": {"id": {"type": "integer"}, "note": {"type": "string"}},
    "required": ["id"],
    "additionalProperties": False,
})
V2_BREAKING = json.dumps({
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order", "type": "object",
    "properties": {"id": {"type": "string"}},
    "required": ["id"],
    "additionalProperties": False,
})


def test_serialize_with_v1_and_deserialize_with_v2(client, topic):
    subject = f"{topic}-value"
    ctx = SerializationContext(topic, MessageField.VALUE)
    old = JSONSerializer(V1, client, conf={"auto.register.schemas": True})({"id": 7}, ctx)
    v1_id = int.from_bytes(old[1:5], "big")
    # Adding an optional property to a closed content model is backward compatible.
    assert client.test_compatibility(subject, Schema(V2, "JSON")) is True
    assert client.test_compatibility(subject, Schema(V2_BREAKING, "JSON")) is False
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema(subject, Schema(V2_BREAKING, "JSON"))
    assert e.value.error_code == 40901
    assert "id" in e.value.error_message
    new = JSONSerializer(V2, client, conf={"auto.register.schemas": True})(
        {"id": 8, "note": "gift"}, ctx)
    v2_id = int.from_bytes(new[1:5], "big")
    assert v2_id != v1_id
    assert client.get_versions(subject) == [1, 2]
    reader = JSONDeserializer(V2, schema_registry_client=client)
    assert reader(old, ctx) == {"id": 7}, "v2 reads data written with v1"
    assert reader(new, ctx) == {"id": 8, "note": "gift"}
    # Without a reader schema the writer's schema comes from the registry by id.
    writer_schema = JSONDeserializer(None, schema_registry_client=client)
    assert writer_schema(old, ctx) == {"id": 7}
    latest = JSONDeserializer(None, schema_registry_client=client,
                              conf={"use.latest.version": True})
    assert latest(old, ctx) == {"id": 7}

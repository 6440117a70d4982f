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

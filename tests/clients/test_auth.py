"""confluent-kafka's client with `basic.auth.user.info` against `covenant serve --auth-file`
(URL in COVENANT_AUTH_URL; scripts/client-tests.sh makes the auth file and starts it).

Users: `writer` may write `orders-*`, `reader` may read it and the global config."""

import json
import os
import uuid

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

ORDER = json.dumps({
    "type": "record", "name": "Order", "namespace": "acme.auth",
    "fields": [{"name": "id", "type": "string"}],
})


@pytest.fixture(scope="module")
def auth_url():
    value = os.environ.get("COVENANT_AUTH_URL")
    if not value:
        pytest.fail("COVENANT_AUTH_URL is not set; run scripts/client-tests.sh")
    return value


def client(url, user_info=None):
    conf = {"url": url}
    if user_info:
        conf["basic.auth.user.info"] = user_info
    return SchemaRegistryClient(conf)


def orders_subject():
    return f"orders-{uuid.uuid4().hex[:12]}-value"


def test_register_serialize_and_read_back_with_credentials(auth_url):
    writer = client(auth_url, "writer:w-pass")
    reader = client(auth_url, "reader:r-pass")
    subject = orders_subject()
    topic = subject.removesuffix("-value")
    schema_id = writer.register_schema(subject, Schema(ORDER, "AVRO"))
    assert schema_id > 0
    ser = AvroSerializer(writer, ORDER, conf={"auto.register.schemas": False, "use.latest.version": True})
    ctx = SerializationContext(topic, MessageField.VALUE)
    payload = ser({"id": "o-1"}, ctx)
    assert int.from_bytes(payload[1:5], "big") == schema_id
    de = AvroDeserializer(reader)
    assert de(payload, ctx) == {"id": "o-1"}
    assert reader.get_schema(schema_id).schema_type == "AVRO"
    assert subject in reader.get_subjects()
    assert reader.get_latest_version(subject).schema_id == schema_id


def test_missing_or_wrong_credentials_are_401(auth_url):
    for user_info in (None, "writer:wrong", "nobody:w-pass"):
        with pytest.raises(SchemaRegistryError) as e:
            client(auth_url, user_info).get_subjects()
        assert e.value.http_status_code == 401, user_info
        assert e.value.error_code == 40101, user_info


def test_operations_outside_the_grant_are_403(auth_url):
    reader = client(auth_url, "reader:r-pass")
    with pytest.raises(SchemaRegistryError) as e:
        reader.register_schema(orders_subject(), Schema(ORDER, "AVRO"))
    assert (e.value.http_status_code, e.value.error_code) == (403, 40301)
    assert "Write" in e.value.error_message
    writer = client(auth_url, "writer:w-pass")
    with pytest.raises(SchemaRegistryError) as e:
        writer.register_schema(f"payments-{uuid.uuid4().hex[:8]}", Schema(ORDER, "AVRO"))
    assert (e.value.http_status_code, e.value.error_code) == (403, 40301)
    with pytest.raises(SchemaRegistryError) as e:
        writer.set_compatibility(level="NONE")
    assert (e.value.http_status_code, e.value.error_code) == (403, 40301)

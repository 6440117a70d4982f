"""confluent-kafka's client over TLS (COVENANT_TLS_URL, CA and client certificate in
COVENANT_TLS_DIR; scripts/client-tests.sh makes them with make_pki.py and starts the server
with --tls-cert, --tls-key, --tls-client-ca and --auth-file). The client certificate's CN,
`svc-orders`, may write `orders-*`."""

import json
import os
import uuid

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

ORDER = json.dumps({
    "type": "record", "name": "Order", "namespace": "acme.tls",
    "fields": [{"name": "id", "type": "string"}],
})


@pytest.fixture(scope="module")
def tls():
    url, folder = os.environ.get("COVENANT_TLS_URL"), os.environ.get("COVENANT_TLS_DIR")
    if not url or not folder:
        pytest.fail("COVENANT_TLS_URL/COVENANT_TLS_DIR are not set; run scripts/client-tests.sh")
    return url, folder


def test_client_certificate_registers_and_serializes(tls):
    url, folder = tls
    client = SchemaRegistryClient({
        "url": url,
        "ssl.ca.location": f"{folder}/ca.pem",
        "ssl.certificate.location": f"{folder}/client.pem",
        "ssl.key.location": f"{folder}/client.key",
    })
    subject = f"orders-{uuid.uuid4().hex[:12]}-value"
    schema_id = client.register_schema(subject, Schema(ORDER, "AVRO"))
    ser = AvroSerializer(client, ORDER, conf={"auto.register.schemas": False, "use.latest.version": True})
    ctx = SerializationContext(subject.removesuffix("-value"), MessageField.VALUE)
    payload = ser({"id": "o-9"}, ctx)
    assert int.from_bytes(payload[1:5], "big") == schema_id
    assert AvroDeserializer(client)(payload, ctx) == {"id": "o-9"}
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema(f"payments-{uuid.uuid4().hex[:8]}", Schema(ORDER, "AVRO"))
    assert (e.value.http_status_code, e.value.error_code) == (403, 40301)


def test_basic_credentials_over_tls_and_anonymous_refused(tls):
    url, folder = tls
    writer = SchemaRegistryClient({"url": url, "ssl.ca.location": f"{folder}/ca.pem",
                                   "basic.auth.user.info": "writer:w-pass"})
    subject = f"orders-{uuid.uuid4().hex[:12]}-value"
    assert writer.register_schema(subject, Schema(ORDER, "AVRO")) > 0
    anonymous = SchemaRegistryClient({"url": url, "ssl.ca.location": f"{folder}/ca.pem"})
    with pytest.raises(SchemaRegistryError) as e:
        anonymous.get_subjects()
    assert e.value.http_status_code == 401


def test_an_untrusted_server_is_refused_by_the_client(tls):
    url, _ = tls
    client = SchemaRegistryClient({"url": url, "basic.auth.user.info": "writer:w-pass"})
    with pytest.raises(Exception) as e:
        client.get_subjects()
    assert "certificate" in str(e.value).lower() or "ssl" in str(e.value).lower(), e.value

"""Client-side field-level encryption through Covenant's DEK Registry, with Confluent's Python
client and its local KMS (`local-kms://`, a key derived from a secret), against
`covenant serve --auth-file` (COVENANT_AUTH_URL; scripts/client-tests.sh makes the auth file).

`writer` may write `orders-*` subjects and `Kek:orders-` KEKs; `reader` may read the subjects
but no KEK, so it reads the schema yet cannot reach the key that decrypts the field.

The producer's ENCRYPT rule on the `PII`-tagged field makes the client create the KEK and
the DEK in Covenant; the field is ciphertext in the produced bytes."""

import base64
import json
import os
import urllib.request
import uuid

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.rule_registry import RuleRegistry
from confluent_kafka.schema_registry.rules.encryption.encrypt_executor import (
    Clock,
    FieldEncryptionExecutor,
)
from confluent_kafka.schema_registry.rules.encryption.localkms.local_driver import LocalKmsDriver
from confluent_kafka.schema_registry.schema_registry_client import (
    Rule,
    RuleKind,
    RuleMode,
    RuleParams,
    RuleSet,
)
from confluent_kafka.serialization import MessageField, SerializationContext

SECRET = "covenant-test-secret"
SSN = "123-45-6789"
DAY_MS = 24 * 60 * 60 * 1000
WRITER = "writer:w-pass"
READER = "reader:r-pass"

CUSTOMER = {
    "type": "record", "name": "Customer", "namespace": "acme.pii",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "ssn", "type": "string", "confluent:tags": ["PII"]},
    ],
}

LocalKmsDriver.register()


class SteppedClock(Clock):
    """The executor's clock, moved forward by the test to make a DEK expire."""

    def __init__(self):
        self.offset = 0

    def now(self) -> int:
        return super().now() + self.offset


@pytest.fixture(scope="module")
def auth_url():
    value = os.environ.get("COVENANT_AUTH_URL")
    if not value:
        pytest.fail("COVENANT_AUTH_URL is not set; run scripts/client-tests.sh")
    return value


def client(url, user_info):
    return SchemaRegistryClient({"url": url, "basic.auth.user.info": user_info})


def rules(clock=None):
    """A rule registry of its own per client: an executor keeps the credentials it first
    saw, as Confluent's own tests keep one per client."""
    registry = RuleRegistry()
    registry.register_executor(FieldEncryptionExecutor(clock or Clock()))
    return registry


def get(url, path, user_info):
    request = urllib.request.Request(url + path)
    token = base64.b64encode(user_info.encode()).decode()
    request.add_header("Authorization", f"Basic {token}")
    with urllib.request.urlopen(request) as answer:
        return json.loads(answer.read())


CUSTOMER_JSON = {
    "type": "object", "title": "Customer",
    "properties": {
        "id": {"type": "string"},
        "ssn": {"type": "string", "confluent:tags": ["PII"]},
    },
}


def register_encrypted(url, subject, kek, schema_type="AVRO", text=None):
    rule = Rule(
        "encrypt-pii", "", RuleKind.TRANSFORM, RuleMode.WRITEREAD, "ENCRYPT", ["PII"],
        RuleParams({
            "encrypt.kek.name": kek,
            "encrypt.kms.type": "local-kms",
            "encrypt.kms.key.id": "mykey",
            "encrypt.dek.expiry.days": "1",
        }),
        None, None, "ERROR,ERROR", False,
    )
    text = text or json.dumps(CUSTOMER)
    schema = Schema(text, schema_type, [], None, RuleSet(None, [rule]))
    return client(url, WRITER).register_schema(subject, schema)


def producer(url, clock):
    return AvroSerializer(
        client(url, WRITER),
        conf={"auto.register.schemas": False, "use.latest.version": True},
        rule_conf={"secret": SECRET},
        rule_registry=rules(clock),
    )


def consumer(url, user_info):
    return AvroDeserializer(
        client(url, user_info),
        rule_conf={"secret": SECRET},
        rule_registry=rules(),
    )


def test_a_pii_field_is_encrypted_through_covenant_and_read_back_across_a_dek_rotation(auth_url):
    token = uuid.uuid4().hex[:10]
    subject, kek = f"orders-{token}-value", f"orders-kek-{token}"
    topic = f"orders-{token}"
    register_encrypted(auth_url, subject, kek)
    ctx = SerializationContext(topic, MessageField.VALUE)

    clock = SteppedClock()
    produce = producer(auth_url, clock)
    first = produce({"id": "c1", "ssn": SSN}, ctx)
    assert SSN.encode() not in first, "the PII field is ciphertext on the wire"
    assert b"c1" in first, "untagged fields stay as they are"

    # The client created the KEK and version 1 of the subject's DEK in Covenant.
    stored_kek = get(auth_url, f"/dek-registry/v1/keks/{kek}", WRITER)
    assert (stored_kek["kmsType"], stored_kek["kmsKeyId"], stored_kek["shared"]) == (
        "local-kms", "mykey", False)
    dek = get(auth_url, f"/dek-registry/v1/keks/{kek}/deks/{subject}/versions/1", WRITER)
    assert dek["algorithm"] == "AES256_GCM" and dek["encryptedKeyMaterial"]
    assert "keyMaterial" not in dek, "the registry never holds the key in the clear"

    # Two days later the DEK has expired: the producer makes version 2.
    clock.offset = 2 * DAY_MS
    second = produce({"id": "c2", "ssn": SSN}, ctx)
    assert SSN.encode() not in second
    versions = get(auth_url, f"/dek-registry/v1/keks/{kek}/deks/{subject}/versions", WRITER)
    assert versions == [1, 2]

    # A consumer with the same KMS reads both: old messages stay readable after rotation.
    read = consumer(auth_url, WRITER)
    assert read(first, ctx) == {"id": "c1", "ssn": SSN}
    assert read(second, ctx) == {"id": "c2", "ssn": SSN}

    # A consumer allowed on the subject but not on the KEK cannot get the DEK.
    with pytest.raises(Exception) as refused:
        consumer(auth_url, READER)(first, ctx)
    chain, error = [], refused.value
    while error is not None:
        chain.append(repr(error))
        error = error.__cause__ or error.__context__
    assert any("40301" in e or "403" in e for e in chain), chain


def test_a_pii_property_of_a_json_schema_is_encrypted_too(auth_url):
    token = uuid.uuid4().hex[:10]
    subject, kek = f"orders-{token}-value", f"orders-kek-{token}"
    register_encrypted(auth_url, subject, kek, "JSON", json.dumps(CUSTOMER_JSON))
    ctx = SerializationContext(f"orders-{token}", MessageField.VALUE)
    produce = JSONSerializer(
        None, client(auth_url, WRITER),
        conf={"auto.register.schemas": False, "use.latest.version": True},
        rule_conf={"secret": SECRET}, rule_registry=rules(),
    )
    data = produce({"id": "c1", "ssn": SSN}, ctx)
    assert SSN.encode() not in data, "the PII property is ciphertext on the wire"
    assert b'"id"' in data and b"c1" in data
    assert get(auth_url, f"/dek-registry/v1/keks/{kek}/deks/{subject}", WRITER)["version"] == 1
    read = JSONDeserializer(
        None, schema_registry_client=client(auth_url, WRITER),
        rule_conf={"secret": SECRET}, rule_registry=rules(),
    )
    assert read(data, ctx) == {"id": "c1", "ssn": SSN}

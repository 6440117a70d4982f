"""`covenant migrate` seen by Confluent's Python client: a message produced against one registry
decodes against the registry it was migrated into, because the id in the message is kept."""

import json
import os
import socket
import subprocess
import time
import urllib.request

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

PAYMENT = json.dumps({
    "type": "record", "name": "Payment", "namespace": "acme",
    "fields": [{"name": "id", "type": "string"}, {"name": "cents", "type": "long"}],
})


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def covenant_bin():
    path = os.environ.get("COVENANT_BIN")
    if not path:
        pytest.exit("COVENANT_BIN is not set; run scripts/client-tests.sh", returncode=2)
    return path


@pytest.fixture
def registries(covenant_bin, tmp_path):
    """Two fresh `covenant serve` processes: the source and the destination."""
    procs, urls = [], []
    for name in ("source", "destination"):
        port = free_port()
        procs.append(subprocess.Popen(
            [covenant_bin, "serve", "--listen", f"127.0.0.1:{port}",
             "--data-dir", str(tmp_path / name)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        urls.append(f"http://127.0.0.1:{port}")
    for url in urls:
        for _ in range(200):
            try:
                urllib.request.urlopen(f"{url}/health/live")
                break
            except OSError:
                time.sleep(0.05)
    yield urls
    for p in procs:
        p.kill()
        p.wait()


def test_a_message_produced_against_the_source_decodes_against_the_destination(
        covenant_bin, registries):
    source_url, destination_url = registries
    source = SchemaRegistryClient({"url": source_url})
    # An id taken and hard-deleted first: the payment schema gets an id a fresh registry
    # would not give it, so only a migration that keeps ids can decode the message.
    scratch = source.register_schema("scratch", Schema('"string"', "AVRO"))
    source.delete_subject("scratch")
    source.delete_subject("scratch", permanent=True)
    ctx = SerializationContext("payments", MessageField.VALUE)
    message = AvroSerializer(source, PAYMENT)({"id": "p-1", "cents": 1250}, ctx)
    writer_id = int.from_bytes(message[1:5], "big")
    assert writer_id != scratch

    run = subprocess.run(
        [covenant_bin, "migrate", "--from", source_url, "--to", destination_url],
        capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "verified:" in run.stdout

    destination = SchemaRegistryClient({"url": destination_url})
    decoded = AvroDeserializer(destination)(message, ctx)
    assert decoded == {"id": "p-1", "cents": 1250}
    assert destination.get_latest_version("payments-value").schema_id == writer_id

"""Fixtures for driving a running covenant server (URL in COVENANT_URL) with Confluent's
Python client. scripts/client-tests.sh starts the server and sets the variable."""

import os
import uuid

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient


@pytest.fixture(scope="session")
def url():
    value = os.environ.get("COVENANT_URL")
    if not value:
        pytest.exit("COVENANT_URL is not set; run scripts/client-tests.sh", returncode=2)
    return value


@pytest.fixture
def client(url):
    """A fresh client per test, so its caches never hide a server answer."""
    c = SchemaRegistryClient({"url": url})
    yield c
    c.close()


@pytest.fixture
def subject():
    """A subject name no other test uses."""
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def topic():
    return f"topic-{uuid.uuid4().hex[:12]}"

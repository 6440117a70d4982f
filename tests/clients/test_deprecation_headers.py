"""Deprecation signalled on reads, seen by a plain HTTP client: a deprecated subject version
answers with Deprecation (RFC 9745), Sunset (RFC 8594) and Link headers; its successor answers
with none."""

import json
import urllib.request

from confluent_kafka.schema_registry import Schema

V1 = "application/vnd.schemaregistry.v1+json"


def call(url, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"{url}{path}", data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", V1)
    with urllib.request.urlopen(req) as r:
        return r.headers, json.loads(r.read() or b"null")


def record(fields):
    return json.dumps({"type": "record", "name": "Quote", "fields": fields})


def test_a_deprecated_version_carries_deprecation_sunset_and_links(url, client, subject):
    old = record([{"name": "symbol", "type": "string"}])
    new = record(
        [
            {"name": "symbol", "type": "string"},
            {"name": "venue", "type": ["null", "string"], "default": None},
        ]
    )
    old_id = client.register_schema(subject, Schema(old, "AVRO"))
    _, created = call(
        url,
        "POST",
        "/covenant/v1/deprecations",
        {
            "target": {"kind": "version", "subject": subject, "version": 1},
            "old_promise": "quotes name no venue",
            "new_promise": "quotes name their venue",
            "window_start": "2026-01-01T00:00:00Z",
            "sunset": "2027-01-01T00:00:00Z",
            "announced_by": "quotes-team",
        },
    )
    assert created["sunset"] == 1798761600000
    new_id = client.register_schema(subject, Schema(new, "AVRO"))

    for method, path, body in [
        ("GET", f"/subjects/{subject}/versions/1", None),
        ("GET", f"/schemas/ids/{old_id}", None),
        ("POST", f"/subjects/{subject}", {"schema": old}),
    ]:
        headers, _ = call(url, method, path, body)
        assert headers["Deprecation"] == "@1767225600", path
        assert headers["Sunset"] == "Fri, 01 Jan 2027 00:00:00 GMT", path
        link = headers["Link"]
        assert f'</covenant/v1/deprecations/{created["id"]}/record>; rel="deprecation"' in link
        assert f'</subjects/{subject}/versions/2>; rel="successor-version"' in link

    for path in [f"/subjects/{subject}/versions/2", f"/schemas/ids/{new_id}"]:
        headers, _ = call(url, "GET", path)
        assert headers.get("Deprecation") is None, path
        assert headers.get("Sunset") is None, path
        assert headers.get("Link") is None, path

"""Accepted risk, on record, through a running server with an auth file (COVENANT_AUTH_URL).

The drill: a rename is refused (the subject's config raises LIKELY_RENAME to an error); a
principal holding `Approve` on the subject accepts it for that exact candidate; Confluent's
Python client, auto-registering from an AvroSerializer, then registers the same schema; the
audit trail names the approval, the approver and the reason. An approval for another
candidate, an expired one, a revoked one and one attempted without `Approve` do not count.

Users (scripts/client-tests.sh): `writer` writes `orders-*`; `approver` holds Approve on it;
`governor` holds Govern on it only (reports usage of those subjects, cannot accept risk);
`auditor` holds Admin on `Config:` (reads the audit trail)."""

import base64
import json
import os
import time
import urllib.error
import urllib.request
import uuid

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext


def instrument(fields):
    return json.dumps({
        "type": "record", "name": "BinanceInstrument", "namespace": "refdata.instruments",
        "fields": [{"name": "symbol", "type": "string"}] + fields,
    })


V1 = instrument([{"name": "tickSize", "type": ["null", "string"], "default": None}])
# The ADR's modification change: tickSize renamed to priceIncrement.
V2 = instrument([{"name": "priceIncrement", "type": ["null", "string"], "default": None}])
# Another candidate with the same kind of finding.
OTHER = instrument([{"name": "priceStep", "type": ["null", "string"], "default": None}])


@pytest.fixture(scope="module")
def auth_url():
    value = os.environ.get("COVENANT_AUTH_URL")
    if not value:
        pytest.fail("COVENANT_AUTH_URL is not set; run scripts/client-tests.sh")
    return value


def call(base, method, path, user, body=None):
    """(status, parsed JSON answer) of one REST call as `user` (name:password)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("Content-Type", "application/vnd.schemaregistry.v1+json")
    request.add_header("Authorization", "Basic " + base64.b64encode(user.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read() or b"null")


WRITER, APPROVER, GOVERNOR, AUDITOR = "writer:w-pass", "approver:a-pass", "governor:g-pass", "auditor:x-pass"


def refused_rules(message):
    """The rule ids a 409's message names (`{rule: X, path: ...}`)."""
    return sorted({part.split(",")[0].strip() for part in message.split("{rule: ")[1:]})


def approve(base, subject, schema, user, rule, **extra):
    body = {"schema": schema, "schemaType": "AVRO", "rule": rule,
            "reason": "priceIncrement replaces tickSize; every consumer reads both", **extra}
    return call(base, "POST", f"/covenant/v1/subjects/{subject}/approvals", user, body)


def produce(base, subject, schema):
    """Serializes one record as an auto-registering producer does; the schema id it wrote."""
    client = SchemaRegistryClient({"url": base, "basic.auth.user.info": WRITER})
    try:
        serializer = AvroSerializer(client, schema, conf={"auto.register.schemas": True})
        topic = subject.removesuffix("-value")
        payload = serializer({"symbol": "BTCUSDT", "priceIncrement": "0.01"},
                             SerializationContext(topic, MessageField.VALUE))
        return int.from_bytes(payload[1:5], "big")
    finally:
        client.close()


def set_up(base):
    subject = f"orders-{uuid.uuid4().hex[:12]}-value"
    status, _ = call(base, "POST", f"/subjects/{subject}/versions", WRITER, {"schema": V1})
    assert status == 200
    status, _ = call(base, "PUT", f"/config/{subject}", WRITER,
                     {"semanticRules": {"LIKELY_RENAME": "error"}})
    assert status == 200
    return subject


def test_refusal_approval_then_an_auto_registering_producer_on_record(auth_url):
    subject = set_up(auth_url)

    # 1. Refused, with both ways forward.
    status, refusal = call(auth_url, "POST", f"/subjects/{subject}/versions", WRITER, {"schema": V2})
    assert (status, refusal["error_code"]) == (409, 40901), refusal
    message = refusal["message"]
    rules = refused_rules(message)
    assert "LIKELY_RENAME" in rules, message
    assert "'/fields/priceIncrement'" in message, message
    assert "Ways forward: make the change each hint describes, which needs no approval" in message
    assert f'holding the Approve operation on subject "{subject}"' in message, message
    with pytest.raises(SchemaRegistryError) as producer_refused:
        produce(auth_url, subject, V2)
    assert producer_refused.value.http_status_code == 409

    # 2. Approvals that do not count.
    # A principal without Approve (Govern reports usage; it cannot accept risk).
    status, denied = approve(auth_url, subject, V2, GOVERNOR, "LIKELY_RENAME")
    assert (status, denied["error_code"]) == (403, 40301), denied
    # Another candidate.
    for rule in rules:
        status, other = approve(auth_url, subject, OTHER, APPROVER, rule)
        assert status == 200, other
    # An expired one.
    for rule in rules:
        status, short = approve(auth_url, subject, V2, APPROVER, rule, expires="1s")
        assert status == 200 and short["state"] == "live", short
    # A revoked one.
    revoked_ids = []
    for rule in rules:
        status, soon_revoked = approve(auth_url, subject, V2, APPROVER, rule)
        assert status == 200, soon_revoked
        status, revoked = call(
            auth_url, "POST",
            f"/covenant/v1/subjects/{subject}/approvals/{soon_revoked['id']}/revoke",
            APPROVER, {"reason": "approved too early"})
        assert (status, revoked["state"]) == (200, "revoked"), revoked
        revoked_ids.append(revoked["id"])
    time.sleep(1.5)
    with pytest.raises(SchemaRegistryError) as still_refused:
        produce(auth_url, subject, V2)
    assert still_refused.value.http_status_code == 409

    # 3. The approval that counts: by the approver, for exactly these bytes, at the path named.
    approval_ids = []
    for rule in rules:
        extra = {"path": "/fields/priceIncrement"} if rule == "LIKELY_RENAME" else {}
        status, approval = approve(auth_url, subject, V2, APPROVER, rule, **extra)
        assert status == 200, approval
        assert (approval["approver"], approval["state"]) == ("approver", "live")
        assert approval["accepts"], approval
        approval_ids.append(approval["id"])
    status, listed = call(auth_url, "GET", f"/covenant/v1/subjects/{subject}/approvals", APPROVER)
    assert status == 200
    states = {a["id"]: a["state"] for a in listed}
    assert [states[i] for i in approval_ids] == ["live"] * len(rules)
    assert [states[i] for i in revoked_ids] == ["revoked"] * len(rules)
    assert sorted(states.values()).count("expired") == len(rules), listed

    # 4. The same bytes from Confluent's client, auto-registering.
    schema_id = produce(auth_url, subject, V2)
    status, latest = call(auth_url, "GET", f"/subjects/{subject}/versions/latest", WRITER)
    assert (status, latest["version"], latest["id"]) == (200, 2, schema_id), latest

    # 5. On record: the approvals (created, revoked), the refused attempt and the registration
    # naming approval, approver and reason.
    status, trail = call(auth_url, "GET", f"/covenant/v1/audit?subject={subject}&limit=1000", AUDITOR)
    assert status == 200, trail
    entries = trail["entries"]
    created = [e for e in entries if e["operation"] == "approval.create"]
    assert len(created) == 4 * len(rules), entries
    assert all(e["principal"] == "approver" and e["outcome"] == "ok" for e in created)
    assert any("LIKELY_RENAME at '/fields/priceIncrement'" in e.get("detail", "") for e in created)
    assert len([e for e in entries if e["operation"] == "approval.revoke"]) == len(rules)
    denied = [e for e in entries if e["outcome"] == "denied" and e["principal"] == "governor"]
    assert denied, entries
    registered = [e for e in entries if e["operation"] == "register" and e.get("version") == 2]
    assert len(registered) == 1, entries
    detail = registered[0]["detail"]
    assert registered[0]["principal"] == "writer"
    for approval_id in approval_ids:
        assert f"approval #{approval_id}" in detail, detail
    assert "by approver: priceIncrement replaces tickSize" in detail, detail


def test_the_registration_answer_names_its_approval(auth_url):
    subject = set_up(auth_url)
    status, refusal = call(auth_url, "POST", f"/subjects/{subject}/versions", WRITER, {"schema": V2})
    assert status == 409
    ids = []
    for rule in refused_rules(refusal["message"]):
        status, approval = approve(auth_url, subject, V2, APPROVER, rule, expires="7d")
        assert status == 200, approval
        assert approval["expires_at"] > approval["created_at"] + 6 * 86_400_000
        ids.append(approval["id"])
    status, answer = call(auth_url, "POST", f"/subjects/{subject}/versions", WRITER, {"schema": V2})
    assert (status, answer["version"]) == (200, 2), answer
    assert sorted(a["id"] for a in answer["approvals"]) == sorted(ids), answer
    assert {a["approver"] for a in answer["approvals"]} == {"approver"}


def test_nothing_to_approve_is_refused(auth_url):
    subject = set_up(auth_url)
    # V1 itself has no finding against the subject: an approval is not a blank cheque.
    status, answer = approve(auth_url, subject, V1, APPROVER, "LIKELY_RENAME")
    assert (status, answer["error_code"]) == (422, 42240), answer
    assert "nothing to approve" in answer["message"]
    status, answer = approve(auth_url, subject, V2, APPROVER, "NOT_A_RULE")
    assert status == 422, answer


def test_reporting_usage_needs_only_a_grant_on_the_subject(auth_url):
    subject = set_up(auth_url)
    report = {"subject": subject, "client_id": "governor", "fields_read": ["symbol"]}
    status, receipt = call(auth_url, "POST", "/covenant/v1/usage", GOVERNOR, report)
    assert status == 200, receipt
    # Another team's subject: refused, and on record as refused.
    elsewhere = {"subject": "payments-value", "client_id": "governor", "fields_read": ["id"]}
    status, refused = call(auth_url, "POST", "/covenant/v1/usage", GOVERNOR, elsewhere)
    assert (status, refused["error_code"]) == (403, 40301), refused
    assert "Subject:payments-value" in refused["message"], refused
    # The approver (Approve only) may not report usage at all.
    status, refused = call(auth_url, "POST", "/covenant/v1/usage", APPROVER, report)
    assert status == 403, refused

"""Schema contexts through Confluent's Python client: a client whose URL carries a context
(`.../contexts/.ctx`) registers, serializes and reads in that context's own id space, beside
a client of the default context, and qualified subjects work on a plain client."""

import json
import uuid

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

ORDER = json.dumps({"type": "record", "name": "Order", "namespace": "ctx",
                    "fields": [{"name": "id", "type": "long"}]})
PAYMENT = json.dumps({"type": "record", "name": "Payment", "namespace": "ctx",
                      "fields": [{"name": "amount", "type": "double"}]})


def test_a_client_in_a_context_has_its_own_ids(url, topic):
    context = f".team-{uuid.uuid4().hex[:8]}"
    scoped = SchemaRegistryClient({"url": f"{url}/contexts/{context}"})
    plain = SchemaRegistryClient({"url": url})
    ctx = SerializationContext(topic, MessageField.VALUE)

    # The context starts its ids at 1, whatever the default context holds.
    first = scoped.register_schema(f"{topic}-payments", Schema(PAYMENT, "AVRO"))
    assert first == 1
    data = AvroSerializer(scoped, ORDER, conf={"auto.register.schemas": True})({"id": 42}, ctx)
    order_id = int.from_bytes(data[1:5], "big")
    assert order_id == 2

    # The qualified subject is what a plain client sees.
    qualified = f":{context}:{topic}-value"
    assert qualified in plain.get_subjects()
    assert plain.get_latest_version(qualified).schema_id == order_id
    assert context in plain.get_contexts()

    # Reading the message through the context's URL finds the context's schema, not the
    # default context's schema that may carry the same id.
    assert AvroDeserializer(scoped)(data, ctx) == {"id": 42}
    in_context = plain.get_schema(order_id, subject_name=f":{context}:")
    assert json.loads(in_context.schema_str)["name"] == "Order"

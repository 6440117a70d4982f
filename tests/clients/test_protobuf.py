"""Protobuf through the client and the Protobuf serde, with an import the serializer
registers as its own subject (base64 FileDescriptorProto bodies, format=serialized reads)."""

import base64
import json
import urllib.request

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

ORDER_PROTO = """syntax = "proto3";
package acme;

message Order {
  string id = 1;
  int64 amount = 2;
}
"""


def build_classes(suffix):
    """Two dynamic files: money.proto and order.proto importing it."""
    pool = descriptor_pool.DescriptorPool()
    money = descriptor_pb2.FileDescriptorProto(
        name=f"acme{suffix}/money.proto", package=f"acme{suffix}", syntax="proto3")
    m = money.message_type.add(name="Money")
    m.field.add(name="units", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    order = descriptor_pb2.FileDescriptorProto(
        name=f"acme{suffix}/order.proto", package=f"acme{suffix}", syntax="proto3",
        dependency=[money.name])
    o = order.message_type.add(name="Order")
    o.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    o.field.add(name="total", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                type_name=f".acme{suffix}.Money",
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool.Add(money)
    pool.Add(order)
    desc = pool.FindMessageTypeByName(f"acme{suffix}.Order")
    return message_factory.GetMessageClass(desc)


def test_register_text_and_read_back(client, subject, url):
    sid = client.register_schema(subject, Schema(ORDER_PROTO, "PROTOBUF"))
    got = client.get_schema(sid)
    assert got.schema_type == "PROTOBUF"
    assert "message Order" in got.schema_str
    assert client.lookup_schema(subject, Schema(ORDER_PROTO, "PROTOBUF")).schema_id == sid
    # The client caches by id regardless of format, so ask the server directly.
    with urllib.request.urlopen(f"{url}/schemas/ids/{sid}?format=serialized") as r:
        serialized = json.loads(r.read())["schema"]
    fdp = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(serialized))
    assert [m.name for m in fdp.message_type] == ["Order"]


def test_serializer_registers_imports_and_roundtrips(client, topic):
    suffix = topic.replace("-", "_")
    Order = build_classes(suffix)
    ctx = SerializationContext(topic, MessageField.VALUE)
    ser = ProtobufSerializer(Order, client, conf={"auto.register.schemas": True,
                                                  "use.deprecated.format": False})
    msg = Order(id="o-1")
    msg.total.units = 42
    data = ser(msg, ctx)
    assert data[0] == 0
    assert f"acme{suffix}/money.proto" in client.get_subjects()
    registered = client.get_latest_version(f"{topic}-value")
    assert [r.subject for r in registered.schema.references] == [f"acme{suffix}/money.proto"]
    de = ProtobufDeserializer(Order, conf={"use.deprecated.format": False},
                              schema_registry_client=client)
    back = de(data, ctx)
    assert back.id == "o-1" and back.total.units == 42

"""Protobuf through the client and the Protobuf serde, with an import the serializer
registers as its own subject (base64 FileDescriptorProto bodies, format=serialized reads)."""

import base64
import json
import urllib.request

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
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


def build_nested(suffix):
    """One file: Shipment with a nested Parcel, and a second top-level Receipt."""
    pool = descriptor_pool.DescriptorPool()
    fdp = descriptor_pb2.FileDescriptorProto(
        name=f"ship{suffix}/shipment.proto", package=f"ship{suffix}", syntax="proto3")
    shipment = fdp.message_type.add(name="Shipment")
    parcel = shipment.nested_type.add(name="Parcel")
    parcel.field.add(name="weight", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
                     label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    shipment.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                       label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    shipment.field.add(name="parcels", number=2,
                       type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                       type_name=f".ship{suffix}.Shipment.Parcel",
                       label=descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED)
    receipt = fdp.message_type.add(name="Receipt")
    receipt.field.add(name="number", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
                      label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool.Add(fdp)
    get = lambda name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"ship{suffix}.{name}"))
    return get("Shipment"), get("Shipment.Parcel"), get("Receipt")


def test_nested_messages_and_message_indexes(client, topic, url):
    suffix = topic.replace("-", "_")
    Shipment, Parcel, Receipt = build_nested(suffix)
    ctx = SerializationContext(topic, MessageField.VALUE)
    conf = {"auto.register.schemas": True, "use.deprecated.format": False}

    shipment = Shipment(id="s-1")
    shipment.parcels.add(weight=3)
    first = ProtobufSerializer(Shipment, client, conf=conf)(shipment, ctx)
    sid = int.from_bytes(first[1:5], "big")
    assert first[5] == 0, "the first top-level message is the single index byte 0"

    # Nested Parcel: indexes [0, 0] -> zig-zag count 2, then 0, 0.
    nested = ProtobufSerializer(Parcel, client, conf=conf)(Parcel(weight=9), ctx)
    assert int.from_bytes(nested[1:5], "big") == sid, "same file, same schema id"
    assert nested[5:8] == bytes([0x04, 0x00, 0x00])
    # Second top-level Receipt: indexes [1] -> zig-zag count 1, then 1.
    second = ProtobufSerializer(Receipt, client, conf=conf)(Receipt(number=12), ctx)
    assert second[5:7] == bytes([0x02, 0x02])
    assert client.get_versions(f"{topic}-value") == [1]

    dconf = {"use.deprecated.format": False}
    back = ProtobufDeserializer(Shipment, conf=dconf, schema_registry_client=client)(first, ctx)
    assert back.id == "s-1" and [p.weight for p in back.parcels] == [3]
    assert ProtobufDeserializer(Parcel, conf=dconf, schema_registry_client=client)(nested, ctx).weight == 9
    assert ProtobufDeserializer(Receipt, conf=dconf, schema_registry_client=client)(second, ctx).number == 12

    # The registered text names both messages and the nested one; serialized form round-trips.
    text = client.get_schema(sid).schema_str
    assert "message Shipment" in text and "message Parcel" in text and "message Receipt" in text
    with urllib.request.urlopen(f"{url}/schemas/ids/{sid}?format=serialized") as r:
        fdp = descriptor_pb2.FileDescriptorProto.FromString(
            base64.b64decode(json.loads(r.read())["schema"]))
    assert [m.name for m in fdp.message_type] == ["Shipment", "Receipt"]
    assert [n.name for n in fdp.message_type[0].nested_type] == ["Parcel"]


def test_protobuf_evolution_and_fmt(client, subject, url):
    sid = client.register_schema(subject, Schema(ORDER_PROTO, "PROTOBUF"))
    added = ORDER_PROTO.replace("int64 amount = 2;", "int64 amount = 2;\n  string note = 3;")
    assert client.test_compatibility(subject, Schema(added, "PROTOBUF")) is True
    retyped = ORDER_PROTO.replace("int64 amount = 2;", "string amount = 2;")
    assert client.test_compatibility(subject, Schema(retyped, "PROTOBUF")) is False
    v2 = client.register_schema(subject, Schema(added, "PROTOBUF"))
    assert v2 != sid
    # fmt=serialized through the client's own calls (fresh clients: the cache ignores fmt).
    with SchemaRegistryClient({"url": url}) as fresh:
        serialized = fresh.get_schema(v2, fmt="serialized").schema_str
        fdp = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(serialized))
        assert [f.name for f in fdp.message_type[0].field] == ["id", "amount", "note"]
    with SchemaRegistryClient({"url": url}) as fresh:
        by_version = fresh.get_version(subject, 1, fmt="serialized")
        fdp = descriptor_pb2.FileDescriptorProto.FromString(
            base64.b64decode(by_version.schema.schema_str))
        assert [f.name for f in fdp.message_type[0].field] == ["id", "amount"]


# Whitespace, comments and the order of options differ; the schema is the same. Confluent
# keys a Protobuf schema by its canonical text (ProtobufSchema.canonicalString(), the
# printer in io.confluent.kafka.schemaregistry.protobuf.ProtobufSchema), so every form
# below must get the id the first one got.
SPACED_PROTO = """// an order, as a person wrote it
syntax   =   "proto3" ;
package acme ;


message   Order {
    string id  =  1 ;   // the key
    int64  amount = 2;
}
"""

STAMPED_PROTO = """syntax = "proto3";
package stamped;

import "google/protobuf/timestamp.proto";

message Event {
  string id = 1;
  google.protobuf.Timestamp at = 2;
}
"""


def order_class():
    """acme.Order of ORDER_PROTO, built from a descriptor as generated code would be."""
    pool = descriptor_pool.DescriptorPool()
    fdp = descriptor_pb2.FileDescriptorProto(name="acme/order.proto", package="acme",
                                             syntax="proto3")
    o = fdp.message_type.add(name="Order")
    o.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    o.field.add(name="amount", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool.Add(fdp)
    return fdp, message_factory.GetMessageClass(pool.FindMessageTypeByName("acme.Order"))


def event_class():
    """stamped.Event of STAMPED_PROTO, importing the well-known Timestamp."""
    from google.protobuf import timestamp_pb2
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    fdp = descriptor_pb2.FileDescriptorProto(name="stamped/event.proto", package="stamped",
                                             syntax="proto3",
                                             dependency=["google/protobuf/timestamp.proto"])
    e = fdp.message_type.add(name="Event")
    e.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    e.field.add(name="at", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                type_name=".google.protobuf.Timestamp",
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("stamped.Event"))


def framed_id(data):
    """The schema id of a Confluent-framed payload (magic byte, then 4 bytes big-endian)."""
    assert data[0] == 0
    return int.from_bytes(data[1:5], "big")


def test_every_form_of_one_protobuf_schema_gets_one_id(client, topic):
    subject = f"{topic}-value"
    first = client.register_schema(subject, Schema(ORDER_PROTO, "PROTOBUF"))
    fdp, Order = order_class()
    descriptor = base64.b64encode(fdp.SerializeToString()).decode()
    for form in (SPACED_PROTO, descriptor):
        for normalize in (False, True):
            schema = Schema(form, "PROTOBUF")
            assert client.register_schema(subject, schema, normalize_schemas=normalize) == first
            assert client.lookup_schema(subject, schema,
                                        normalize_schemas=normalize).schema_id == first
    assert client.get_versions(subject) == [1]
    ctx = SerializationContext(topic, MessageField.VALUE)
    for normalize in (False, True):
        for auto in (True, False):
            conf = {"auto.register.schemas": auto, "use.deprecated.format": False,
                    "normalize.schemas": normalize}
            if not auto:
                conf["use.latest.version"] = False
            ser = ProtobufSerializer(Order, client, conf=conf)
            assert framed_id(ser(Order(id="o-1", amount=5), ctx)) == first, conf
    assert client.get_versions(subject) == [1]


def test_a_bundled_import_gets_one_id_from_text_and_from_the_serializer(client, topic):
    subject = f"{topic}-value"
    first = client.register_schema(subject, Schema(STAMPED_PROTO, "PROTOBUF"))
    Event = event_class()
    ctx = SerializationContext(topic, MessageField.VALUE)
    for normalize in (False, True):
        ser = ProtobufSerializer(Event, client, conf={"auto.register.schemas": True,
                                                      "use.deprecated.format": False,
                                                      "normalize.schemas": normalize})
        event = Event(id="e-1")
        event.at.seconds = 1_700_000_000
        assert framed_id(ser(event, ctx)) == first
    # The well-known import is the server's own: no subject was registered for it.
    assert not [s for s in client.get_subjects() if s.startswith("google/")]
    assert client.get_versions(subject) == [1]

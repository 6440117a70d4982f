// Drives a running covenant server (URL in COVENANT_URL) with @kafkajs/confluent-schema-registry:
// every request the client library makes, for Avro, JSON Schema and Protobuf.
// scripts/client-tests.sh starts the server and runs this file with `node --test`.
'use strict'

const { test, before } = require('node:test')
const assert = require('node:assert/strict')
const crypto = require('node:crypto')
const {
  SchemaRegistry,
  SchemaType,
  COMPATIBILITY,
} = require('@kafkajs/confluent-schema-registry')
const {
  ConfluentSchemaRegistryError,
  ConfluentSchemaRegistryCompatibilityError,
  ConfluentSchemaRegistryValidationError,
} = require('@kafkajs/confluent-schema-registry/dist/errors')

const host = process.env.COVENANT_URL
// Fail fast on server errors: the library retries 3 times by default, which only hides them.
const retry = { retries: 0 }

before(() => {
  if (!host) throw new Error('COVENANT_URL is not set; run scripts/client-tests.sh')
})

/** A subject name no other test (or earlier run against the same server) uses. */
function fresh(prefix) {
  return `${prefix}-${crypto.randomBytes(6).toString('hex')}`
}

function registry() {
  return new SchemaRegistry({ host, retry })
}

/** Raw JSON GET against the server, to check what the client cannot show. */
async function getJson(path) {
  const r = await fetch(`${host}${path}`)
  return { status: r.status, body: await r.json() }
}

const userV1 = {
  type: 'record',
  name: 'User',
  namespace: 'acme.node',
  fields: [{ name: 'name', type: 'string' }],
}
const userV2 = {
  ...userV1,
  fields: [...userV1.fields, { name: 'age', type: 'int', default: 7 }],
}
const userV2NoDefault = {
  ...userV1,
  fields: [...userV1.fields, { name: 'age', type: 'int' }],
}

test('avro: register, encode, decode, ids by subject and version', async () => {
  const sr = registry()
  const subject = fresh('node-avro')
  const v1 = await sr.register(
    { type: SchemaType.AVRO, schema: JSON.stringify(userV1) },
    { subject },
  )
  assert.ok(Number.isInteger(v1.id) && v1.id > 0)
  // First registration stored the client's level as the subject's own config.
  const config = await getJson(`/config/${encodeURIComponent(subject)}`)
  assert.equal(config.status, 200)
  assert.equal(config.body.compatibilityLevel, 'BACKWARD')

  const bytes = await sr.encode(v1.id, { name: 'ann' })
  assert.equal(bytes[0], 0)
  assert.equal(bytes.readInt32BE(1), v1.id)
  // A second client has no cache: decode goes to GET /schemas/ids/{id}.
  assert.deepEqual({ ...(await registry().decode(bytes)) }, { name: 'ann' })

  // Registering again reads the subject's config (now 200 with BACKWARD) and dedupes.
  const again = await sr.register(
    { type: SchemaType.AVRO, schema: JSON.stringify(userV1) },
    { subject },
  )
  assert.equal(again.id, v1.id)

  const v2 = await sr.register(
    { type: SchemaType.AVRO, schema: JSON.stringify(userV2) },
    { subject },
  )
  assert.notEqual(v2.id, v1.id)
  assert.equal(await sr.getLatestSchemaId(subject), v2.id)
  assert.equal(await sr.getRegistryId(subject, 1), v1.id)
  assert.equal(await sr.getRegistryId(subject, 'latest'), v2.id)
  assert.equal(
    await sr.getRegistryIdBySchema(subject, {
      type: SchemaType.AVRO,
      schema: JSON.stringify(userV1),
    }),
    v1.id,
  )

  // Old bytes read with the new schema as reader: the default fills the added field.
  const decoded = await registry().decode(bytes, {
    [SchemaType.AVRO]: { readerSchema: userV2 },
  })
  assert.deepEqual({ ...decoded }, { name: 'ann', age: 7 })
  assert.deepEqual(
    JSON.parse(JSON.stringify(await registry().getSchema(v2.id))).fields.map(f => f.name),
    ['name', 'age'],
  )
})

test('avro: subject derived from namespace.name (the legacy raw-schema call)', async () => {
  const sr = registry()
  const name = fresh('Derived').replace('-', '_')
  const schema = { type: 'record', name, namespace: 'acme.node', fields: [{ name: 'x', type: 'long' }] }
  const { id } = await sr.register(schema)
  assert.equal(await sr.getLatestSchemaId(`acme.node.${name}`), id)
})

test('avro: an incompatible change is refused with the rule and field named', async () => {
  const sr = registry()
  const subject = fresh('node-avro-incompat')
  await sr.register({ type: SchemaType.AVRO, schema: JSON.stringify(userV1) }, { subject })
  await assert.rejects(
    sr.register({ type: SchemaType.AVRO, schema: JSON.stringify(userV2NoDefault) }, { subject }),
    err => {
      assert.equal(err.name, 'ResponseError')
      assert.equal(err.status, 409)
      assert.match(err.message, /incompatible/)
      assert.match(err.message, /age/)
      return true
    },
  )
  // The declared compatibility route answers for the latest version.
  const verdict = await sr.api.Subject.compatible({
    subject,
    body: { schema: JSON.stringify(userV2NoDefault) },
  })
  assert.equal(verdict.data().is_compatible, false)
  const ok = await sr.api.Subject.compatible({
    subject,
    body: { schema: JSON.stringify(userV2) },
  })
  assert.equal(ok.data().is_compatible, true)
})

test('a subject level other than the client level surfaces as its compatibility error', async () => {
  const sr = registry()
  const subject = fresh('node-level')
  await sr.register({ type: SchemaType.AVRO, schema: JSON.stringify(userV1) }, { subject })
  await sr.api.Subject.updateConfig({ subject, body: { compatibility: 'FULL' } })
  await assert.rejects(
    sr.register({ type: SchemaType.AVRO, schema: JSON.stringify(userV2) }, { subject }),
    err => {
      assert.ok(err instanceof ConfluentSchemaRegistryCompatibilityError, String(err))
      assert.match(err.message, /BACKWARD != FULL/)
      return true
    },
  )
  // With the matching level the same registration goes through (FULL allows a defaulted field).
  const v2 = await sr.register(
    { type: SchemaType.AVRO, schema: JSON.stringify(userV2) },
    { subject, compatibility: COMPATIBILITY.FULL },
  )
  assert.equal(await sr.getLatestSchemaId(subject), v2.id)
})

test('lookup of an unknown schema surfaces as its registry error', async () => {
  const sr = registry()
  const subject = fresh('node-lookup')
  await sr.register({ type: SchemaType.AVRO, schema: JSON.stringify(userV1) }, { subject })
  await assert.rejects(
    sr.getRegistryIdBySchema(subject, { type: SchemaType.AVRO, schema: '"string"' }),
    err => err instanceof ConfluentSchemaRegistryError && /Schema not found/.test(err.message),
  )
  await assert.rejects(
    sr.getRegistryIdBySchema(fresh('node-nowhere'), { type: SchemaType.AVRO, schema: '"string"' }),
    err => err instanceof ConfluentSchemaRegistryError && /not found/.test(err.message),
  )
  await assert.rejects(sr.getLatestSchemaId(fresh('node-nowhere')), err => err.status === 404)
})

test('avro: named-type references resolve through GET /subjects/{s}/versions/{v}', async () => {
  const sr = registry()
  const addressSubject = fresh('node-address')
  const personSubject = fresh('node-person')
  const address = {
    type: 'record',
    name: 'Address',
    namespace: 'acme.node',
    fields: [{ name: 'street', type: 'string' }],
  }
  const person = {
    type: 'record',
    name: 'Person',
    namespace: 'acme.node',
    fields: [{ name: 'home', type: 'acme.node.Address' }],
  }
  await sr.register({ type: SchemaType.AVRO, schema: JSON.stringify(address) }, { subject: addressSubject })
  const references = [{ name: 'acme.node.Address', subject: addressSubject, version: 1 }]
  const { id } = await sr.register(
    { type: SchemaType.AVRO, schema: JSON.stringify(person), references },
    { subject: personSubject },
  )
  const stored = await getJson(`/schemas/ids/${id}`)
  assert.deepEqual(stored.body.references, references)
  const bytes = await sr.encode(id, { home: { street: 'Main' } })
  assert.deepEqual(JSON.parse(JSON.stringify(await registry().decode(bytes))), {
    home: { street: 'Main' },
  })
})

const orderJsonV1 = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'Order',
  type: 'object',
  properties: { id: { type: 'integer' } },
  required: ['id'],
  additionalProperties: false,
}

test('json schema: register, encode, decode, validation, evolution', async () => {
  const sr = registry()
  const subject = fresh('node-json')
  const { id } = await sr.register(
    { type: SchemaType.JSON, schema: JSON.stringify(orderJsonV1) },
    { subject },
  )
  const stored = await getJson(`/schemas/ids/${id}`)
  assert.equal(stored.body.schemaType, 'JSON')
  const bytes = await sr.encode(id, { id: 5 })
  assert.equal(bytes.readInt32BE(1), id)
  assert.deepEqual(await registry().decode(bytes), { id: 5 })
  await assert.rejects(sr.encode(id, { id: 'five' }), ConfluentSchemaRegistryValidationError)

  // An optional property is a backward-compatible addition to a closed content model.
  const v2 = {
    ...orderJsonV1,
    properties: { ...orderJsonV1.properties, note: { type: 'string' } },
  }
  const second = await sr.register({ type: SchemaType.JSON, schema: JSON.stringify(v2) }, { subject })
  assert.equal(await sr.getLatestSchemaId(subject), second.id)
  assert.equal(
    await sr.getRegistryIdBySchema(subject, { type: SchemaType.JSON, schema: JSON.stringify(orderJsonV1) }),
    id,
  )
  // Turning the id into a string breaks readers of old data.
  const broken = { ...orderJsonV1, properties: { id: { type: 'string' } } }
  await assert.rejects(
    sr.register({ type: SchemaType.JSON, schema: JSON.stringify(broken) }, { subject }),
    err => err.status === 409,
  )
})

const orderProto = `syntax = "proto3";
package acme.node;

message Order {
  string id = 1;
  int64 amount = 2;
  Line line = 3;

  message Line {
    string sku = 1;
    int32 quantity = 2;
  }
}
`

test('protobuf: register, encode, decode, nested message, lookup', async () => {
  const sr = registry()
  const subject = fresh('node-proto')
  const { id } = await sr.register({ type: SchemaType.PROTOBUF, schema: orderProto }, { subject })
  const stored = await getJson(`/schemas/ids/${id}`)
  assert.equal(stored.body.schemaType, 'PROTOBUF')
  const payload = { id: 'o-1', amount: 42, line: { sku: 'A-7', quantity: 3 } }
  const bytes = await sr.encode(id, payload)
  assert.equal(bytes.readInt32BE(1), id)
  const back = await registry().decode(bytes)
  assert.equal(back.id, 'o-1')
  assert.equal(Number(back.amount), 42)
  assert.deepEqual({ ...back.line }, { sku: 'A-7', quantity: 3 })
  assert.equal(
    await sr.getRegistryIdBySchema(subject, { type: SchemaType.PROTOBUF, schema: orderProto }),
    id,
  )
  // Changing a field's type in place is refused.
  const broken = orderProto.replace('int64 amount = 2;', 'string amount = 2;')
  await assert.rejects(
    sr.register({ type: SchemaType.PROTOBUF, schema: broken }, { subject }),
    err => err.status === 409 && /amount/.test(err.message),
  )
})

test('protobuf: an imported file referenced by subject', async () => {
  const sr = registry()
  const moneySubject = fresh('node-money')
  const orderSubject = fresh('node-order')
  const money = `syntax = "proto3";
package acme.money;

message Money {
  int64 units = 1;
}
`
  const order = `syntax = "proto3";
package acme.shop;

import "acme/money.proto";

message Order {
  string id = 1;
  acme.money.Money total = 2;
}
`
  await sr.register({ type: SchemaType.PROTOBUF, schema: money }, { subject: moneySubject })
  const references = [{ name: 'acme/money.proto', subject: moneySubject, version: 1 }]
  const { id } = await sr.register(
    { type: SchemaType.PROTOBUF, schema: order, references },
    { subject: orderSubject },
  )
  const bytes = await sr.encode(id, { id: 'o-2', total: { units: 9 } })
  const back = await registry().decode(bytes)
  assert.equal(back.id, 'o-2')
  assert.equal(Number(back.total.units), 9)
})

test('the declared subject listing route answers', async () => {
  const sr = registry()
  const subject = fresh('node-list')
  await sr.register({ type: SchemaType.AVRO, schema: JSON.stringify(userV1) }, { subject })
  const all = await sr.api.Subject.all()
  assert.ok(all.data().includes(subject))
})

test('contexts: a client whose host names a context has its own ids', async () => {
  const context = `.${fresh('node-ctx')}`
  const scoped = new SchemaRegistry({ host: `${host}/contexts/${context}`, retry })
  const subject = fresh('node-ctx-orders')
  const first = await scoped.register(
    { type: SchemaType.AVRO, schema: JSON.stringify(userV1) },
    { subject },
  )
  assert.equal(first.id, 1, 'a new context numbers its schemas from 1')
  const bytes = await scoped.encode(first.id, { name: 'ctx' })
  // A fresh client of the same context decodes through /contexts/{ctx}/schemas/ids/1.
  const reader = new SchemaRegistry({ host: `${host}/contexts/${context}`, retry })
  assert.deepEqual({ ...(await reader.decode(bytes)) }, { name: 'ctx' })
  // A plain client sees the qualified subject and the context.
  const qualified = `:${context}:${subject}`
  assert.ok((await registry().api.Subject.all()).data().includes(qualified))
  assert.equal(await registry().getRegistryId(qualified, 1), 1)
  const contexts = await getJson('/contexts')
  assert.ok(contexts.body.includes(context))
})

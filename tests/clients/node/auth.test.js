// @kafkajs/confluent-schema-registry with `auth` against `covenant serve --auth-file`
// (URL in COVENANT_AUTH_URL; scripts/client-tests.sh makes the auth file and starts it).
// Users: `writer` may write `orders-*`, `reader` may read it.
'use strict'

const { test, before } = require('node:test')
const assert = require('node:assert/strict')
const crypto = require('node:crypto')
const { SchemaRegistry, SchemaType } = require('@kafkajs/confluent-schema-registry')

const host = process.env.COVENANT_AUTH_URL
const retry = { retries: 0 }

before(() => {
  if (!host) throw new Error('COVENANT_AUTH_URL is not set; run scripts/client-tests.sh')
})

function registry(username, password) {
  return new SchemaRegistry({ host, retry, auth: username ? { username, password } : undefined })
}

const order = {
  type: 'record',
  name: 'Order',
  namespace: 'acme.node.auth',
  fields: [{ name: 'id', type: 'string' }],
}

function subject() {
  return `orders-${crypto.randomBytes(6).toString('hex')}-value`
}

test('register, encode and decode with credentials', async () => {
  const writer = registry('writer', 'w-pass')
  const reader = registry('reader', 'r-pass')
  const { id } = await writer.register(
    { type: SchemaType.AVRO, schema: JSON.stringify(order) },
    { subject: subject() },
  )
  const bytes = await writer.encode(id, { id: 'o-1' })
  assert.equal(bytes.readInt32BE(1), id)
  assert.deepEqual({ ...(await reader.decode(bytes)) }, { id: 'o-1' })
})

test('missing or wrong credentials are refused with 401', async () => {
  for (const sr of [registry(), registry('writer', 'wrong')]) {
    await assert.rejects(sr.getSchema(1), (e) => {
      assert.equal(e.status, 401)
      return true
    })
  }
  const r = await fetch(`${host}/subjects`)
  assert.equal(r.status, 401)
  assert.equal((await r.json()).error_code, 40101)
  assert.ok(r.headers.get('www-authenticate'))
})

test('a reader cannot register', async () => {
  const reader = registry('reader', 'r-pass')
  await assert.rejects(
    reader.register({ type: SchemaType.AVRO, schema: JSON.stringify(order) }, { subject: subject() }),
    (e) => {
      assert.equal(e.status, 403)
      return true
    },
  )
})

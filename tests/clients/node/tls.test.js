// @kafkajs/confluent-schema-registry over TLS with a client certificate (URL in
// COVENANT_TLS_URL, CA and certificates in COVENANT_TLS_DIR; scripts/client-tests.sh makes
// them with make_pki.py). The certificate's CN, `svc-orders`, may write `orders-*`.
'use strict'

const { test, before } = require('node:test')
const assert = require('node:assert/strict')
const crypto = require('node:crypto')
const fs = require('node:fs')
const https = require('node:https')
const path = require('node:path')
const { SchemaRegistry, SchemaType } = require('@kafkajs/confluent-schema-registry')

const host = process.env.COVENANT_TLS_URL
const dir = process.env.COVENANT_TLS_DIR
const retry = { retries: 0 }

before(() => {
  if (!host || !dir) throw new Error('COVENANT_TLS_URL/COVENANT_TLS_DIR are not set; run scripts/client-tests.sh')
})

function agent(withCertificate) {
  const read = (name) => fs.readFileSync(path.join(dir, name))
  return new https.Agent({
    ca: read('ca.pem'),
    ...(withCertificate ? { cert: read('client.pem'), key: read('client.key') } : {}),
  })
}

const order = {
  type: 'record',
  name: 'Order',
  namespace: 'acme.node.tls',
  fields: [{ name: 'id', type: 'string' }],
}

test('register, encode and decode with a client certificate', async () => {
  const sr = new SchemaRegistry({ host, retry, agent: agent(true) })
  const subject = `orders-${crypto.randomBytes(6).toString('hex')}-value`
  const { id } = await sr.register({ type: SchemaType.AVRO, schema: JSON.stringify(order) }, { subject })
  const bytes = await sr.encode(id, { id: 'o-2' })
  assert.deepEqual({ ...(await sr.decode(bytes)) }, { id: 'o-2' })
})

test('without a certificate or credentials the registry answers 401', async () => {
  const sr = new SchemaRegistry({ host, retry, agent: agent(false) })
  await assert.rejects(sr.getSchema(1), (e) => {
    assert.equal(e.status, 401)
    return true
  })
})

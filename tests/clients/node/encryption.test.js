// Client-side field-level encryption through Covenant's DEK Registry with Confluent's Node
// client, @confluentinc/schemaregistry, and its local KMS (`local-kms://`, a key derived from
// a secret), against `covenant serve --auth-file` (URL in COVENANT_AUTH_URL;
// scripts/client-tests.sh makes the auth file and starts it).
//
// `writer` may write `orders-*` subjects and `Kek:orders-` KEKs; `reader` may read the
// subjects but no KEK, so it reads the schema yet cannot reach the key that decrypts the field.
//
// The producer's ENCRYPT rule on the `PII`-tagged field makes the client create the KEK and
// the DEK in Covenant; the field is ciphertext in the produced bytes. Every case runs for
// Avro and for JSON Schema.
'use strict'

const { test, before } = require('node:test')
const assert = require('node:assert/strict')
const crypto = require('node:crypto')
const {
  AvroDeserializer,
  AvroSerializer,
  Clock,
  FieldEncryptionExecutor,
  JsonDeserializer,
  JsonSerializer,
  LocalKmsDriver,
  RuleMode,
  RuleRegistry,
  SchemaRegistryClient,
  SerdeType,
  clearKmsClients,
} = require('@confluentinc/schemaregistry')

const host = process.env.COVENANT_AUTH_URL
const SECRET = 'covenant-test-secret'
const SSN = '123-45-6789'
const DAY_MS = 24 * 60 * 60 * 1000
const WRITER = 'writer:w-pass'
const READER = 'reader:r-pass'

const FORMATS = {
  AVRO: {
    schema: {
      type: 'record',
      name: 'Customer',
      namespace: 'acme.node.pii',
      fields: [
        { name: 'id', type: 'string' },
        { name: 'ssn', type: 'string', 'confluent:tags': ['PII'] },
      ],
    },
    Serializer: AvroSerializer,
    Deserializer: AvroDeserializer,
  },
  JSON: {
    schema: {
      type: 'object',
      title: 'Customer',
      properties: {
        id: { type: 'string' },
        ssn: { type: 'string', 'confluent:tags': ['PII'] },
      },
    },
    Serializer: JsonSerializer,
    Deserializer: JsonDeserializer,
  },
}

LocalKmsDriver.register()

before(() => {
  if (!host) throw new Error('COVENANT_AUTH_URL is not set; run scripts/client-tests.sh')
})

/** The executor's clock, moved forward by the test to make a DEK expire. */
class SteppedClock extends Clock {
  constructor() {
    super()
    this.offset = 0
  }

  now() {
    return super.now() + this.offset
  }
}

function client(userInfo) {
  return SchemaRegistryClient.newClient({
    baseURLs: [host],
    basicAuthCredentials: { credentialsSource: 'USER_INFO', userInfo },
    maxRetries: 0,
  })
}

/** A rule registry of its own per serializer: an executor keeps the client config it was
 * first configured with. `disabled` reads the wire without decrypting. */
function rules({ clock = new Clock(), disabled = false } = {}) {
  const registry = new RuleRegistry()
  registry.registerExecutor(new FieldEncryptionExecutor(clock))
  if (disabled) registry.registerOverride({ type: 'ENCRYPT', disabled: true })
  return registry
}

async function request(path, userInfo, method = 'GET') {
  const answer = await fetch(`${host}${path}`, {
    method,
    headers: { authorization: `Basic ${Buffer.from(userInfo).toString('base64')}` },
  })
  return { status: answer.status, body: answer.status === 204 ? null : await answer.json() }
}

async function get(path) {
  const { status, body } = await request(path, WRITER)
  assert.equal(status, 200, `GET ${path}`)
  return body
}

function names() {
  const token = crypto.randomBytes(5).toString('hex')
  return {
    subject: `orders-${token}-value`,
    topic: `orders-${token}`,
    kek: `orders-kek-${token}`,
  }
}

async function registerEncrypted(format, subject, kek) {
  const rule = {
    name: 'encrypt-pii',
    kind: 'TRANSFORM',
    mode: RuleMode.WRITEREAD,
    type: 'ENCRYPT',
    tags: ['PII'],
    params: {
      'encrypt.kek.name': kek,
      'encrypt.kms.type': 'local-kms',
      'encrypt.kms.key.id': 'mykey',
      'encrypt.dek.expiry.days': '1',
    },
    onFailure: 'ERROR,ERROR',
  }
  const info = {
    schemaType: format,
    schema: JSON.stringify(FORMATS[format].schema),
    ruleSet: { domainRules: [rule] },
  }
  return client(WRITER).register(subject, info, false)
}

function producer(format, clock) {
  const { Serializer } = FORMATS[format]
  return new Serializer(
    client(WRITER),
    SerdeType.VALUE,
    { autoRegisterSchemas: false, useLatestVersion: true, ruleConfig: { secret: SECRET } },
    rules({ clock }),
  )
}

/** Reads one message as a fresh consumer. The local KMS client is process-wide and keeps the
 * secret it was made with, so it is dropped first: the consumer's own secret is the one used. */
async function consume(format, bytes, topic, { userInfo = WRITER, secret = SECRET, disabled } = {}) {
  clearKmsClients()
  const { Deserializer } = FORMATS[format]
  const read = new Deserializer(
    client(userInfo),
    SerdeType.VALUE,
    { ruleConfig: { secret } },
    rules({ disabled }),
  )
  try {
    return { ...(await read.deserialize(topic, bytes)) }
  } finally {
    clearKmsClients()
  }
}

/** The error and its causes, as one text. */
function chain(error) {
  const parts = []
  for (let e = error; e != null; e = e.cause) parts.push(`${e.name}: ${e.message}`)
  return parts.join(' <- ')
}

/** The field as it travels: base64 of the client's ciphertext, which (with DEK rotation on)
 * starts with a zero byte and the DEK version. */
async function wireField(format, bytes, topic) {
  const raw = await consume(format, bytes, topic, { disabled: true })
  assert.notEqual(raw.ssn, SSN)
  assert.ok(bytes.includes(Buffer.from(raw.ssn)), 'the ciphertext is in the produced bytes')
  const ciphertext = Buffer.from(raw.ssn, 'base64')
  assert.equal(ciphertext[0], 0)
  return { id: raw.id, dekVersion: ciphertext.readInt32BE(1) }
}

for (const format of Object.keys(FORMATS)) {
  test(`${format}: a PII field is encrypted through covenant and read back across a DEK rotation`, async () => {
    const { subject, topic, kek } = names()
    await registerEncrypted(format, subject, kek)

    const clock = new SteppedClock()
    const produce = producer(format, clock)
    const first = await produce.serialize(topic, { id: 'c1', ssn: SSN })
    assert.ok(!first.includes(SSN), 'the PII field is ciphertext on the wire')
    assert.ok(first.includes('c1'), 'untagged fields stay as they are')
    assert.deepEqual(await wireField(format, first, topic), { id: 'c1', dekVersion: 1 })

    // The client created the KEK and version 1 of the subject's DEK in Covenant.
    const storedKek = await get(`/dek-registry/v1/keks/${kek}`)
    assert.deepEqual(
      [storedKek.kmsType, storedKek.kmsKeyId, storedKek.shared],
      ['local-kms', 'mykey', false],
    )
    const dek = await get(`/dek-registry/v1/keks/${kek}/deks/${subject}/versions/1`)
    assert.equal(dek.algorithm, 'AES256_GCM')
    assert.ok(dek.encryptedKeyMaterial)
    assert.ok(!('keyMaterial' in dek), 'the registry never holds the key in the clear')

    // Two days later the DEK has expired (encrypt.dek.expiry.days = 1): the producer makes
    // version 2 and encrypts with it.
    clock.offset = 2 * DAY_MS
    const second = await produce.serialize(topic, { id: 'c2', ssn: SSN })
    assert.ok(!second.includes(SSN))
    assert.deepEqual(await wireField(format, second, topic), { id: 'c2', dekVersion: 2 })
    assert.deepEqual(await get(`/dek-registry/v1/keks/${kek}/deks/${subject}/versions`), [1, 2])
    assert.equal((await get(`/dek-registry/v1/keks/${kek}/deks/${subject}`)).version, 2)

    // A consumer with the same KMS secret reads both: old messages stay readable.
    assert.deepEqual(await consume(format, first, topic), { id: 'c1', ssn: SSN })
    assert.deepEqual(await consume(format, second, topic), { id: 'c2', ssn: SSN })

    // Consumers look DEKs up with deleted=true: a soft-deleted version still decrypts.
    const deleted = await request(`/dek-registry/v1/keks/${kek}/deks/${subject}/versions/1`, WRITER, 'DELETE')
    assert.equal(deleted.status, 204)
    assert.deepEqual(await get(`/dek-registry/v1/keks/${kek}/deks/${subject}/versions`), [2])
    assert.deepEqual(await consume(format, first, topic), { id: 'c1', ssn: SSN })
  })

  test(`${format}: two producers creating the same KEK and DEK at once share one DEK`, async () => {
    const { subject, topic, kek } = names()
    await registerEncrypted(format, subject, kek)
    // Both may find no key and create it: the second creation of a key is answered 409 and
    // that producer reads the other's key instead.
    const [a, b] = await Promise.all(
      ['a', 'b'].map((id) => producer(format, new Clock()).serialize(topic, { id, ssn: SSN })),
    )
    assert.deepEqual(await get(`/dek-registry/v1/keks/${kek}/deks/${subject}/versions`), [1])
    assert.deepEqual(await consume(format, a, topic), { id: 'a', ssn: SSN })
    assert.deepEqual(await consume(format, b, topic), { id: 'b', ssn: SSN })
  })

  test(`${format}: a consumer not allowed on the KEK, or with another KMS secret, cannot decrypt`, async () => {
    const { subject, topic, kek } = names()
    await registerEncrypted(format, subject, kek)
    const bytes = await producer(format, new Clock()).serialize(topic, { id: 'c1', ssn: SSN })

    // The reader may read the subject's schema but not the KEK: Covenant refuses with 403.
    const refused = await request(`/dek-registry/v1/keks/${kek}`, READER)
    assert.deepEqual([refused.status, refused.body.error_code], [403, 40301])
    await assert.rejects(consume(format, bytes, topic, { userInfo: READER }), (e) => {
      assert.match(chain(e), /could not get kek/)
      assert.match(chain(e), /40301/)
      return true
    })

    // The writer reaches the DEK, but another secret cannot unwrap it.
    await assert.rejects(consume(format, bytes, topic, { secret: 'another-secret' }), (e) => {
      assert.match(chain(e), /failed to decrypt key/)
      return true
    })
    assert.deepEqual(await consume(format, bytes, topic), { id: 'c1', ssn: SSN })
  })
}

// External storage delivery against a real S3-compatible server (s3rver behind a SigV4-checking front, see
// ./external-storage-peer.ts): a call's recording streamed into a multipart upload and its record uploaded from
// memory, under the policy's key prefix, with the right bytes and content types; path and virtual-hosted style;
// wrong credentials failing visibly; rotated credentials picked up mid-upload; failures aborting the upload; the
// outcome recorded on the conversation.
import { createHash } from 'node:crypto';
import t from 'tap';
import { createLogger } from '../../src/log.js';
import { createConversation } from '../../src/store/conversations.js';
import { listStorageOutcomes, recordStorageOutcome } from '../../src/store/external-storage.js';
import { encodeKey, objectUrl, resolveAddressingStyle } from '../../src/jobs/external-storage/addressing.js';
import { ExternalStorageDelivery, policyFromStore } from '../../src/jobs/external-storage/delivery.js';
import { MIN_PART_BYTES, S3Client, S3Error, type StoragePolicy } from '../../src/jobs/external-storage/s3-client.js';
import { WAV_HEADER_BYTES, WavMultipartSink } from '../../src/jobs/external-storage/wav-multipart-sink.js';
import { DB_KINDS, startTestServer } from '../helpers/server.js';
import { loopbackFetch, startS3Peer, type SentRequest } from './external-storage-peer.js';

t.setTimeout(300_000);
const log = createLogger('silent');
const RATE = 16_000;
/** One second of the recorder's planar blocks. */
const BLOCK_PAIRS = RATE;
const noSleep = async () => {};

/** A planar stereo block (left then right), second `n` of a call: a distinct, checkable pattern per sample. */
function block(n: number): Int16Array {
  const b = new Int16Array(BLOCK_PAIRS * 2);
  for (let i = 0; i < BLOCK_PAIRS; i++) {
    b[i] = ((n * 7919 + i) % 65536) - 32768;
    b[BLOCK_PAIRS + i] = ((n * 104729 + i * 3) % 65536) - 32768;
  }
  return b;
}

/** The interleaved little-endian bytes the WAV should hold for `seconds` blocks. */
function expectedData(seconds: number): Buffer {
  const out = Buffer.alloc(seconds * BLOCK_PAIRS * 4);
  for (let n = 0; n < seconds; n++) {
    const b = block(n);
    for (let i = 0; i < BLOCK_PAIRS; i++) {
      out.writeInt16LE(b[i]!, (n * BLOCK_PAIRS + i) * 4);
      out.writeInt16LE(b[BLOCK_PAIRS + i]!, (n * BLOCK_PAIRS + i) * 4 + 2);
    }
  }
  return out;
}

/** Writes seconds [from, to) at the pace of a call: the next second only once the parts filled so far are stored. */
async function paced(sink: WavMultipartSink, from: number, to: number): Promise<void> {
  for (let n = from; n < to; n++) {
    while (sink.partsInFlight > 0) await new Promise((r) => setTimeout(r, 5));
    sink.writePlanar(block(n), BLOCK_PAIRS, BLOCK_PAIRS);
  }
}

const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');

t.test('addressing: auto picks path style for IP hosts, non-AWS ports and dotted buckets over HTTPS', async (t) => {
  const style = (endpoint: string, bucket = 'b1') => resolveAddressingStyle('auto', new URL(endpoint), bucket);
  t.equal(style('https://s3.eu-west-1.amazonaws.com'), 'virtual');
  t.equal(style('https://s3.amazonaws.com:443'), 'virtual', 'an AWS host with a port stays virtual');
  t.equal(style('https://storage.example.com'), 'virtual');
  t.equal(style('https://203.0.113.9'), 'path');
  t.equal(style('https://[2001:db8::1]:9000'), 'path');
  t.equal(style('https://minio.example.com:9000'), 'path');
  t.equal(style('https://storage.example.com', 'my.bucket'), 'path');
  t.equal(
    resolveAddressingStyle('virtual', new URL('https://203.0.113.9'), 'b1'),
    'virtual',
    'an explicit style is kept',
  );
  t.equal(
    objectUrl('https://s3.example.com', 'b1', 'p/a b+c.wav', 'virtual').toString(),
    'https://b1.s3.example.com/p/a%20b%2Bc.wav',
  );
  t.equal(objectUrl('https://s3.example.com/base/', 'b1', 'k', 'path').toString(), 'https://s3.example.com/base/b1/k');
  t.equal(encodeKey("it's (1)*!"), 'it%27s%20%281%29%2A%21');
});

t.test('against a real S3-compatible server', async (t) => {
  const peer = await startS3Peer();
  t.teardown(() => peer.close());
  peer.addKey('AKIDPARLEY1', 'first-secret');
  const policy: StoragePolicy = {
    id: 'ext_storage_policy_1',
    endpointUrl: peer.ipEndpoint,
    bucket: peer.bucket,
    region: null,
    keyPrefix: 'calls/',
    addressingStyle: 'auto',
    accessKeyId: 'AKIDPARLEY1',
    secretAccessKey: 'first-secret',
  };
  let policyReads = 0;
  const source = async () => {
    policyReads++;
    return { ...policy };
  };
  const client = (sent: SentRequest[], over: Partial<ConstructorParameters<typeof S3Client>[0]> = {}) =>
    new S3Client({ policy: source, fetch: loopbackFetch(sent), sleep: noSleep, ...over });

  t.test('a short call: the recording in one PutObject and the record as JSON, under the key prefix', async (t) => {
    const sent: SentRequest[] = [];
    const outcomes: unknown[] = [];
    const d = await ExternalStorageDelivery.start({
      conversationId: 'conv_short',
      policyId: policy.id,
      client: client(sent),
      sampleRate: RATE,
      log,
    });
    for (let n = 0; n < 3; n++) d.recording!.writePlanar(block(n), BLOCK_PAIRS, BLOCK_PAIRS);
    const record = { id: 'conv_short', items: [{ role: 'user', live_transcript: 'Hello there' }] };
    const result = await d.finish({ value: record }, async (o) => void outcomes.push(o));
    t.match(result, [
      {
        artifact: 'recording',
        status: 'delivered',
        object_key: 'calls/conv_short/recording.wav',
        bucket: 'parley-artifacts',
        policy_id: policy.id,
        bytes: WAV_HEADER_BYTES + 3 * RATE * 4,
        error: null,
      },
      { artifact: 'record', status: 'delivered', object_key: 'calls/conv_short/conversation.json', error: null },
    ]);
    t.same(outcomes, result, 'every outcome handed to the recorder');
    t.same(
      sent.map((r) => r.method),
      ['PUT', 'PUT'],
      'one request per artifact',
    );

    const wav = await peer.getObject('calls/conv_short/recording.wav');
    t.equal(wav.status, 200);
    t.equal(wav.contentType, 'audio/wav');
    t.equal(wav.bytes.toString('ascii', 0, 4), 'RIFF');
    t.equal(wav.bytes.readUInt32LE(4), 36 + 3 * RATE * 4, 'RIFF size patched');
    t.equal(wav.bytes.readUInt16LE(22), 2, 'stereo');
    t.equal(wav.bytes.readUInt32LE(24), RATE);
    t.equal(wav.bytes.readUInt32LE(40), 3 * RATE * 4, 'data size patched');
    t.ok(
      wav.bytes.subarray(WAV_HEADER_BYTES).equals(expectedData(3)),
      'the audio, interleaved left = user, right = assistant',
    );
    const json = await peer.getObject('calls/conv_short/conversation.json');
    t.equal(json.contentType, 'application/json');
    t.same(JSON.parse(json.bytes.toString('utf8')), record);
  });

  t.test('a long call: multipart, part 1 with the final header uploaded last', async (t) => {
    const sent: SentRequest[] = [];
    const seconds = Math.ceil((2.4 * MIN_PART_BYTES) / (RATE * 4)); // three parts, the last partial
    const d = await ExternalStorageDelivery.start({
      conversationId: 'conv_long',
      policyId: policy.id,
      client: client(sent),
      sampleRate: RATE,
      log,
    });
    await paced(d.recording!, 0, seconds);
    const [recording] = await d.finish({ value: { id: 'conv_long' } }, async () => {});
    t.match(recording, { status: 'delivered', bytes: WAV_HEADER_BYTES + seconds * RATE * 4 });
    const calls = sent
      .filter((r) => r.url.includes('recording.wav'))
      .map((r) => `${r.method} ${new URL(r.url).search}`);
    t.same(
      calls.map((c) => c.replace(/uploadId=[^&]+/, 'uploadId=U')),
      [
        'POST ?uploads=',
        'PUT ?partNumber=2&uploadId=U',
        'PUT ?partNumber=3&uploadId=U',
        'PUT ?partNumber=1&uploadId=U',
        'POST ?uploadId=U',
      ],
      'created when part 2 filled, the last part, part 1 last, then completed',
    );
    const wav = await peer.getObject('calls/conv_long/recording.wav');
    t.equal(wav.contentType, 'audio/wav', 'the content type given at creation');
    t.equal(wav.bytes.length, WAV_HEADER_BYTES + seconds * RATE * 4);
    t.equal(wav.bytes.readUInt32LE(40), seconds * RATE * 4, 'the header in part 1 has the final size');
    t.equal(
      md5(wav.bytes.subarray(WAV_HEADER_BYTES)),
      md5(expectedData(seconds)),
      'the parts assemble into the audio in order',
    );
  });

  t.test('virtual-hosted style: the bucket in the host name', async (t) => {
    policy.endpointUrl = peer.nameEndpoint;
    policy.addressingStyle = 'virtual';
    t.teardown(() => {
      policy.endpointUrl = peer.ipEndpoint;
      policy.addressingStyle = 'auto';
    });
    const sent: SentRequest[] = [];
    const c = client(sent);
    await c.putObject(await c.target('virtual/hello.json'), '{"v":1}', 'application/json');
    t.equal(sent[0]!.host, `parley-artifacts.${new URL(peer.nameEndpoint).host}`, 'sent to <bucket>.s3.localhost');
    t.equal(new URL(sent[0]!.url).pathname, '/calls/virtual/hello.json', 'the path is the key alone');
    t.equal(
      (await peer.getObject('calls/virtual/hello.json')).bytes.toString(),
      '{"v":1}',
      'stored in the bucket the host named',
    );

    policy.addressingStyle = 'auto';
    await c.putObject(await c.target('virtual/auto.json'), '{}', 'application/json');
    t.equal(
      new URL(sent[1]!.url).pathname,
      '/parley-artifacts/calls/virtual/auto.json',
      'auto: a non-AWS endpoint on a port is path style',
    );
  });

  t.test('wrong credentials fail visibly, are not retried, and the outcome says why', async (t) => {
    for (const [id, secret, code] of [
      ['AKIDPARLEY1', 'not-the-secret', 'SignatureDoesNotMatch'],
      ['AKIDUNKNOWN', 'first-secret', 'InvalidAccessKeyId'],
    ] as const) {
      const sent: SentRequest[] = [];
      const bad = new S3Client({
        policy: async () => ({ ...policy, accessKeyId: id, secretAccessKey: secret }),
        fetch: loopbackFetch(sent),
        sleep: noSleep,
      });
      const err = await bad
        .putObject(await bad.target('denied.json'), '{}', 'application/json')
        .catch((e: unknown) => e);
      t.ok(err instanceof S3Error, code);
      t.match(err, { code, status: 403 });
      t.equal(sent.length, 1, 'a 403 is not retried');
      const d = await ExternalStorageDelivery.start({
        conversationId: 'conv_denied',
        policyId: policy.id,
        client: bad,
        sampleRate: RATE,
        log,
      });
      d.recording!.writePlanar(block(0), BLOCK_PAIRS, BLOCK_PAIRS);
      const outcomes = await d.finish({ value: {} }, async () => {});
      t.match(outcomes, [
        { artifact: 'recording', status: 'failed', error: new RegExp(code) },
        { artifact: 'record', status: 'failed', error: new RegExp(code) },
      ]);
    }
    t.equal((await peer.getObject('calls/denied.json')).status, 404, 'nothing stored');
  });

  t.test('rotated credentials are read at upload time, also in the middle of a multipart upload', async (t) => {
    const sent: SentRequest[] = [];
    peer.addKey('AKIDPARLEY2', 'second-secret');
    const readsBefore = policyReads;
    const sink = new WavMultipartSink(client(sent), await client(sent).target('rotated/recording.wav'), {
      sampleRate: RATE,
      log,
    });
    const perPart = Math.ceil(MIN_PART_BYTES / (RATE * 4));
    await paced(sink, 0, 2 * perPart);
    while (sink.partsInFlight > 0) await new Promise((r) => setTimeout(r, 5));
    // Rotation: the policy gets the new pair and the old one stops working.
    policy.accessKeyId = 'AKIDPARLEY2';
    policy.secretAccessKey = 'second-secret';
    peer.revokeKey('AKIDPARLEY1');
    await paced(sink, 2 * perPart, 2 * perPart + 3);
    const r = await sink.finish();
    t.equal(r.parts, 3);
    const used = sent.map((s) => `${s.method} ${new URL(s.url).searchParams.get('partNumber') ?? ''} ${s.accessKeyId}`);
    t.same(used.slice(0, 2), ['POST  AKIDPARLEY1', 'PUT 2 AKIDPARLEY1'], 'started with the first pair');
    t.same(
      used.slice(-3),
      ['PUT 3 AKIDPARLEY2', 'PUT 1 AKIDPARLEY2', 'POST  AKIDPARLEY2'],
      'finished with the rotated pair',
    );
    t.ok(policyReads - readsBefore >= sent.length, 'the policy was read for every request');
    t.equal((await peer.getObject('calls/rotated/recording.wav')).bytes.length, r.bytes);
  });

  t.test('a part that keeps failing aborts the multipart upload; transient errors are retried', async (t) => {
    const sent: SentRequest[] = [];
    const real = loopbackFetch(sent);
    let failPart3 = true;
    let dropFirst = true;
    const flaky: typeof fetch = async (input, init) => {
      const url = String(input);
      if (dropFirst && url.includes('partNumber=2')) {
        dropFirst = false;
        throw new TypeError('fetch failed', { cause: new Error('connection reset') });
      }
      if (failPart3 && url.includes('partNumber=3'))
        return new Response('<Error><Code>InternalError</Code><Message>disk on fire</Message></Error>', {
          status: 500,
        });
      return real(input, init);
    };
    const c = new S3Client({ policy: source, fetch: flaky, sleep: noSleep, maxRetries: 2 });
    const sink = new WavMultipartSink(c, await c.target('failing/recording.wav'), { sampleRate: RATE, log });
    const perPart = Math.ceil(MIN_PART_BYTES / (RATE * 4));
    await paced(sink, 0, 3 * perPart + 1);
    while (!sink.failure) await new Promise((r) => setTimeout(r, 10));
    t.match(sink.failure, { code: 'InternalError', status: 500 });
    await t.rejects(sink.finish(), /disk on fire/);
    const abort = sent.filter((r) => r.method === 'DELETE');
    t.equal(abort.length, 1, 'AbortMultipartUpload was sent');
    t.match(abort[0]!.url, /failing\/recording\.wav\?uploadId=/);
    t.ok(
      sent.some((r) => r.url.includes('partNumber=2')),
      'part 2 went through on its retry after a reset connection',
    );
    t.equal((await peer.getObject('calls/failing/recording.wav')).status, 404, 'no object');
    failPart3 = false;
  });

  t.test('an upload that cannot keep up with the call fails instead of buffering', async (t) => {
    let release: () => void = () => {};
    const held = new Promise<void>((r) => (release = r));
    const sent: SentRequest[] = [];
    const real = loopbackFetch(sent);
    const slow: typeof fetch = async (input, init) => {
      if (String(input).includes('partNumber=2')) await held;
      return real(input, init);
    };
    const c = new S3Client({ policy: source, fetch: slow, sleep: noSleep });
    const sink = new WavMultipartSink(c, await c.target('slow/recording.wav'), { sampleRate: RATE, log });
    const perPart = Math.ceil(MIN_PART_BYTES / (RATE * 4));
    for (let n = 0; n < 3 * perPart + 1 && !sink.failure; n++) {
      sink.writePlanar(block(n), BLOCK_PAIRS, BLOCK_PAIRS);
      await new Promise((r) => setImmediate(r));
    }
    t.match(sink.failure, { code: 'SlowUpload' });
    release();
    await t.rejects(sink.finish(), /cannot keep up/);
    t.ok(
      sent.some((r) => r.method === 'DELETE'),
      'the upload is aborted',
    );
  });
});

for (const db of DB_KINDS) {
  t.test(`the outcome is recorded on the conversation, and the policy is read from the store (${db})`, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const id = await createConversation(server.sql, {
      orgId: server.orgId,
      projectId: server.projectId,
      origin: 'direct',
    });
    const outcome = {
      conversation_id: id,
      artifact: 'recording' as const,
      policy_id: 'ext_storage_policy_x',
      bucket: 'b',
      object_key: `p/${id}/recording.wav`,
      status: 'delivered' as const,
      bytes: 1044,
      error: null,
      finished_at: new Date('2026-11-27T10:00:00Z'),
    };
    t.equal(await recordStorageOutcome(server.sql, outcome), true);
    t.equal(
      await recordStorageOutcome(server.sql, {
        ...outcome,
        artifact: 'record',
        status: 'failed',
        bytes: null,
        error: 'SignatureDoesNotMatch',
      }),
      true,
    );
    t.same(await listStorageOutcomes(server.sql, id), [
      { ...outcome, artifact: 'record', status: 'failed', bytes: null, error: 'SignatureDoesNotMatch' },
      outcome,
    ]);
    t.equal(
      await recordStorageOutcome(server.sql, { ...outcome, conversation_id: 'conv_gone' }),
      false,
      'no outcome for a conversation that is gone',
    );

    const [row] = await server.sql<{ id: string }[]>`insert into external_storage_policies
      (id, org_id, project_id, name, endpoint_url, bucket, region, key_prefix, addressing_style, access_key_id, secret_access_key)
      values ('ext_storage_policy_t', ${server.orgId}, ${server.projectId}, 'archive', 'https://s3.example.com', 'b', null, 'p/', 'auto', 'AK1', 'S1')
      returning id`;
    const source = policyFromStore(server.sql, row!.id);
    t.match(await source(), {
      accessKeyId: 'AK1',
      secretAccessKey: 'S1',
      keyPrefix: 'p/',
      addressingStyle: 'auto',
      region: null,
    });
    await server.sql`update external_storage_policies set access_key_id = 'AK2', secret_access_key = 'S2' where id = ${row!.id}`;
    t.match(await source(), { accessKeyId: 'AK2', secretAccessKey: 'S2' }, 'a rotation is seen at the next read');
    await server.sql`delete from external_storage_policies where id = ${row!.id}`;
    await t.rejects(source(), { code: 'PolicyDeleted' });
  });
}

// External storage end to end: a real STS conversation (media worker, echo engine) of an agent with an external
// storage policy and zero data retention. Its recording streams to a real S3-compatible server (s3rver behind a
// SigV4-checking front, ./external-storage-peer.ts) and its record, with the content the store never held, is
// uploaded at the end, under the policy's key prefix, with the credentials the policy has at that moment (rotated
// mid-call); nothing is written under the data directory; the outcomes show on the record. A policy with wrong
// credentials shows as failed deliveries. PostgreSQL.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { insertPolicy } from '../../src/store/external-storage-policies.js';
import { api, type ApiClient } from '../helpers/server.js';
import { startRealtimeServer, TestClient, type RealtimeServer } from '../helpers/realtime.js';
import { startS3Peer } from './external-storage-peer.js';
import { eventually } from './helpers.js';

t.setTimeout(180_000);

/** Every file under `dir`, recursively. */
function files(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((f) => {
    const path = join(dir, f);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

/** A conversation of `agent` that hears its welcome and hangs up; `during` runs before the hang-up. */
async function call(
  server: RealtimeServer,
  http: ApiClient,
  agent: string,
  during: () => Promise<void> = async () => {},
) {
  const c = await TestClient.open(`${server.wsUrl}/v1/sts/ws`, { authorization: `Bearer ${server.apiKey}` });
  c.send({
    type: 'config',
    agent,
    input_format: 'pcm_16000',
    output_format: 'pcm_16000',
    welcome_message: 'Hello there.',
  });
  await c.untilEvent('assistant_finished_speaking');
  const id = String(c.events('conversation_created')[0]?.conversation_id);
  await during();
  c.close();
  await server.endedConversation(id);
  let conv: any;
  await eventually('both outcomes are on the record', async () => {
    conv = (await http.get(`/v1/conversations/${id}`)).body.conversation;
    return conv.external_storage?.deliveries.length === 2;
  });
  return { id, conv };
}

t.test('artifacts of a zero data retention conversation delivered to its bucket, nothing kept', async (t) => {
  const peer = await startS3Peer();
  // The bucket is a local server: private endpoints allowed, as in development.
  const server = await startRealtimeServer({
    env: { PARLEY_RECONNECT_GRACE_SEC: '0', PARLEY_ALLOW_PRIVATE_ENDPOINTS: '1' },
  });
  t.teardown(async () => {
    await server.close();
    await peer.close();
  });
  const http = api(server);
  peer.addKey('AK-FIRST', 'first-secret');
  peer.addKey('AK-ROTATED', 'rotated-secret');
  peer.addKey('AK-OTHER', 'other-secret');
  // The peer is plain HTTP on loopback, which the API refuses for a policy: stored as the API would store it.
  const policy = (name: string, accessKeyId: string, secret: string) =>
    insertPolicy(server.sql, server.orgId, server.projectId, {
      name,
      endpoint_url: peer.ipEndpoint,
      bucket: peer.bucket,
      region: null,
      key_prefix: 'calls/',
      addressing_style: 'auto',
      access_key_id: accessKeyId,
      secret_access_key: secret,
    });
  await policy('archive', 'AK-FIRST', 'first-secret');
  await policy('misconfigured', 'AK-OTHER', 'not-the-secret');
  for (const [name, storage] of [
    ['archived', 'archive'],
    ['misarchived', 'misconfigured'],
  ]) {
    const res = await http.put('/v1/agents/upsert', {
      name,
      data_retention_policy: { zero_data_retention: true },
      external_storage_policy: storage,
    });
    t.equal(res.status, 200, `agent ${name}`);
  }
  const dataDir = server.settings.PARLEY_DATA_DIR;

  t.test('the recording and the record arrive in the bucket; the outcome is on the record', async (t) => {
    const { id, conv } = await call(server, http, 'archived', async () => {
      // Rotated mid-call, the old key revoked: every upload (they all come at the end here) signs with the new one.
      const patched = await http.patch('/v1/external_storage_policies/archive', {
        access_key_id: 'AK-ROTATED',
        secret_access_key: 'rotated-secret',
      });
      t.equal(patched.status, 200, 'credentials rotated');
      peer.revokeKey('AK-FIRST');
    });
    t.match(conv.external_storage.deliveries, [
      { artifact: 'record', status: 'delivered', bucket: peer.bucket, key: `calls/${id}/conversation.json` },
      { artifact: 'recording', status: 'delivered', bucket: peer.bucket, key: `calls/${id}/recording.wav` },
    ]);
    t.notOk(
      conv.external_storage.deliveries.some((d: { error?: string }) => d.error),
      'no error',
    );

    const recording = await peer.getObject(`calls/${id}/recording.wav`);
    t.equal(recording.status, 200, 'the recording is in the bucket');
    t.equal(recording.contentType, 'audio/wav');
    const wav = recording.bytes;
    t.equal(wav.toString('latin1', 0, 4), 'RIFF');
    t.equal(wav.readUInt16LE(22), 2, 'stereo: the caller and the assistant');
    t.equal(wav.readUInt32LE(40), wav.length - 44, 'the data size is patched in the header');
    t.equal(conv.external_storage.deliveries[1].bytes, wav.length, 'the outcome has its size');
    let assistantPeak = 0;
    for (let i = 44; i + 4 <= wav.length; i += 4)
      assistantPeak = Math.max(assistantPeak, Math.abs(wav.readInt16LE(i + 2)));
    t.ok(assistantPeak > 1000, "the welcome is on the assistant's channel");

    const record = await peer.getObject(`calls/${id}/conversation.json`);
    t.equal(record.contentType, 'application/json');
    const delivered = JSON.parse(record.bytes.toString('utf8'));
    t.match(
      delivered,
      {
        id,
        agent: { name: 'archived' },
        ended_by: 'user',
        live_transcript: 'assistant: Hello there.',
        items: [{ role: 'assistant', live_transcript: 'Hello there.' }],
        data_retention_policy: { zero_data_retention: true },
      },
      'the record, with what was said (from the live record, not the store)',
    );
    t.notOk('post_call' in delivered || 'external_storage' in delivered, 'without what happens after the call');

    t.equal(conv.live_transcript, null, 'Parley keeps no transcript');
    t.same(
      conv.items.map((i: { live_transcript: string | null }) => i.live_transcript),
      [null],
      'nor the text of the items',
    );
    t.equal(conv.audio_url, null, 'nor a recording');
    const [rows] =
      await server.sql`select count(*)::int as n from conversation_recordings where conversation_id = ${id}`;
    t.equal(rows!.n, 0, 'no recording row');
    t.same(
      files(dataDir).filter((f) => f.includes(id)),
      [],
      'nothing of the conversation under the data directory',
    );
    t.same(files(join(dataDir, 'recordings')), [], 'no recording file at all');
  });

  t.test('wrong credentials: both deliveries failed, visibly', async (t) => {
    const { id, conv } = await call(server, http, 'misarchived');
    t.match(conv.external_storage.deliveries, [
      { artifact: 'record', status: 'failed', key: `calls/${id}/conversation.json`, error: /SignatureDoesNotMatch/ },
      { artifact: 'recording', status: 'failed', key: `calls/${id}/recording.wav`, error: /SignatureDoesNotMatch/ },
    ]);
    t.equal((await peer.getObject(`calls/${id}/recording.wav`)).status, 404, 'nothing in the bucket');
    t.same(
      files(dataDir).filter((f) => f.includes(id)),
      [],
      'and nothing kept here instead',
    );
  });
});

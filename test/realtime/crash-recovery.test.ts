// A node killed mid-conversation (SIGKILL of a real server process) leaves no record open and no recording without
// its row (src/domain/recovery.ts): a named node ends its leftovers when it starts again; an unnamed one (whose lease
// name died with its process) has them ended once their leases expire, by the sweep of whichever node runs.
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import postgres from 'postgres';
import t, { type Test } from 'tap';
import { createTempDatabase } from '../helpers/temp-database.js';
import { streamAudio, TestClient } from '../helpers/realtime.js';
import { startNode, type NodeProcess } from './node-process.js';

t.setTimeout(300_000);

const KEY = 'bootstrap-key-for-crash-tests-0123456789';
const RATE = 16_000;
/** Seconds of audio streamed before the kill: the recorder writes a block a second, so some reach the file. */
const STREAM_SECONDS = 3;
/** Polls of the database, 200 ms apart, for a sweep to end an abandoned conversation. */
const SWEEP_POLLS = 150;

interface Row {
  state: string;
  ended_by: string | null;
  ended_at: Date | null;
  started_at: Date | null;
  duration_ms: number;
}

/** A live conversation on `node` with a welcome item stored and a few seconds of audio recorded; its id. */
async function liveConversation(t: Test, node: NodeProcess, sql: postgres.Sql): Promise<string> {
  const client = await TestClient.open(`${node.wsUrl}/v1/sts/ws`, { authorization: `Bearer ${KEY}` });
  client.send({
    type: 'config',
    input_format: 'pcm_16000',
    output_format: 'pcm_16000',
    welcome_message: 'Hello there.',
  });
  await client.untilEvent('assistant_finished_speaking');
  const id = String(client.events('conversation_created')[0]?.conversation_id);
  await streamAudio(client, new Int16Array(RATE * STREAM_SECONDS), RATE);
  for (let i = 0; i < 50; i++) {
    const [{ n }] = await sql<
      { n: number }[]
    >`select count(*)::int as n from conversation_items where conversation_id = ${id}`;
    if (n > 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  t.teardown(() => client.ws.terminate());
  return id;
}

/** The stored recording's WAV (gunzipped when it was compressed since), and its row. */
function storedWav(dataDir: string, path: string): Buffer {
  const bytes = readFileSync(join(dataDir, 'recordings', path));
  return path.endsWith('.gz') ? gunzipSync(bytes) : bytes;
}

async function checkRecovered(t: Test, sql: postgres.Sql, dataDir: string, id: string): Promise<void> {
  const [row] = await sql<
    Row[]
  >`select state, ended_by, ended_at, started_at, duration_ms from conversations where id = ${id}`;
  t.equal(row.state, 'ended', 'the record is ended');
  t.equal(row.ended_by, 'error', 'ended_by error: it did not finish on its own');
  t.ok(row.ended_at, 'with ended_at');
  t.ok(row.duration_ms >= 1000, `with the duration of what was recorded (${row.duration_ms} ms)`);
  t.ok(
    Math.abs(row.ended_at!.getTime() - row.started_at!.getTime() - row.duration_ms) <= 1,
    'ended_at is its start plus that duration',
  );
  const recordings = await sql<{ side: string; path: string; bytes: number }[]>`
    select side, path, bytes::float8 as bytes from conversation_recordings where conversation_id = ${id}`;
  t.equal(recordings.length, 1, 'its recording has its row');
  const wav = storedWav(dataDir, recordings[0].path);
  const dataBytes = wav.readUInt32LE(40);
  t.ok(dataBytes > 0, 'the WAV holds audio');
  t.equal(wav.readUInt32LE(4), wav.length - 8, 'RIFF size repaired from the file');
  t.equal(dataBytes, wav.length - 44, 'data size repaired from the file');
  t.ok(
    Math.abs((dataBytes / 4 / wav.readUInt32LE(24)) * 1000 - row.duration_ms) < 1000,
    "the duration is the recording's length (or its last item's end)",
  );
  const [{ n }] = await sql<
    { n: number }[]
  >`select count(*)::int as n from conversation_leases where conversation_id = ${id}`;
  t.equal(n, 0, 'its lease is gone');
}

t.test(
  'a named node killed mid-conversation ends its record and attaches its recording when it starts again',
  async (t) => {
    const db = await createTempDatabase('parley_test_crash');
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-crash-'));
    const sql = postgres(db.url, { max: 2, onnotice: () => {} });
    t.teardown(async () => {
      await sql.end();
      await db.drop();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const env = {
      DATABASE_URL: db.url,
      PARLEY_BOOTSTRAP_API_KEY: KEY,
      PARLEY_DATA_DIR: dataDir,
      PARLEY_NODE_ID: 'node-a',
    };
    const node = await startNode(env);
    const id = await liveConversation(t, node, sql);
    node.kill('SIGKILL');
    t.equal(await node.exited, 'SIGKILL');

    const [left] = await sql<
      Row[]
    >`select state, ended_by, ended_at, started_at, duration_ms from conversations where id = ${id}`;
    t.match(left, { ended_by: null, ended_at: null }, 'killed: the record is left open');
    t.ok(left.started_at, 'started_at was set when it started');
    const wavPath = join(dataDir, 'recordings', `${id}.wav`);
    t.equal(readFileSync(wavPath).readUInt32LE(40), 0, 'the killed writer left its WAV header unpatched');
    t.ok(statSync(wavPath).size > 44, 'with audio after it');

    const again = await startNode(env);
    t.teardown(() => again.kill('SIGKILL'));
    await checkRecovered(t, sql, dataDir, id);
    const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from conversations where state <> 'ended'`;
    t.equal(n, 0, 'no record left open');
    again.kill('SIGTERM');
    t.equal(await again.exited, null, 'the restarted node stops cleanly');
  },
);

t.test('an unnamed node killed mid-conversation: its conversation is ended once its lease expires', async (t) => {
  const db = await createTempDatabase('parley_test_crash');
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-crash-'));
  const sql = postgres(db.url, { max: 2, onnotice: () => {} });
  t.teardown(async () => {
    await sql.end();
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const env = {
    DATABASE_URL: db.url,
    PARLEY_BOOTSTRAP_API_KEY: KEY,
    PARLEY_DATA_DIR: dataDir,
    PARLEY_LEASE_TTL_SEC: '2',
  };
  const node = await startNode(env);
  const id = await liveConversation(t, node, sql);
  const [{ lease }] = await sql<
    { lease: string }[]
  >`select node_id as lease from conversation_leases where conversation_id = ${id}`;
  node.kill('SIGKILL');
  await node.exited;

  // Started again, under a lease name of its new process: the dead one's lease is not its own.
  const again = await startNode(env);
  t.teardown(() => again.kill('SIGKILL'));
  let row: Row | undefined;
  for (let i = 0; i < SWEEP_POLLS; i++) {
    [row] = await sql<
      Row[]
    >`select state, ended_by, ended_at, started_at, duration_ms from conversations where id = ${id}`;
    if (row.state === 'ended') break;
    await new Promise((r) => setTimeout(r, 200));
  }
  t.equal(row?.state, 'ended', `ended by the sweep once the dead node's lease (${lease}) expired`);
  await checkRecovered(t, sql, dataDir, id);
  again.kill('SIGTERM');
  await again.exited;
});

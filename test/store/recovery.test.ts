// Recovery of conversations left in progress by a node that died (src/domain/recovery.ts, src/store/recovery.ts):
// ended exactly once whichever nodes sweep at once, at what was recorded of them; conversations whose lease is in
// force untouched; a killed writer's WAV repaired from its size; a node's own recording files attached or removed
// at start-up, another node's left alone. Runs on both databases.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { createLogger } from '../../src/log.js';
import { recoverAbandoned, recoverAtStart, repairWav, type RecoveryDeps } from '../../src/domain/recovery.js';
import { WAV_HEADER_BYTES } from '../../src/media/recording.js';
import { appendItems, createConversation } from '../../src/store/conversations.js';
import { newId } from '../../src/store/ids.js';
import { DB_KINDS, startTestServer, type TestServer } from '../helpers/server.js';

t.setTimeout(300_000);
const log = createLogger('silent');
const RATE = 16_000;

/** A WAV as a killed recorder leaves it: the header written at open (sizes 0), then `pairs` stereo samples. */
function killedWav(path: string, pairs: number, extraBytes = 0): void {
  const h = Buffer.alloc(WAV_HEADER_BYTES);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36, 4);
  h.write('WAVE', 8, 'ascii');
  h.write('fmt ', 12, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(2, 22);
  h.writeUInt32LE(RATE, 24);
  h.writeUInt32LE(RATE * 4, 28);
  h.writeUInt16LE(4, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(0, 40);
  writeFileSync(path, Buffer.concat([h, Buffer.alloc(pairs * 4 + extraBytes, 1)]));
}

t.test('repairWav patches the sizes from the file, cut to whole sample pairs', async (t) => {
  const dir = t.testdir();
  const path = join(dir, 'a.wav');
  killedWav(path, RATE * 2, 3);
  const repaired = await repairWav(path);
  t.same(repaired, { sampleRate: RATE, bytes: WAV_HEADER_BYTES + RATE * 2 * 4, durationMs: 2000 });
  const wav = readFileSync(path);
  t.equal(wav.length, WAV_HEADER_BYTES + RATE * 2 * 4, 'a torn sample pair cut off');
  t.equal(wav.readUInt32LE(4), wav.length - 8);
  t.equal(wav.readUInt32LE(40), wav.length - WAV_HEADER_BYTES);
  writeFileSync(join(dir, 'b.wav'), 'not a wav at all, but long enough to have a header of 44 bytes...');
  t.equal(await repairWav(join(dir, 'b.wav')), null, 'not a WAV of ours: left alone');
});

/** The tests' "now": conversations and items are placed before it. */
const NOW = Date.now();

async function conversation(server: TestServer, nodeId: string | null, startedAgoMs: number): Promise<string> {
  const id = newId('conv');
  const started = new Date(NOW - startedAgoMs);
  await createConversation(server.sql, {
    id,
    orgId: server.orgId,
    projectId: server.projectId,
    origin: 'web',
    nodeId,
    started_at: started,
    created_at: started,
  });
  return id;
}

async function lease(server: TestServer, id: string, node: string, expiresInSec: number): Promise<void> {
  await server.sql`insert into conversation_leases (conversation_id, project_id, node_id, expires_at)
    values (${id}, ${server.projectId}, ${node}, now() + make_interval(secs => ${expiresInSec}))`;
}

async function row(server: TestServer, id: string) {
  const [r] = await server.sql<
    { state: string; ended_by: string | null; duration_ms: number; started_at: Date; ended_at: Date | null }[]
  >`
    select state, ended_by, duration_ms, started_at, ended_at from conversations where id = ${id}`;
  return r;
}

for (const db of DB_KINDS) {
  t.test(`recovery on ${db}`, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const dataDir = server.settings.PARLEY_DATA_DIR;
    const recordings = join(dataDir, 'recordings');
    mkdirSync(recordings, { recursive: true });
    const deps = (nodeId: string | null, leaseNodeId: string): RecoveryDeps => ({
      sql: server.sql,
      log,
      dataDir,
      nodeId,
      leaseNodeId,
    });

    t.test("a dead node's conversations: ended once, whichever nodes sweep at once; live ones untouched", async (t) => {
      const dead = await conversation(server, 'node-dead', 60_000);
      await lease(server, dead, 'node-dead', -5);
      await appendItems(server.sql, dead, [
        { role: 'assistant', live_transcript: 'Hi.', duration_ms: 1500, started_at: new Date(NOW - 58_000) },
      ]);
      const live = await conversation(server, 'node-live', 60_000);
      await lease(server, live, 'node-live', 30);
      const here = await conversation(server, 'node-b', 60_000);
      const sweep = (node: string) =>
        recoverAbandoned(deps(node, node), { isLive: (id) => id === here, minAgeSec: 1, limit: 100 });
      const reports = await Promise.all([sweep('node-b'), sweep('node-c'), sweep('node-d')]);
      t.equal(
        reports.reduce((n, r) => n + r.ended, 0),
        1,
        'the dead conversation ended exactly once',
      );
      const r = await row(server, dead);
      t.match(r, { state: 'ended', ended_by: 'error' });
      t.ok(Math.abs(r.duration_ms - 3500) < 5, `its duration runs to the end of its last item (${r.duration_ms} ms)`);
      t.ok(
        Math.abs(r.ended_at!.getTime() - r.started_at.getTime() - r.duration_ms) <= 1,
        'ended_at: its start plus that',
      );
      const [{ jobs }] = await server.sql<
        { jobs: number }[]
      >`select count(*)::int as jobs from jobs where conversation_id = ${dead}`;
      t.ok(jobs > 0, 'its post-call jobs enqueued');
      const [{ leases }] = await server.sql<
        { leases: number }[]
      >`select count(*)::int as leases from conversation_leases where conversation_id = ${dead}`;
      t.equal(leases, 0, 'its lease freed');
      t.equal((await row(server, live)).state, 'created', 'one whose lease is in force goes on');
      t.equal((await row(server, here)).state, 'created', 'one live in the sweeping process goes on');
    });

    t.test(
      "at start-up: the node's leftovers ended at once, its recordings repaired and attached, strays removed",
      async (t) => {
        const mine = await conversation(server, 'node-a', 10_000);
        await lease(server, mine, 'node-a', 30); // in force: a kill -9 just now
        killedWav(join(recordings, `${mine}.wav`), RATE * 3);
        const zdr = await conversation(server, 'node-a', 10_000);
        await server.sql`update conversations set data_retention_policy = ${server.sql.json({ zero_data_retention: true })} where id = ${zdr}`;
        await lease(server, zdr, 'node-a', 30);
        killedWav(join(recordings, `${zdr}.wav`), RATE);
        const admittedOnly = newId('conv'); // admitted, never created: its lease alone
        await server.sql`insert into conversation_leases (conversation_id, project_id, node_id, expires_at)
        values (${admittedOnly}, ${server.projectId}, 'node-a', now() + interval '30 seconds')`;
        const stray = newId('conv');
        killedWav(join(recordings, `${stray}.wav`), RATE);
        const others = await conversation(server, 'node-x', 10_000);
        await lease(server, others, 'node-x', 30);
        killedWav(join(recordings, `${others}.wav`), RATE);

        const report = await recoverAtStart(deps('node-a', 'node-a'));
        t.match(report, { ended: 2, attached: 1, leasesFreed: 1 });
        const r = await row(server, mine);
        t.match(r, { state: 'ended', ended_by: 'error' });
        t.ok(Math.abs(r.duration_ms - 3000) < 5, `its duration is its recording's length (${r.duration_ms} ms)`);
        const [rec] = await server.sql<{ path: string; format: string; bytes: number; compress_to: string }[]>`
        select path, format, bytes::float8 as bytes, compress_to from conversation_recordings where conversation_id = ${mine}`;
        t.same(
          rec,
          { path: `${mine}.wav`, format: 'wav', bytes: WAV_HEADER_BYTES + RATE * 3 * 4, compress_to: 'wav.gz' },
          'its recording attached',
        );
        t.equal(
          readFileSync(join(recordings, `${mine}.wav`)).readUInt32LE(40),
          RATE * 3 * 4,
          'with its header repaired',
        );
        t.notOk(existsSync(join(recordings, `${zdr}.wav`)), 'zero data retention: its recording removed');
        t.notOk(existsSync(join(recordings, `${stray}.wav`)), 'a recording of no conversation removed');
        t.ok(existsSync(join(recordings, `${others}.wav`)), "another node's recording left alone");
        t.equal((await row(server, others)).state, 'created', "another node's live conversation untouched");
        const [{ leases }] = await server.sql<
          { leases: number }[]
        >`select count(*)::int as leases from conversation_leases where node_id = 'node-a'`;
        t.equal(leases, 0, "the node's leases freed");
        t.match(
          await recoverAtStart(deps('node-a', 'node-a')),
          { ended: 0, attached: 0, removed: 0, leasesFreed: 0 },
          'a second start finds nothing',
        );
      },
    );
  });
}

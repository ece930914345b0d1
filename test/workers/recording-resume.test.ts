// resumeCompressions (src/workers/recording-resume.ts), run by main at start: a recording left as `.wav` with its
// gzip pending (compress_to set) is compressed and its row moved, a partial `.gz` a killed compression left beside
// it is replaced; a recording wanted as `wav`, and one whose `.wav` is not on this node's disk, are left alone.
// Only the node that ran the conversation (conversations.node_id) resumes it: nodes sharing one data directory
// leave each other's `.wav` and `.gz` untouched, also those of a node whose heartbeat is long dead.
import t, { type Test } from 'tap';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { pino } from 'pino';
import { DB_KINDS, startTestServer } from '../helpers/server.js';
import { StereoRecorder } from '../../src/media/recording.js';
import { resumeCompressions } from '../../src/workers/recording-resume.js';
import {
  createConversation,
  finishConversation,
  getRecording,
  pendingCompressions,
} from '../../src/store/conversations.js';
import { renew } from '../../src/store/leases.js';

t.setTimeout(120_000);

const RATE = 8000;
/** The start of a gzip whose writer is still at work (or was killed). */
const PARTIAL_GZIP = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0x55, 0xaa]);
const RESUMING = 'resuming recording compressions left by the previous run';
const LEFT_TO_OTHERS = /^pending recording compressions of other nodes left to them/;

/** A logger whose lines the test reads (info and up). */
function capturingLogger() {
  const lines: Record<string, unknown>[] = [];
  const log = pino(
    { level: 'info' },
    { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) },
  );
  return { log, lines };
}

for (const db of DB_KINDS) {
  t.test(`resuming compressions at start (${db})`, async (t) => {
    /** A server and a data directory standing for the one several nodes share. */
    async function setUp(t: Test) {
      const server = await startTestServer({ db });
      t.teardown(() => server.close());
      const dataDir = t.testdir({});
      const dir = join(dataDir, 'recordings');
      mkdirSync(dir);
      const { sql, orgId, projectId } = server;
      /**
       * A finished conversation run by `nodeId` whose recording row points at `<id>.wav`; the WAV written unless
       * `onDisk` is false.
       */
      async function ended(compressTo: 'wav.gz' | null, opts: { nodeId?: string | null; onDisk?: boolean } = {}) {
        const id = await createConversation(sql, { orgId, projectId, origin: 'web', nodeId: opts.nodeId ?? null });
        let bytes = 44;
        if (opts.onDisk ?? true) {
          const rec = await StereoRecorder.open(join(dir, `${id}.wav`), { sampleRate: RATE });
          for (let i = 0; i < 100; i++) {
            rec.writeUser(new Int16Array(160).map((_, k) => (k * 37 + i) % 2000));
            rec.tick();
          }
          bytes = (await rec.finish()).bytes;
        }
        await finishConversation(sql, id, { ended_by: 'user', ended_at: new Date(), duration_ms: 2000 }, [
          {
            side: 'both',
            path: `${id}.wav`,
            format: 'wav',
            sample_rate: RATE,
            channels: 2,
            bytes,
            compress_to: compressTo,
          },
        ]);
        return id;
      }
      /** What is on disk and in the store of a recording another node owns, to compare before and after. */
      async function snapshot(id: string) {
        const file = (name: string) => (existsSync(join(dir, name)) ? readFileSync(join(dir, name)) : null);
        return { wav: file(`${id}.wav`), gz: file(`${id}.wav.gz`), row: await getRecording(sql, id, 'both') };
      }
      return { sql, dataDir, dir, ended, snapshot };
    }

    t.test('the unnamed node resumes its own rows', async (t) => {
      const { sql, dataDir, dir, ended } = await setUp(t);
      const pending = await ended('wav.gz');
      writeFileSync(join(dir, `${pending}.wav.gz`), PARTIAL_GZIP); // a killed compression's start
      const wanted = await ended(null);
      const elsewhere = await ended('wav.gz', { onDisk: false });
      const wav = readFileSync(join(dir, `${pending}.wav`));
      t.same(
        (await pendingCompressions(sql, null)).map((p) => p.conversation_id).sort(),
        [pending, elsewhere].sort(),
        'pending: the rows with compress_to left as wav',
      );

      const { log, lines } = capturingLogger();
      const { compressor, queued } = await resumeCompressions({ sql, dataDir, log, nodeId: null });
      t.equal(queued, 1, 'only the one whose .wav is here');
      await compressor.idle();
      t.same(compressor.outcomes, { compressed: 1, row_gone: 0, abandoned: 0, failed: 0 });
      const moved = await getRecording(sql, pending, 'both');
      t.match(moved, { path: `${pending}.wav.gz`, format: 'wav.gz' }, 'the row moved to the gzip');
      t.ok(
        gunzipSync(readFileSync(join(dir, `${pending}.wav.gz`))).equals(wav),
        'the partial gzip replaced by one of exactly the WAV',
      );
      t.equal(moved!.bytes, readFileSync(join(dir, `${pending}.wav.gz`)).length);
      t.notOk(existsSync(join(dir, `${pending}.wav`)), 'its .wav removed');
      t.match(
        await getRecording(sql, wanted, 'both'),
        { path: `${wanted}.wav`, format: 'wav' },
        'a wav recording stays wav',
      );
      t.ok(existsSync(join(dir, `${wanted}.wav`)));
      t.match(
        await getRecording(sql, elsewhere, 'both'),
        { path: `${elsewhere}.wav`, format: 'wav' },
        'a recording not on this disk untouched',
      );
      t.same(
        (await pendingCompressions(sql, null)).map((p) => p.conversation_id),
        [elsewhere],
        'nothing else pending',
      );
      t.match(
        lines.find((l) => l.msg === RESUMING),
        { queued: 1, notOnDisk: 1 },
      );
      t.notOk(
        lines.some((l) => LEFT_TO_OTHERS.test(String(l.msg))),
        'no other node has rows',
      );
      await compressor.close();
    });

    t.test(
      "two nodes in one data directory: a node resumes its own, the other's files and row untouched",
      async (t) => {
        const { sql, dataDir, dir, ended, snapshot } = await setUp(t);
        await renew(sql, { nodeId: 'node-b', ttlSec: 30 }); // B is alive
        const ofA = await ended('wav.gz', { nodeId: 'node-a' });
        writeFileSync(join(dir, `${ofA}.wav.gz`), PARTIAL_GZIP); // A's killed compression
        const ofB = await ended('wav.gz', { nodeId: 'node-b' });
        writeFileSync(join(dir, `${ofB}.wav.gz`), PARTIAL_GZIP); // B is compressing it right now
        const unnamed = await ended('wav.gz'); // a node without PARLEY_NODE_ID once ran here
        writeFileSync(join(dir, `${unnamed}.wav.gz`), PARTIAL_GZIP);
        const wavA = readFileSync(join(dir, `${ofA}.wav`));
        const before = { b: await snapshot(ofB), unnamed: await snapshot(unnamed) };

        const { log, lines } = capturingLogger();
        const { compressor, queued } = await resumeCompressions({ sql, dataDir, log, nodeId: 'node-a' });
        t.equal(queued, 1, "only A's");
        await compressor.idle();
        t.same(compressor.outcomes, { compressed: 1, row_gone: 0, abandoned: 0, failed: 0 });
        t.match(
          await getRecording(sql, ofA, 'both'),
          { path: `${ofA}.wav.gz`, format: 'wav.gz' },
          "A's row moved to the gzip",
        );
        t.ok(
          gunzipSync(readFileSync(join(dir, `${ofA}.wav.gz`))).equals(wavA),
          "A's partial gzip replaced by one of its WAV",
        );
        t.notOk(existsSync(join(dir, `${ofA}.wav`)), "A's .wav removed");

        const after = { b: await snapshot(ofB), unnamed: await snapshot(unnamed) };
        t.ok(after.b.wav?.equals(before.b.wav!), "B's .wav byte for byte");
        t.ok(after.b.gz?.equals(PARTIAL_GZIP), "B's partial .gz byte for byte");
        t.same(after.b.row, before.b.row, "B's row unchanged");
        t.ok(
          after.unnamed.wav?.equals(before.unnamed.wav!) && after.unnamed.gz?.equals(PARTIAL_GZIP),
          "the unnamed node's files untouched",
        );
        t.same(after.unnamed.row, before.unnamed.row, "the unnamed node's row unchanged");
        t.same(
          (await pendingCompressions(sql, 'node-b')).map((p) => p.conversation_id),
          [ofB],
          'still pending for B',
        );
        t.same(
          (await pendingCompressions(sql, null)).map((p) => p.conversation_id),
          [unnamed],
          'still pending for the unnamed node',
        );
        t.same((await pendingCompressions(sql, 'node-a')).length, 0, 'nothing left for A');

        const others = lines.filter((l) => LEFT_TO_OTHERS.test(String(l.msg)));
        t.equal(others.length, 1, 'one log line for the other nodes');
        t.match(others[0], {
          level: 30,
          recordings: 2,
          nodes: [
            { nodeId: null, recordings: 1, heartbeatAt: null },
            { nodeId: 'node-b', recordings: 1, heartbeatAt: String },
          ],
        });
        await compressor.close();
      },
    );

    t.test(
      'a node whose heartbeat is long dead: its rows wait for it, even with two nodes starting at once',
      async (t) => {
        const { sql, dataDir, dir, ended, snapshot } = await setUp(t);
        await sql`insert into node_heartbeats (node_id, started_at, heartbeat_at)
        values ('node-dead', now() - interval '8 days', now() - interval '7 days')`;
        const ofDead = await ended('wav.gz', { nodeId: 'node-dead' });
        writeFileSync(join(dir, `${ofDead}.wav.gz`), PARTIAL_GZIP);
        const before = await snapshot(ofDead);

        const a = capturingLogger();
        const c = capturingLogger();
        const started = await Promise.all([
          resumeCompressions({ sql, dataDir, log: a.log, nodeId: 'node-a' }),
          resumeCompressions({ sql, dataDir, log: c.log, nodeId: 'node-c' }),
        ]);
        for (const { compressor } of started) await compressor.idle();
        t.same(
          started.map((s) => s.queued),
          [0, 0],
          'neither takes it over',
        );
        t.same(
          started.map((s) => s.compressor.outcomes.compressed),
          [0, 0],
        );
        const after = await snapshot(ofDead);
        t.ok(after.wav?.equals(before.wav!), 'its .wav byte for byte');
        t.ok(after.gz?.equals(PARTIAL_GZIP), 'its .gz byte for byte');
        t.same(after.row, before.row, 'its row unchanged');
        const [{ node_id }] = await sql<{ node_id: string }[]>`select node_id from conversations where id = ${ofDead}`;
        t.equal(node_id, 'node-dead', 'the conversation still names the node that ran it');
        for (const { lines } of [a, c]) {
          t.match(
            lines.find((l) => LEFT_TO_OTHERS.test(String(l.msg))),
            {
              msg: /long dead/,
              recordings: 1,
              nodes: [{ nodeId: 'node-dead', recordings: 1, heartbeatAt: String }],
            },
          );
        }
        for (const { compressor } of started) await compressor.close();

        // The node starts again under its PARLEY_NODE_ID: it resumes its row.
        const back = await resumeCompressions({ sql, dataDir, log: capturingLogger().log, nodeId: 'node-dead' });
        t.equal(back.queued, 1);
        await back.compressor.idle();
        t.match(
          await getRecording(sql, ofDead, 'both'),
          { path: `${ofDead}.wav.gz`, format: 'wav.gz' },
          'compressed by its own node',
        );
        t.ok(gunzipSync(readFileSync(join(dir, `${ofDead}.wav.gz`))).equals(before.wav!));
        await back.compressor.close();
      },
    );
  });
}

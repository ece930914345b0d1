// Background compression of finished recordings (src/media/recording-compressor.ts), from a conversation's record
// (src/conversation/record.ts) through the worker protocol's `recording_compressed` to real PostgreSQL: the record
// is finished on the `.wav` before any gzip completes, then moved to the `.wav.gz`; a shutdown leaves the `.wav`
// playable and no partial `.gz`; recordings deleted meanwhile stay deleted; `wav` recordings are never compressed.
// Compressions are held at a gate (a stage after the first chunk), never timed.
import t from 'tap';
import { existsSync, readdirSync, readFileSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { startTestServer } from '../helpers/server.js';
import { createLogger } from '../../src/log.js';
import { ConversationRecord } from '../../src/conversation/record.js';
import { compressRecording, RecordingCompressor, type CompressFn } from '../../src/media/recording-compressor.js';
import type { RecordingFormat } from '../../src/media/recording.js';
import { compressionStore, conversationStore, MainClient } from '../../src/workers/main-client.js';
import { createRequestHandler } from '../../src/workers/main-handlers.js';
import type { WorkerRequest } from '../../src/workers/worker-protocol.js';
import { leasePolicy } from '../../src/store/leases.js';
import {
  deleteConversationContent,
  getConversation,
  getRecording,
  pendingCompressions,
} from '../../src/store/conversations.js';

t.setTimeout(120_000);

const RATE = 8000;
/** Seconds of a call whose compression is held: its WAV (32 KB/s) is several of the 256 KB chunks read at once. */
const HELD_S = 20;
const FRAME = (RATE * 20) / 1000;
const log = createLogger('silent');

/** Compressions that pass their first chunk and then wait for release() (the `.gz` is open and incomplete). */
function gated() {
  let released = false;
  const held: (() => void)[] = [];
  const startedWaiters: (() => void)[] = [];
  let started = 0;
  const calls: string[] = [];
  const compress: CompressFn = (src, dst, opts) => {
    calls.push(src);
    let first = true;
    return compressRecording(src, dst, {
      ...opts,
      through: () =>
        new Transform({
          transform(chunk, _enc, done) {
            if (first) {
              first = false;
              started++;
              for (const w of startedWaiters.splice(0)) w();
              return done(null, chunk);
            }
            if (released) return done(null, chunk);
            held.push(() => done(null, chunk));
          },
        }),
    });
  };
  return {
    compress,
    calls,
    /** Resolves once `n` compressions have passed their first chunk. */
    started: (n: number): Promise<void> =>
      started >= n
        ? Promise.resolve()
        : new Promise((r) => startedWaiters.push(() => (started >= n ? r() : undefined))),
    release(): void {
      released = true;
      for (const h of held.splice(0)) h();
    },
  };
}

t.test('recording compression against PostgreSQL', async (t) => {
  const server = await startTestServer({ db: 'postgres' });
  t.teardown(() => server.close());
  const { sql, orgId, projectId, settings } = server;
  // The worker's side of the protocol, answered by main's real handlers.
  const handle = createRequestHandler({ sql, policy: leasePolicy(settings), log, now: () => new Date() });
  const main: MainClient = new MainClient({
    postMessage: (m) => void handle(m as WorkerRequest).then((r) => main.handleReply(r)),
  });
  const store = conversationStore(main);

  /** A conversation of `seconds` with audio on both sides, ended by the user; returns its id and recordings dir. */
  async function converse(dataDir: string, compressor: RecordingCompressor, seconds: number, format?: RecordingFormat) {
    const { conversationId: id } = await store.createConversation({ orgId, projectId, origin: 'web' });
    const record = new ConversationRecord(store, log, { compressor, format });
    record.bind(id);
    await record.openRecording(dataDir, RATE);
    let x = 12345;
    const frame = new Int16Array(FRAME);
    for (let i = 0; i < (seconds * 1000) / 20; i++) {
      // Noise-like samples, so the WAV does not gzip to nothing.
      for (let k = 0; k < FRAME; k++) frame[k] = (x = (x * 1103515245 + 12345) >>> 0) >> 20;
      record.recordUser(frame);
      if (i % 3 === 0) record.recordAssistant(frame);
      record.tick();
    }
    const started = Date.now();
    await record.finish('user', started - seconds * 1000, started);
    return { id, dir: join(dataDir, 'recordings') };
  }

  t.test('the record is finished on the .wav before compression completes, then moves to the .wav.gz', async (t) => {
    const gate = gated();
    const compressor = new RecordingCompressor({ store: compressionStore(main), log, compress: gate.compress });
    const { id, dir } = await converse(t.testdir({}), compressor, HELD_S);
    await gate.started(1);
    const conv = await getConversation(sql, id);
    t.equal(conv?.record.ended_by, 'user', 'the record is finished while the gzip is held');
    const before = await getRecording(sql, id, 'both');
    t.match(before, { path: `${id}.wav`, format: 'wav', sample_rate: RATE, channels: 2 }, 'pointing at the .wav');
    const wav = readFileSync(join(dir, `${id}.wav`));
    t.equal(before!.bytes, wav.length, 'its size as stored');
    t.equal(wav.toString('ascii', 0, 4), 'RIFF', 'a complete WAV');
    t.equal(wav.readUInt32LE(40), wav.length - 44, 'its data size patched');
    t.equal(compressor.pending, 1, 'the compression still running');

    gate.release();
    await compressor.idle();
    const after = await getRecording(sql, id, 'both');
    t.match(
      after,
      { path: `${id}.wav.gz`, format: 'wav.gz', sample_rate: RATE, channels: 2 },
      'the row moved to the gzip',
    );
    t.notOk(
      (await pendingCompressions(sql)).some((p) => p.conversation_id === id),
      'no longer pending',
    );
    const gz = readFileSync(join(dir, `${id}.wav.gz`));
    t.equal(after!.bytes, gz.length, "with the gzip's size");
    t.ok(gunzipSync(gz).equals(wav), "the gzip decompresses to exactly the WAV's bytes");
    t.notOk(existsSync(join(dir, `${id}.wav`)), 'the .wav is gone');
    t.same(compressor.outcomes, { compressed: 1, row_gone: 0, abandoned: 0, failed: 0 });
  });

  t.test('shutdown with compressions pending: records finished on playable .wav files, no .gz left', async (t) => {
    const gate = gated();
    const compressor = new RecordingCompressor({ store: compressionStore(main), log, compress: gate.compress });
    const dataDir = t.testdir({});
    const a = await converse(dataDir, compressor, HELD_S);
    const b = await converse(dataDir, compressor, 2);
    await gate.started(1);
    t.equal(gate.calls.length, 1, 'one compression at a time: the second waits in the queue');
    t.ok(existsSync(join(a.dir, `${a.id}.wav.gz`)), 'the first gzip is half-written');
    await compressor.close();
    const c = await converse(dataDir, compressor, 1);
    t.equal(gate.calls.length, 1, 'nothing compressed after close');
    for (const { id, dir } of [a, b, c]) {
      t.equal((await getConversation(sql, id))?.record.ended_by, 'user', `${id} finished`);
      const row = await getRecording(sql, id, 'both');
      t.match(row, { path: `${id}.wav`, format: 'wav' }, `${id} points at its .wav`);
      const wav = readFileSync(join(dir, `${id}.wav`));
      t.equal(row!.bytes, wav.length);
      t.ok(wav.toString('ascii', 0, 4) === 'RIFF' && wav.readUInt32LE(40) === wav.length - 44, `${id} playable`);
    }
    t.same(
      readdirSync(a.dir).filter((f) => f.endsWith('.gz')),
      [],
      'no .gz left',
    );
    const pending = (await pendingCompressions(sql)).map((p) => p.conversation_id);
    t.ok(
      [a, b, c].every(({ id }) => pending.includes(id)),
      'all three left pending for the next start',
    );
    t.same(compressor.outcomes, { compressed: 0, row_gone: 0, abandoned: 3, failed: 0 });
  });

  t.test('recordings deleted meanwhile: no row comes back, no file is left', async (t) => {
    const gate = gated();
    const compressor = new RecordingCompressor({ store: compressionStore(main), log, compress: gate.compress });
    const dataDir = t.testdir({});
    const during = await converse(dataDir, compressor, HELD_S); // deleted while its gzip is being written
    const queued = await converse(dataDir, compressor, 2); // deleted before its compression starts
    await gate.started(1);
    for (const { id, dir } of [during, queued]) {
      const out = await deleteConversationContent(sql, id);
      t.equal(out.kind, 'deleted');
      // What the API's DELETE does next (src/api/recordings.ts removeRecordingFiles).
      for (const r of out.kind === 'deleted' ? out.recordings : []) unlinkSync(join(dir, r.path));
    }
    gate.release();
    await compressor.idle();
    for (const { id } of [during, queued])
      t.equal(await getRecording(sql, id, 'both'), null, `${id}: no recording row`);
    t.same(readdirSync(during.dir), [], 'no file left');
    t.same(compressor.outcomes, { compressed: 0, row_gone: 2, abandoned: 0, failed: 0 });
  });

  t.test('a conversation recorded as wav is never compressed', async (t) => {
    const gate = gated();
    const compressor = new RecordingCompressor({ store: compressionStore(main), log, compress: gate.compress });
    const { id, dir } = await converse(t.testdir({}), compressor, 2, 'wav');
    t.equal(compressor.pending, 0, 'nothing queued');
    await compressor.idle();
    t.same(gate.calls, [], 'no compression ran');
    t.match(await getRecording(sql, id, 'both'), { path: `${id}.wav`, format: 'wav' });
    t.notOk(
      (await pendingCompressions(sql)).some((p) => p.conversation_id === id),
      'not pending for a later start either',
    );
    t.same(readdirSync(dir), [`${id}.wav`]);
    t.ok(statSync(join(dir, `${id}.wav`)).size > 44);
  });
});

// resumeCompressions (src/realtime/recording-resume.ts), run by main at start: a recording left as `.wav` with its
// gzip pending (compress_to set) is compressed and its row moved, a partial `.gz` a killed compression left beside
// it is replaced; a recording wanted as `wav`, and one whose `.wav` is not on this node's disk, are left alone.
import t from 'tap';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { startTestServer } from '../helpers/server.js';
import { createLogger } from '../../src/log.js';
import { StereoRecorder } from '../../src/media/recording.js';
import { resumeCompressions } from '../../src/realtime/recording-resume.js';
import { createConversation, finishConversation, getRecording, pendingCompressions } from '../../src/store/conversations.js';

t.setTimeout(120_000);

const RATE = 8000;

t.test('resuming compressions at start', async (t) => {
  const server = await startTestServer({ db: 'postgres' });
  t.teardown(() => server.close());
  const { sql, orgId, projectId } = server;
  const dataDir = t.testdir({});
  const dir = join(dataDir, 'recordings');
  mkdirSync(dir);

  /** A finished conversation whose recording row points at `<id>.wav`; the WAV written unless `onDisk` is false. */
  async function ended(compressTo: 'wav.gz' | null, onDisk = true) {
    const id = await createConversation(sql, { orgId, projectId, origin: 'web' });
    let bytes = 44;
    if (onDisk) {
      const rec = await StereoRecorder.open(join(dir, `${id}.wav`), { sampleRate: RATE });
      for (let i = 0; i < 100; i++) {
        rec.writeUser(new Int16Array(160).map((_, k) => (k * 37 + i) % 2000));
        rec.tick();
      }
      bytes = (await rec.finish()).bytes;
    }
    await finishConversation(sql, id, { ended_by: 'user', ended_at: new Date(), duration_ms: 2000 }, [
      { side: 'both', path: `${id}.wav`, format: 'wav', sample_rate: RATE, channels: 2, bytes, compress_to: compressTo },
    ]);
    return id;
  }

  const pending = await ended('wav.gz');
  writeFileSync(join(dir, `${pending}.wav.gz`), Buffer.from([0x1f, 0x8b, 8, 0])); // a killed compression's start
  const wanted = await ended(null);
  const elsewhere = await ended('wav.gz', false);
  const wav = readFileSync(join(dir, `${pending}.wav`));
  t.same((await pendingCompressions(sql)).map((p) => p.conversation_id).sort(), [pending, elsewhere].sort(), 'pending: the rows with compress_to left as wav');

  const { compressor, queued } = await resumeCompressions({ sql, dataDir, log: createLogger('silent') });
  t.equal(queued, 1, 'only the one whose .wav is here');
  await compressor.idle();
  t.same(compressor.outcomes, { compressed: 1, row_gone: 0, abandoned: 0, failed: 0 });
  const moved = await getRecording(sql, pending, 'both');
  t.match(moved, { path: `${pending}.wav.gz`, format: 'wav.gz' }, 'the row moved to the gzip');
  t.ok(gunzipSync(readFileSync(join(dir, `${pending}.wav.gz`))).equals(wav), 'the partial gzip replaced by one of exactly the WAV');
  t.equal(moved!.bytes, readFileSync(join(dir, `${pending}.wav.gz`)).length);
  t.notOk(existsSync(join(dir, `${pending}.wav`)), 'its .wav removed');
  t.match(await getRecording(sql, wanted, 'both'), { path: `${wanted}.wav`, format: 'wav' }, 'a wav recording stays wav');
  t.ok(existsSync(join(dir, `${wanted}.wav`)));
  t.match(await getRecording(sql, elsewhere, 'both'), { path: `${elsewhere}.wav`, format: 'wav' }, 'another node\'s recording untouched');
  t.same((await pendingCompressions(sql)).map((p) => p.conversation_id), [elsewhere], 'nothing else pending');
  await compressor.close();
});

// StereoRecorder.abort: a recording thrown away mid-call (a conversation that becomes zero data retention) stops at
// once, with writes still in flight, and leaves no file; a recording no longer recording cannot be aborted.
import t from 'tap';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecordingError, StereoRecorder } from '../../src/media/recording.js';

const RATE = 8000;
const FRAME = 160;
/** Ticks in one second: one block handed to the file. */
const TICKS_PER_BLOCK = 50;

t.test('abort with blocks still being written: nothing more taken, the file closed and removed', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-abort-'));
  const path = join(dir, 'conv.wav');
  const rec = await StereoRecorder.open(path, { sampleRate: RATE, format: 'wav' });
  const speech = new Int16Array(FRAME).fill(1234);
  // Three seconds: three blocks queued for the file at once, the first one in the kernel's hands.
  for (let i = 0; i < 3 * TICKS_PER_BLOCK; i++) {
    rec.writeUser(speech);
    rec.tick();
  }
  t.ok(existsSync(path), 'the file exists while recording');
  await rec.abort();
  t.notOk(existsSync(path), 'the file is removed');
  t.same(readdirSync(dir), [], 'nothing else is left in the directory');
  // Whatever still arrives (a conversation's audio in the same tick) is ignored, and recreates nothing.
  rec.writeUser(speech);
  rec.writeAssistant(speech);
  for (let i = 0; i < TICKS_PER_BLOCK; i++) rec.tick();
  await new Promise((r) => setTimeout(r, 20));
  t.same(readdirSync(dir), [], 'no file after more audio and ticks');
  t.equal(
    rec.failed,
    undefined,
    'nothing was handed to the closed file (its descriptor may belong to another file by now)',
  );
  await t.rejects(rec.finish(), RecordingError, 'an aborted recording cannot be finished');
  await t.rejects(rec.abort(), RecordingError, 'nor aborted twice');
});

t.test('a wav.gz recording aborted before its first block: the .wav it was writing is removed', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-abort-'));
  const rec = await StereoRecorder.open(join(dir, 'conv.wav.gz'), { sampleRate: RATE, format: 'wav.gz' });
  t.same(readdirSync(dir), ['conv.wav'], 'written as .wav');
  await rec.abort();
  t.same(readdirSync(dir), [], 'removed');
});

t.test("a finished recording is not aborted: its file is its owner's", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-abort-'));
  const path = join(dir, 'conv.wav');
  const rec = await StereoRecorder.open(path, { sampleRate: RATE, format: 'wav' });
  rec.tick();
  await rec.finish();
  await t.rejects(rec.abort(), RecordingError);
  t.ok(existsSync(path), 'the finished file stays');
});

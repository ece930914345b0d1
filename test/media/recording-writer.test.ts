// Batched block writes (native writeBlocks, src/media/recording-writer.ts): many files' blocks in one thread-pool
// job, each file's in order; a file whose write fails keeps its blocks before the failure and gets nothing after
// it, and the other files of the batch are written as if it were not there.
import t from 'tap';
import { closeSync, mkdtempSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BLOCK_SKIPPED, writeBlocks } from '../../src/media/native.js';
import { RecordingWriter, type BlockSource, type BlockWrite } from '../../src/media/recording-writer.js';

const EBADF = 9;

function block(bytes: number, fill: number): Uint8Array {
  return new Uint8Array(bytes).fill(fill);
}

function run(fds: number[], blocks: Uint8Array[], offsets: number[], groups: number[]): Promise<Float64Array> {
  return new Promise((resolve) => writeBlocks(Int32Array.from(fds), blocks, Float64Array.from(offsets), Int32Array.from(groups), resolve));
}

t.test('writeBlocks: every block at its offset, a failed group skips the rest of its blocks only', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-blocks-'));
  const a = openSync(join(dir, 'a'), 'w');
  const c = openSync(join(dir, 'c'), 'w');
  const closed = openSync(join(dir, 'b'), 'w');
  closeSync(closed);
  const results = await run(
    [a, a, closed, closed, c],
    [block(100, 1), block(50, 2), block(10, 3), block(10, 4), block(7, 5)],
    [10, 110, 0, 10, 3],
    [0, 0, 1, 1, 2],
  );
  closeSync(a);
  closeSync(c);
  t.same([...results], [100, 0, 50, 0, 0, EBADF, 0, BLOCK_SKIPPED, 7, 0], 'bytes and error per write');
  const fileA = readFileSync(join(dir, 'a'));
  t.equal(fileA.length, 160);
  t.same([fileA[9], fileA[10], fileA[109], fileA[110], fileA[159]], [0, 1, 1, 2, 2], 'each block at its offset');
  t.same([...readFileSync(join(dir, 'c'))], [0, 0, 0, 5, 5, 5, 5, 5, 5, 5], 'the group after the failed one is written');
});

t.test('writeBlocks refuses arguments that do not match, before writing anything', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-blocks-'));
  const fd = openSync(join(dir, 'a'), 'w');
  t.throws(() => writeBlocks(Int32Array.of(fd, fd), [block(4, 1)], Float64Array.of(0, 4), Int32Array.of(0, 0), () => t.fail('called back')), RangeError);
  t.throws(() => writeBlocks(Int32Array.of(fd), [new Int16Array(2) as unknown as Uint8Array], Float64Array.of(0), Int32Array.of(0), () => t.fail('called back')), TypeError);
  t.throws(() => writeBlocks(Int32Array.of(fd), [block(4, 1)], Float64Array.of(-1), Int32Array.of(0), () => t.fail('called back')), RangeError);
  await new Promise((r) => setTimeout(r, 20));
  closeSync(fd);
  t.equal(readFileSync(join(dir, 'a')).length, 0, 'nothing written');
});

/** A file that records what the writer tells it. */
class FileSource implements BlockSource {
  readonly fd: number;
  readonly batches: BlockWrite[][] = [];
  constructor(readonly path: string) {
    this.fd = openSync(path, 'w');
  }
  written(writes: BlockWrite[]): void {
    this.batches.push(writes);
  }
}

t.test('RecordingWriter: the blocks of one turn go in one batch, in order per file; taken-back blocks are not written', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-writer-'));
  const writer = new RecordingWriter();
  const sources = [0, 1, 2].map((i) => new FileSource(join(dir, `f${i}`)));
  // Interleaved across files, as a tick closes one block per recording.
  for (let k = 0; k < 3; k++) for (const [i, s] of sources.entries()) writer.write(s, block(8, 10 * i + k), 8 * k);
  t.same(writer.unqueue(sources[2]).map((w) => w.offset), [0, 8, 16], 'a recording takes its queued blocks back');
  await new Promise((r) => setTimeout(r, 50));
  for (const s of sources.slice(0, 2)) {
    t.equal(s.batches.length, 1, 'one batch');
    t.same(s.batches[0].map((w) => [w.offset, w.written, w.error]), [[0, 8, 0], [8, 8, 0], [16, 8, 0]]);
  }
  t.equal(sources[2].batches.length, 0, 'the taken-back recording is told nothing');
  // A block queued while a batch is under way goes in the next one.
  writer.write(sources[0], block(8, 7), 24);
  writer.write(sources[1], block(8, 8), 24);
  await new Promise((r) => setTimeout(r, 0));
  writer.write(sources[0], block(8, 9), 32);
  await new Promise((r) => setTimeout(r, 50));
  t.same(sources[0].batches.map((b) => b.map((w) => w.offset)), [[0, 8, 16], [24], [32]]);
  for (const s of sources) closeSync(s.fd);
  t.same([...readFileSync(sources[0].path)], [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 7, 7, 7, 7, 7, 7, 7, 7, 9, 9, 9, 9, 9, 9, 9, 9]);
  t.same([...readFileSync(sources[1].path)].filter((_, i) => i % 8 === 0), [10, 11, 12, 8]);
  t.equal(readFileSync(sources[2].path).length, 0, 'nothing written for the taken-back recording');
});

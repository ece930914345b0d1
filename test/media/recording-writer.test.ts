// Batched block writes (native writeBlocks, src/media/recording-writer.ts): many files' blocks in one thread-pool
// job, each file's in order, each block planar stereo interleaved into 16-bit little-endian pairs as it is written;
// a file whose write fails keeps its blocks before the failure and gets nothing after it, and the other files of
// the batch are written as if it were not there.
import t from 'tap';
import { closeSync, mkdtempSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BLOCK_SKIPPED, writeBlocks } from '../../src/media/native/block-writer.js';
import { RecordingWriter, type BlockSource, type BlockWrite } from '../../src/media/recording-writer.js';

const EBADF = 9;

/** A planar block of `pairs` pairs: every left sample `left`, every right one `right`. */
function block(pairs: number, left: number, right: number = left): Int16Array {
  const b = new Int16Array(2 * pairs);
  b.fill(left, 0, pairs);
  b.fill(right, pairs);
  return b;
}

function run(
  fds: number[],
  blocks: Int16Array[],
  pairs: number[],
  offsets: number[],
  groups: number[],
): Promise<Float64Array> {
  return new Promise((resolve) =>
    writeBlocks(
      Int32Array.from(fds),
      blocks,
      Int32Array.from(pairs),
      Float64Array.from(offsets),
      Int32Array.from(groups),
      resolve,
    ),
  );
}

/** The file's 16-bit little-endian samples. */
function samples(path: string): number[] {
  const bytes = readFileSync(path);
  return Array.from({ length: bytes.length >> 1 }, (_, i) => bytes.readInt16LE(2 * i));
}

t.test('writeBlocks: every block at its offset, a failed group skips the rest of its blocks only', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-blocks-'));
  const a = openSync(join(dir, 'a'), 'w');
  const c = openSync(join(dir, 'c'), 'w');
  const closed = openSync(join(dir, 'b'), 'w');
  closeSync(closed);
  const results = await run(
    [a, a, closed, closed, c],
    [block(25, 1), block(12, 2), block(2, 3), block(2, 4), block(2, 5, 6)],
    [25, 12, 2, 2, 2],
    [10, 110, 0, 10, 3],
    [0, 0, 1, 1, 2],
  );
  closeSync(a);
  closeSync(c);
  t.same([...results], [100, 0, 48, 0, 0, EBADF, 0, BLOCK_SKIPPED, 8, 0], 'bytes and error per write');
  const fileA = readFileSync(join(dir, 'a'));
  t.equal(fileA.length, 158);
  t.same(
    [fileA[9], fileA[10], fileA[11], fileA[108], fileA[109], fileA[110], fileA[156], fileA[157]],
    [0, 1, 0, 1, 0, 2, 2, 0],
    'each block at its offset',
  );
  t.same(
    [...readFileSync(join(dir, 'c'))],
    [0, 0, 0, 5, 0, 6, 0, 5, 0, 6, 0],
    'the group after the failed one is written, left and right interleaved',
  );
});

t.test('writeBlocks interleaves the planar halves into little-endian pairs, only the pairs asked for', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-blocks-'));
  // Capacities and counts on both sides of the eight-pair steps: 19 of 20 (two steps and three pairs), 3 of 3,
  // 16 of 40 (whole steps; the rest of each half, and the right half's place, never written).
  const shapes = [
    [20, 19],
    [3, 3],
    [40, 16],
  ];
  const fds: number[] = [];
  const blocks: Int16Array[] = [];
  const expected: number[][] = [];
  for (const [i, [capacity, pairs]] of shapes.entries()) {
    const b = new Int16Array(2 * capacity);
    for (let j = 0; j < capacity; j++) {
      b[j] = -32768 + 4099 * j + i; // negative, positive and the extremes' neighbours
      b[capacity + j] = 32767 - 3001 * j - i;
    }
    blocks.push(b);
    fds.push(openSync(join(dir, `f${i}`), 'w'));
    expected.push(Array.from({ length: 2 * pairs }, (_, k) => (k % 2 === 0 ? b[k >> 1] : b[capacity + (k >> 1)])));
  }
  const results = await run(
    fds,
    blocks,
    shapes.map(([, pairs]) => pairs),
    [0, 0, 0],
    [0, 1, 2],
  );
  t.same([...results], [76, 0, 12, 0, 64, 0]);
  for (const [i, fd] of fds.entries()) {
    closeSync(fd);
    t.same(samples(join(dir, `f${i}`)), expected[i], `block ${i}: left, right, left, right...`);
  }
});

t.test('writeBlocks refuses arguments that do not match, before writing anything', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-blocks-'));
  const fd = openSync(join(dir, 'a'), 'w');
  const never = () => t.fail('called back');
  t.throws(
    () =>
      writeBlocks(
        Int32Array.of(fd, fd),
        [block(1, 1)],
        Int32Array.of(1, 1),
        Float64Array.of(0, 4),
        Int32Array.of(0, 0),
        never,
      ),
    RangeError,
    'one block for two writes',
  );
  t.throws(
    () =>
      writeBlocks(
        Int32Array.of(fd),
        [new Uint8Array(4) as unknown as Int16Array],
        Int32Array.of(1),
        Float64Array.of(0),
        Int32Array.of(0),
        never,
      ),
    TypeError,
    'bytes, not samples',
  );
  t.throws(
    () => writeBlocks(Int32Array.of(fd), [block(1, 1)], Int32Array.of(1), Float64Array.of(-1), Int32Array.of(0), never),
    RangeError,
    'a negative offset',
  );
  t.throws(
    () => writeBlocks(Int32Array.of(fd), [block(2, 1)], Int32Array.of(3), Float64Array.of(0), Int32Array.of(0), never),
    RangeError,
    'more pairs than the block holds',
  );
  t.throws(
    () => writeBlocks(Int32Array.of(fd), [block(2, 1)], Int32Array.of(-1), Float64Array.of(0), Int32Array.of(0), never),
    RangeError,
    'a negative count',
  );
  t.throws(
    () =>
      writeBlocks(
        Int32Array.of(fd),
        [new Int16Array(3)],
        Int32Array.of(1),
        Float64Array.of(0),
        Int32Array.of(0),
        never,
      ),
    RangeError,
    'halves of unequal length',
  );
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

t.test(
  'RecordingWriter: the blocks of one turn go in one batch, in order per file; taken-back blocks are not written',
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-writer-'));
    const writer = new RecordingWriter();
    const sources = [0, 1, 2].map((i) => new FileSource(join(dir, `f${i}`)));
    // Interleaved across files, as a tick closes one block per recording.
    for (let k = 0; k < 3; k++) for (const [i, s] of sources.entries()) writer.write(s, block(2, 10 * i + k), 2, 8 * k);
    t.same(
      writer.unqueue(sources[2]).map((w) => w.offset),
      [0, 8, 16],
      'a recording takes its queued blocks back',
    );
    await new Promise((r) => setTimeout(r, 50));
    for (const s of sources.slice(0, 2)) {
      t.equal(s.batches.length, 1, 'one batch');
      t.same(
        s.batches[0].map((w) => [w.offset, w.written, w.error]),
        [
          [0, 8, 0],
          [8, 8, 0],
          [16, 8, 0],
        ],
      );
    }
    t.equal(sources[2].batches.length, 0, 'the taken-back recording is told nothing');
    // A block queued while a batch is under way goes in the next one.
    writer.write(sources[0], block(2, 7), 2, 24);
    writer.write(sources[1], block(2, 8), 2, 24);
    await new Promise((r) => setTimeout(r, 0));
    writer.write(sources[0], block(2, 9), 2, 32);
    await new Promise((r) => setTimeout(r, 50));
    t.same(
      sources[0].batches.map((b) => b.map((w) => w.offset)),
      [[0, 8, 16], [24], [32]],
    );
    for (const s of sources) closeSync(s.fd);
    t.same(samples(sources[0].path), [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 7, 7, 7, 7, 9, 9, 9, 9]);
    t.same(
      [...readFileSync(sources[1].path)].filter((_, i) => i % 8 === 0),
      [10, 11, 12, 8],
    );
    t.equal(readFileSync(sources[2].path).length, 0, 'nothing written for the taken-back recording');
  },
);

import t from 'tap';
import { SampleFifo } from '../../src/media/pipeline.js';
import { LossConcealer } from '../../src/media/plc.js';

/** A seeded linear congruential generator: rand(n) is an integer in [0, n), the same run on every machine. */
function lcg(seed: number): (n: number) => number {
  return (n) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
}

t.test('SampleFifo: wraps around, reads exact frames, refuses overflow, discards oldest', async (t) => {
  const f = new SampleFifo(10);
  f.write(Int16Array.from([1, 2, 3, 4, 5, 6, 7]));
  const out = new Int16Array(10);
  t.equal(f.read(out, 5), 5);
  t.same(Array.from(out.subarray(0, 5)), [1, 2, 3, 4, 5]);
  f.write(Int16Array.from([8, 9, 10, 11, 12, 13, 14]));
  t.equal(f.length, 9);
  t.throws(() => f.write(Int16Array.from([1, 2])), RangeError);
  t.equal(f.discard(2), 2);
  t.equal(f.read(out, 10), 7);
  t.same(Array.from(out.subarray(0, 7)), [8, 9, 10, 11, 12, 13, 14]);
  t.equal(f.read(out, 1), 0);
});

t.test(
  'SampleFifo: any mix of write and read sizes (wrapping at every point, reads at an offset) keeps order',
  async (t) => {
    const f = new SampleFifo(37);
    const expected: number[] = [];
    let next = 1;
    const rand = lcg(7);
    const dst = new Int16Array(64);
    let mismatches = 0;
    for (let round = 0; round < 2000; round++) {
      const w = Math.min(rand(30), f.free);
      const src = new Int16Array(w + 3).fill(-1);
      for (let i = 0; i < w; i++) {
        src[i] = next;
        expected.push(next);
        next = next === 30000 ? 1 : next + 1;
      }
      f.write(src, w);
      const offset = rand(5);
      const k = f.read(dst, rand(30), offset);
      for (let i = 0; i < k; i++) if (dst[offset + i] !== expected.shift()) mismatches++;
      if (f.length !== expected.length) mismatches++;
    }
    t.equal(mismatches, 0);
  },
);

t.test(
  'SampleFifo in an arena: moves to and from the arena, whole-array writes and partial ones keep order',
  async (t) => {
    // arena: [dst 64 | src 64 | ring 41 | guard 8]; the guard must never be written.
    const arena = new Int16Array(64 + 64 + 41 + 8);
    const guard = 64 + 64 + 41;
    arena.fill(-7, guard);
    const f = new SampleFifo(41, { array: arena, offset: 128 });
    const expected: number[] = [];
    let next = 1;
    const rand = lcg(11);
    let mismatches = 0;
    for (let round = 0; round < 3000; round++) {
      const w = Math.min(rand(30), f.free);
      const mode = rand(3);
      const values: number[] = [];
      for (let i = 0; i < w; i++) {
        values.push(next);
        expected.push(next);
        next = next === 30000 ? 1 : next + 1;
      }
      if (mode === 0) {
        f.write(Int16Array.from(values)); // a whole array
      } else if (mode === 1) {
        const src = new Int16Array(w + 5).fill(-1);
        src.set(values, 2);
        f.write(src, w, 2); // part of an array
      } else {
        arena.set(values, 64 + 3);
        f.write(arena, w, 64 + 3); // from the arena itself
      }
      const offset = rand(5);
      const k = f.read(arena, rand(30), offset); // into the arena itself
      for (let i = 0; i < k; i++) if (arena[offset + i] !== expected.shift()) mismatches++;
      if (f.length !== expected.length) mismatches++;
    }
    t.equal(mismatches, 0);
    t.ok(
      arena.subarray(guard).every((v) => v === -7),
      'nothing written past the ring',
    );
    t.throws(() => new SampleFifo(50, { array: arena, offset: 128 }), RangeError);
  },
);

t.test(
  'SampleFifo in place: headIndex and contiguous show the oldest samples in the arena up to the wrap',
  async (t) => {
    const arena = new Int16Array(20);
    const f = new SampleFifo(8, { array: arena, offset: 5 });
    t.equal(f.contiguous, 0, 'empty');
    f.write(Int16Array.from([1, 2, 3, 4, 5, 6]));
    t.equal(f.headIndex, 5);
    t.equal(f.contiguous, 6);
    t.same(Array.from(arena.subarray(f.headIndex, f.headIndex + 6)), [1, 2, 3, 4, 5, 6]);
    f.discard(5);
    f.write(Int16Array.from([7, 8, 9, 10]));
    t.equal(f.headIndex, 10, 'head moved by the discard');
    t.equal(f.contiguous, 3, 'up to the end of the ring, not past it');
    t.same(Array.from(arena.subarray(f.headIndex, f.headIndex + 3)), [6, 7, 8]);
    f.discard(3);
    t.equal(f.headIndex, 5, 'wrapped to the ring start');
    t.equal(f.contiguous, 2);
    t.same(Array.from(arena.subarray(5, 7)), [9, 10]);
  },
);

t.test('LossConcealer: faded repeat of the last frame, silence after 60 ms, reset on good audio', async (t) => {
  const plc = new LossConcealer(160);
  const good = new Int16Array(160).fill(9000);
  const out = new Int16Array(160);
  plc.process(good, out);
  const lost = [0, 1, 2, 3].map(() => {
    plc.conceal(out);
    return [out[0], out[159]];
  });
  t.equal(lost[0][0], 9000, 'starts at the last level');
  t.ok(lost[0][1] < 9000 && lost[0][1] > lost[1][0] - 100, 'fades within the frame, continuous into the next');
  t.ok(lost[2][1] < 100, 'near zero by the end of the third');
  t.same(lost[3], [0, 0], 'silence afterwards');
  plc.process(good, out);
  plc.conceal(out);
  t.equal(out[0], 9000, 'a good frame restarts the fade');
});

// The native stereo interleave (native/src/pcm_interleave.h, bind_pcm.cc): every pair in place for every length
// across the 8-sample vector body and its scalar tail, offsets into all three arrays, the full int16 range, and
// the ranges and overlaps it refuses without writing anything.
import t from 'tap';
import { interleaveStereoInto } from '../../src/media/native.js';

/** Distinct values over the whole int16 range, including both extremes. */
function ramp(length: number, seed: number): Int16Array {
  const a = Int16Array.from({ length }, (_, i) => ((i * 2654435761 + seed) >>> 16) - 32768);
  a[0] = -32768;
  a[length - 1] = 32767;
  return a;
}

t.test('out[2(at+i)] = left[lo+i], out[2(at+i)+1] = right[ro+i] for every n from 0 to 50, nothing else written', async (t) => {
  const left = ramp(80, 1);
  const right = ramp(90, 7);
  let wrong = 0;
  for (let n = 0; n <= 50; n++) {
    for (const [lo, ro, at] of [
      [0, 0, 0],
      [3, 17, 5],
      [80 - n, 90 - n, 60 - n],
    ]) {
      const out = new Int16Array(120).fill(0x5a5a);
      interleaveStereoInto(left, lo, right, ro, n, out, at);
      for (let k = 0; k < out.length; k++) {
        const i = (k >> 1) - at;
        const want = i < 0 || i >= n ? 0x5a5a : k % 2 === 0 ? left[lo + i] : right[ro + i];
        if (out[k] !== want) wrong++;
      }
    }
  }
  t.equal(wrong, 0);
});

t.test('both channels from one array (the recorder passes its arena twice)', async (t) => {
  const arena = ramp(400, 3);
  const out = new Int16Array(2 * 160);
  interleaveStereoInto(arena, 0, arena, 200, 160, out, 0);
  t.same([out[0], out[1], out[318], out[319]], [arena[0], arena[200], arena[159], arena[359]]);
});

t.test('a range outside an array is a RangeError and writes nothing', async (t) => {
  const left = ramp(160, 1);
  const right = ramp(160, 2);
  const out = new Int16Array(320).fill(9);
  const untouched = (): boolean => out.every((x) => x === 9);
  t.throws(() => interleaveStereoInto(left, 1, right, 0, 160, out, 0), RangeError, 'left too short');
  t.throws(() => interleaveStereoInto(left, 0, right, 1, 160, out, 0), RangeError, 'right too short');
  t.throws(() => interleaveStereoInto(left, 0, right, 0, 160, out, 1), RangeError, 'out too short');
  t.throws(() => interleaveStereoInto(left, 0, right, 0, 161, out, 0), RangeError, 'n too long');
  t.throws(() => interleaveStereoInto(left, -1, right, 0, 8, out, 0), RangeError, 'negative offset');
  t.throws(() => interleaveStereoInto(left, 0.5, right, 0, 8, out, 0), RangeError, 'fractional offset');
  t.throws(() => interleaveStereoInto(left, 0, right, 0, NaN, out, 0), RangeError, 'NaN length');
  t.throws(() => interleaveStereoInto(left, 0, right, 0, 8, out, 2 ** 53), RangeError, 'huge outPair');
  t.ok(untouched(), 'out unchanged');
  interleaveStereoInto(left, 160, right, 160, 0, out, 160);
  t.ok(untouched(), 'n = 0 at the very ends is accepted and writes nothing');
});

t.test('out overlapping an input is a RangeError; adjacent is fine', async (t) => {
  const shared = ramp(64, 5);
  const before = Int16Array.from(shared);
  t.throws(() => interleaveStereoInto(shared, 0, shared, 40, 8, shared, 2), RangeError, 'out over left only');
  t.throws(() => interleaveStereoInto(shared, 40, shared, 0, 8, shared, 3), RangeError, 'out over right only');
  t.same(shared, before, 'nothing written');
  interleaveStereoInto(shared, 0, shared, 8, 8, shared, 8);
  t.same([shared[16], shared[17], shared[30], shared[31]], [before[0], before[8], before[7], before[15]]);
});

t.test('wrong array types are TypeErrors', async (t) => {
  const pcm = new Int16Array(16);
  const bad = new Uint16Array(16) as unknown as Int16Array;
  t.throws(() => interleaveStereoInto(bad, 0, pcm, 0, 8, new Int16Array(16), 0), TypeError);
  t.throws(() => interleaveStereoInto(pcm, 0, bad, 0, 8, new Int16Array(16), 0), TypeError);
  t.throws(() => interleaveStereoInto(pcm, 0, pcm, 0, 8, new Uint32Array(8) as unknown as Int16Array, 0), TypeError);
});

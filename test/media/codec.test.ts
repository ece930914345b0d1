import t from 'tap';
import { createDecoder, createEncoder, PcmDecoder, PcmEncoder } from '../../src/media/codec.js';

/** Deterministic bytes covering every value of a sample's high byte (negative samples included). */
function payload(bytes: number): Uint8Array {
  const b = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i++) b[i] = (i * 167 + 13) & 0xff;
  return b;
}

/** The samples a little-endian 16-bit payload holds, read independently of the decoder (DataView). */
function expectedSamples(buf: Uint8Array, offset: number, n: number): number[] {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  return Array.from({ length: n }, (_, i) => view.getInt16(offset + 2 * i, true));
}

t.test('PCM decode: the memcpy path and the byte loop give the same little-endian samples', async (t) => {
  const buf = payload(1001);
  for (const littleEndianHost of [true, false]) {
    const d = new PcmDecoder('pcm_8000', 8000, littleEndianHost);
    for (const [offset, length] of [
      [0, 320],
      [1, 320],
      [7, 641],
      [0, 1000],
    ]) {
      const out = new Int16Array(600).fill(12345);
      const n = d.decodeInto(buf, length, out, offset);
      t.equal(n, length >> 1, `${littleEndianHost ? 'memcpy' : 'loop'}: ${n} samples from ${length} bytes`);
      t.same(
        Array.from(out.subarray(0, n)),
        expectedSamples(buf, offset, n),
        `${littleEndianHost ? 'memcpy' : 'loop'} at offset ${offset}`,
      );
      t.equal(out[n], 12345, 'nothing written past the payload');
    }
  }
});

t.test('PCM decode into a view of a larger array writes at the view, and into a second array afterwards', async (t) => {
  const d = new PcmDecoder('pcm_16000', 16000, true);
  const buf = payload(64);
  const whole = new Int16Array(100);
  const view = whole.subarray(10, 60);
  t.equal(d.decodeInto(buf, 64, view), 32);
  t.same(
    Array.from(whole.subarray(10, 42)),
    expectedSamples(buf, 0, 32),
    'samples land at the view, not at the buffer start',
  );
  t.equal(whole[9], 0, 'before the view untouched');
  const other = new Int16Array(32);
  d.decodeInto(buf, 64, other, 0);
  t.same(Array.from(other), expectedSamples(buf, 0, 32), 'a new output array is written, not the old one');
});

t.test('PCM decode: a payload larger than the output is refused; one past the buffer reads zeros there', async (t) => {
  const d = createDecoder('pcm_8000');
  t.throws(() => d.decodeInto(payload(400), 400, new Int16Array(160)), RangeError);
  const out = new Int16Array(160).fill(-1);
  const buf = payload(10);
  t.equal(d.decodeInto(buf, 20, out), 10);
  t.same(Array.from(out.subarray(0, 5)), expectedSamples(buf, 0, 5));
  t.same(Array.from(out.subarray(5, 10)), [0, 0, 0, 0, 0], 'missing bytes read as zeros, as before');
});

t.test('PCM encode: both paths write little-endian bytes, from a whole array or a view', async (t) => {
  const whole = new Int16Array(200);
  for (let i = 0; i < whole.length; i++) whole[i] = (i * 2311 - 30000) | 0;
  for (const littleEndianHost of [true, false]) {
    const e = new PcmEncoder('pcm_8000', 8000, littleEndianHost);
    for (const pcm of [whole, whole.subarray(37, 197), whole.subarray(0, 160)]) {
      const out = new Uint8Array(400);
      const bytes = e.encodeInto(pcm, out);
      t.equal(bytes, pcm.length * 2);
      t.same(
        expectedSamples(out, 0, pcm.length),
        Array.from(pcm),
        `${littleEndianHost ? 'memcpy' : 'loop'}: ${pcm.length} samples at ${pcm.byteOffset}`,
      );
    }
  }
  const odd = new Uint8Array(401).subarray(1);
  t.equal(new PcmEncoder('pcm_8000', 8000, true).encodeInto(whole, odd), 400);
  t.same(expectedSamples(odd, 0, 200), Array.from(whole), 'into bytes at an odd offset');
  t.throws(() => createEncoder('pcm_8000').encodeInto(whole, new Uint8Array(100)), RangeError);
});

t.test('PCM round trip through createEncoder and createDecoder', async (t) => {
  const pcm = Int16Array.from({ length: 320 }, (_, i) => Math.round(32767 * Math.sin(i / 5)));
  const bytes = new Uint8Array(640);
  createEncoder('pcm_16000').encodeInto(pcm, bytes);
  const back = new Int16Array(320);
  createDecoder('pcm_16000').decodeInto(bytes, 640, back);
  t.same(Array.from(back), Array.from(pcm));
});

// G.711 codecs, PCM conversions, gain, mixing and the batched encode of the native addon, checked against the
// ITU-T G.191 reference algorithms (transcribed here independently) over every input value.
import t from 'tap';
import {
  G711_ALAW,
  G711_MULAW,
  alawDecodeInto,
  alawEncodeInto,
  applyGain,
  encodeBatch,
  float32ToPcm16Into,
  mixInto,
  mulawDecodeInto,
  mulawEncodeInto,
  pcm16ToFloat32Into,
} from '../../src/media/native/g711.js';

// ITU-T G.191 STL g711.c, ulaw_compress / ulaw_expand / alaw_compress / alaw_expand.
function ulawCompress(x: number): number {
  let absno = x < 0 ? (~x >> 2) + 33 : (x >> 2) + 33;
  if (absno > 0x1fff) absno = 0x1fff;
  let i = absno >> 6;
  let segno = 1;
  while (i !== 0) {
    segno++;
    i >>= 1;
  }
  const high = 0x8 - segno;
  const low = 0xf - ((absno >> segno) & 0xf);
  let code = (high << 4) | low;
  if (x >= 0) code |= 0x80;
  return code;
}
function ulawExpand(code: number): number {
  const sign = code < 0x80 ? -1 : 1;
  let mantissa = ~code;
  const exponent = (mantissa >> 4) & 0x7;
  const segment = exponent + 1;
  mantissa &= 0xf;
  const step = 4 << segment;
  return sign * ((0x80 << exponent) + step * mantissa + step / 2 - 4 * 33);
}
function alawCompress(x: number): number {
  let ix = x < 0 ? ~x >> 4 : x >> 4;
  if (ix > 15) {
    let iexp = 1;
    while (ix > 16 + 15) {
      ix >>= 1;
      iexp++;
    }
    ix -= 16;
    ix += iexp << 4;
  }
  if (x >= 0) ix |= 0x80;
  return ix ^ 0x55;
}
function alawExpand(code: number): number {
  const ix = (code ^ 0x55) & 0x7f;
  const iexp = ix >> 4;
  let mant = ix & 0xf;
  if (iexp > 0) mant += 16;
  mant = (mant << 4) + 0x8;
  if (iexp > 1) mant <<= iexp - 1;
  return code > 127 ? mant : -mant;
}

const allPcm = new Int16Array(65536);
for (let i = 0; i < 65536; i++) allPcm[i] = i - 32768;
const allCodes = new Uint8Array(256);
for (let i = 0; i < 256; i++) allCodes[i] = i;

t.test('mu-law encodes all 65536 PCM values as the G.191 reference does', async (t) => {
  const out = new Uint8Array(65536);
  t.equal(mulawEncodeInto(allPcm, out), 65536);
  let mismatches = 0;
  for (let i = 0; i < 65536; i++) if (out[i] !== ulawCompress(allPcm[i])) mismatches++;
  t.equal(mismatches, 0);
});

t.test('mu-law decodes all 256 codes as the G.191 reference does, with the known end points', async (t) => {
  const out = new Int16Array(256);
  t.equal(mulawDecodeInto(allCodes, out), 256);
  t.same(Array.from(out), Array.from(allCodes, ulawExpand));
  t.equal(out[0xff], 0);
  t.equal(out[0x80], 32124);
  t.equal(out[0x00], -32124);
});

t.test('A-law encodes all 65536 PCM values as the G.191 reference does', async (t) => {
  const out = new Uint8Array(65536);
  t.equal(alawEncodeInto(allPcm, out), 65536);
  let mismatches = 0;
  for (let i = 0; i < 65536; i++) if (out[i] !== alawCompress(allPcm[i])) mismatches++;
  t.equal(mismatches, 0);
});

t.test('A-law decodes all 256 codes as the G.191 reference does, with the known end points', async (t) => {
  const out = new Int16Array(256);
  t.equal(alawDecodeInto(allCodes, out), 256);
  t.same(Array.from(out), Array.from(allCodes, alawExpand));
  t.equal(out[0xd5], 8);
  t.equal(out[0x55], -8);
  t.equal(out[0xaa], 32256);
  t.equal(out[0x2a], -32256);
});

t.test('decode then encode returns every code (round trip), except mu-law negative zero', async (t) => {
  const pcm = new Int16Array(256);
  const codes = new Uint8Array(256);
  mulawDecodeInto(allCodes, pcm);
  mulawEncodeInto(pcm, codes);
  const badMu = Array.from(allCodes).filter((c) => codes[c] !== c);
  // 0x7f decodes to 0, which encodes as positive zero 0xff.
  t.same(badMu, [0x7f]);
  alawDecodeInto(allCodes, pcm);
  alawEncodeInto(pcm, codes);
  t.same(Array.from(codes), Array.from(allCodes));
});

t.test('encode and decode check their buffer sizes at the boundary', async (t) => {
  t.throws(() => mulawEncodeInto(new Int16Array(160), new Uint8Array(159)), RangeError);
  t.throws(() => mulawDecodeInto(new Uint8Array(160), new Int16Array(10)), RangeError);
  t.throws(() => alawEncodeInto(new Float32Array(4) as unknown as Int16Array, new Uint8Array(4)), TypeError);
});

t.test('decode reads payload[offset, offset + length) in place, and checks the range', async (t) => {
  const packet = new Uint8Array(12 + 160);
  for (let i = 0; i < packet.length; i++) packet[i] = (i * 37) & 0xff;
  for (const [decode, name] of [
    [mulawDecodeInto, 'mu-law'],
    [alawDecodeInto, 'A-law'],
  ] as const) {
    const inPlace = new Int16Array(160);
    const viewed = new Int16Array(160);
    t.equal(decode(packet, inPlace, 12, 160), 160, `${name}: samples written`);
    decode(packet.subarray(12), viewed);
    t.same(inPlace, viewed, `${name}: same as decoding a view of the payload`);
    t.throws(() => decode(packet, inPlace, 13, 160), RangeError, `${name}: range past the end`);
    t.throws(() => decode(packet, new Int16Array(159), 12, 160), RangeError, `${name}: output too short`);
  }
});

t.test('encodeBatch encodes each stream as the single-stream call does', async (t) => {
  const frames = Array.from({ length: 7 }, (_, s) =>
    Int16Array.from({ length: 160 }, (_, i) => ((i * 97 + s * 1013) % 30000) - 15000),
  );
  for (const codec of [G711_MULAW, G711_ALAW] as const) {
    const outs = frames.map(() => new Uint8Array(160));
    t.equal(encodeBatch(codec, frames, outs), 7);
    for (let s = 0; s < 7; s++) {
      const one = new Uint8Array(160);
      if (codec === G711_MULAW) mulawEncodeInto(frames[s], one);
      else alawEncodeInto(frames[s], one);
      t.same(outs[s], one, `stream ${s} codec ${codec}`);
    }
  }
  t.throws(() => encodeBatch(G711_MULAW, frames, []), RangeError);
  t.throws(
    () =>
      encodeBatch(
        7 as never,
        frames,
        frames.map(() => new Uint8Array(160)),
      ),
    RangeError,
  );
});

t.test('int16 <-> float32 conversion is exact for every int16 and saturates out of range', async (t) => {
  const f = new Float32Array(65536);
  pcm16ToFloat32Into(allPcm, f);
  t.equal(f[0], -1);
  t.equal(f[32768], 0);
  const back = new Int16Array(65536);
  float32ToPcm16Into(f, back);
  t.same(back, allPcm);
  const edge = new Int16Array(3);
  float32ToPcm16Into(new Float32Array([1.5, -2, 0.5 / 32768]), edge);
  t.same(Array.from(edge), [32767, -32768, 1]);
});

t.test('gain and mixing round and saturate', async (t) => {
  const a = new Int16Array([100, -100, 20000, -20000, 3]);
  applyGain(a, 2);
  t.same(Array.from(a), [200, -200, 32767, -32768, 6]);
  const dst = new Int16Array([1000, 30000, -30000, 0]);
  mixInto(dst, new Int16Array([500, 5000, -5000, 7]), 0.5);
  t.same(Array.from(dst), [1250, 32500, -32500, 4]);
  mixInto(dst, new Int16Array([0, 1000, -1000, 0]));
  t.same(Array.from(dst), [1250, 32767, -32768, 4]);
  t.throws(() => mixInto(new Int16Array(3), new Int16Array(4)), RangeError);
});

import t from 'tap';
import { OpusCodec, OPUS_FRAME_SAMPLES } from '../../src/media/opus.js';
import { createDecoder, createEncoder } from '../../src/media/codec.js';

t.test('Opus round trip keeps a tone (lazy @discordjs/opus)', async (t) => {
  const codec = new OpusCodec();
  const out = new Int16Array(5760);
  let energyIn = 0;
  let energyOut = 0;
  let cross = 0;
  const tone = new Int16Array(OPUS_FRAME_SAMPLES);
  const prev = new Int16Array(OPUS_FRAME_SAMPLES);
  for (let f = 0; f < 25; f++) {
    for (let i = 0; i < tone.length; i++)
      tone[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * (f * 960 + i)) / 48000));
    const packet = codec.encode(tone);
    t.ok(packet.length > 0 && packet.length < 400, 'a compressed packet');
    const n = codec.decodeInto(packet, out);
    t.equal(n, OPUS_FRAME_SAMPLES);
    if (f >= 5) {
      // Opus has a few ms of algorithmic delay: compare the energy and the 440 Hz content, not samples.
      for (let i = 0; i < n; i++) {
        energyIn += tone[i] * tone[i];
        energyOut += out[i] * out[i];
      }
      const k = 2 * Math.cos((2 * Math.PI * 440) / 48000);
      let s1 = 0,
        s2 = 0;
      for (let i = 0; i < n; i++) {
        const s0 = out[i] + k * s1 - s2;
        s2 = s1;
        s1 = s0;
      }
      cross += (s1 * s1 + s2 * s2 - k * s1 * s2) / ((n * n) / 4);
    }
    prev.set(tone);
  }
  const ratio = energyOut / energyIn;
  t.ok(ratio > 0.7 && ratio < 1.3, `energy kept (${ratio.toFixed(2)})`);
  t.ok(cross / 20 > 0.5 * 4000 * 4000, '440 Hz dominant in the decoded audio');
  t.throws(() => codec.encode(new Int16Array(100)), RangeError);
});

t.test('codec registry: Opus encoder/decoder pair and PCM little-endian', async (t) => {
  const enc = createEncoder('opus_48000');
  const dec = createDecoder('opus_48000');
  const frame = new Int16Array(960).fill(1000);
  const buf = new Uint8Array(1500);
  const n = enc.encodeInto(frame, buf);
  t.ok(n > 0);
  t.equal(dec.decodeInto(buf, n, new Int16Array(5760)), 960);
  const pcmEnc = createEncoder('pcm_16000');
  const pcmDec = createDecoder('pcm_16000');
  const pcm = Int16Array.from([0, 1, -1, 32767, -32768, 258]);
  const bytes = new Uint8Array(12);
  t.equal(pcmEnc.encodeInto(pcm, bytes), 12);
  t.same(Array.from(bytes.subarray(0, 4)), [0, 0, 1, 0], 'little-endian');
  const back = new Int16Array(6);
  t.equal(pcmDec.decodeInto(bytes, 12, back), 6);
  t.same(Array.from(back), Array.from(pcm));
});

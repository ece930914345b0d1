// In-band DTMF detection (ITU-T Q.23 frequencies, Q.24 receiver limits as implemented in native/src/dtmf.h):
// all 16 digits at the limits (shortest operate duration, maximum twist, frequency deviation, lowest level)
// are detected, tones just beyond them are not, and no digit is reported anywhere in the 568 real speech
// prompts (talk-off).
import t from 'tap';
import { DtmfDetector } from '../../src/media/native/dtmf.js';
import { addWhiteNoise, listPrompts, loadPrompt, PROMPT_COUNT } from './speech-corpus.js';

// The talk-off pass reads all 568 prompts: allow for a loaded CI machine.
t.setTimeout(300_000);

const RATE = 8000;
const ROWS = [697, 770, 852, 941]; // ITU-T Q.23
const COLS = [1209, 1336, 1477, 1633];
const KEYS = ['123A', '456B', '789C', '*0#D'];
const BLOCK = 102; // the detector's block at 8 kHz, used to try every alignment
// 0 dBm0 is a sine 3.17 dB below full scale (G.711 digital milliwatt): peak amplitude 32768 / 10^(3.17/20).
const DBM0_PEAK = 32768 / 10 ** (3.17 / 20);

interface ToneSpec {
  row: number;
  col: number;
  ms: number;
  /** row level minus column level, dB (> 0 normal twist, < 0 reverse twist) */
  twistDb?: number;
  /** relative frequency deviation applied to both tones */
  deviation?: number;
  /** level of the weaker tone, dBm0 */
  weakLevelDbm0?: number;
}

function dualTone(s: ToneSpec): Float64Array {
  const twist = s.twistDb ?? 0;
  const weak = DBM0_PEAK * 10 ** ((s.weakLevelDbm0 ?? -10) / 20);
  const rowAmp = twist >= 0 ? weak * 10 ** (twist / 20) : weak;
  const colAmp = twist >= 0 ? weak : weak * 10 ** (-twist / 20);
  const dev = 1 + (s.deviation ?? 0);
  const n = Math.round((RATE * s.ms) / 1000);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    out[i] =
      rowAmp * Math.sin((2 * Math.PI * ROWS[s.row] * dev * i) / RATE + 0.4) +
      colAmp * Math.sin((2 * Math.PI * COLS[s.col] * dev * i) / RATE + 1.9);
  }
  return out;
}

/** Lays parts (tones or silences as lengths in ms) after `offset` samples of silence and runs the detector. */
function detect(parts: (Float64Array | number)[], offset = 0): string {
  const arrays = parts.map((p) => (typeof p === 'number' ? new Float64Array((RATE * p) / 1000) : p));
  const x = new Int16Array(offset + arrays.reduce((a, p) => a + p.length, 0) + 800);
  let at = offset;
  for (const p of arrays) {
    for (let i = 0; i < p.length; i++) x[at + i] = Math.round(p[i]);
    at += p.length;
  }
  const d = new DtmfDetector(RATE);
  let digits = '';
  for (let i = 0; i < x.length; i += 160) digits += d.detect(x.subarray(i, i + 160));
  d.destroy();
  return digits;
}

function eachDigit(fn: (row: number, col: number, key: string) => void): void {
  for (let row = 0; row < 4; row++) for (let col = 0; col < 4; col++) fn(row, col, KEYS[row][col]);
}

t.test('40 ms tones of all 16 digits are detected at every block alignment', async (t) => {
  eachDigit((row, col, key) => {
    const missed: number[] = [];
    for (let offset = 0; offset < BLOCK; offset += 3) {
      if (detect([dualTone({ row, col, ms: 40 })], offset) !== key) missed.push(offset);
    }
    t.same(missed, [], `digit ${key}`);
  });
});

t.test('tones of 20 ms or less are never detected', async (t) => {
  eachDigit((row, col, key) => {
    let detected = 0;
    for (let offset = 0; offset < BLOCK; offset += 3) {
      if (detect([dualTone({ row, col, ms: 20 })], offset) !== '') detected++;
    }
    t.equal(detected, 0, `digit ${key}`);
  });
});

t.test('all digits at the combined limits: 40 ms, 8 dB normal / 4 dB reverse twist, +-1.5 %, -25 dBm0', async (t) => {
  for (const twistDb of [8, -4]) {
    for (const deviation of [0.015, -0.015]) {
      eachDigit((row, col, key) => {
        const got = detect(
          [dualTone({ row, col, ms: 40, twistDb, deviation, weakLevelDbm0: -25 - Math.abs(twistDb) })],
          17,
        );
        t.equal(got, key, `digit ${key} twist ${twistDb} dB, deviation ${deviation * 100} %`);
      });
    }
  }
});

t.test('just beyond the limits nothing is detected: twist 9.5 / -5.5 dB, deviation +-3.5 %, -45 dBm0', async (t) => {
  eachDigit((row, col, key) => {
    t.equal(detect([dualTone({ row, col, ms: 80, twistDb: 9.5 })]), '', `digit ${key} normal twist 9.5 dB`);
    t.equal(detect([dualTone({ row, col, ms: 80, twistDb: -5.5 })]), '', `digit ${key} reverse twist 5.5 dB`);
    t.equal(detect([dualTone({ row, col, ms: 80, deviation: 0.035 })]), '', `digit ${key} +3.5 %`);
    t.equal(detect([dualTone({ row, col, ms: 80, deviation: -0.035 })]), '', `digit ${key} -3.5 %`);
    t.equal(detect([dualTone({ row, col, ms: 80, weakLevelDbm0: -45 })]), '', `digit ${key} at -45 dBm0`);
  });
});

t.test('a 40 ms pause separates repeated digits; a long tone is one digit', async (t) => {
  const five = () => dualTone({ row: 1, col: 1, ms: 60 });
  t.equal(detect([five(), 40, five(), 40, five()]), '555');
  t.equal(detect([dualTone({ row: 3, col: 2, ms: 1000 })]), '#');
  const sequence = '1234567890*#ABCD';
  const parts: (Float64Array | number)[] = [];
  for (const key of sequence) {
    const row = KEYS.findIndex((r) => r.includes(key));
    parts.push(dualTone({ row, col: KEYS[row].indexOf(key), ms: 50 }), 50);
  }
  t.equal(detect(parts), sequence);
});

t.test('digits are detected in white noise at 20 dB SNR', async (t) => {
  const clean = new Int16Array(RATE);
  const tone = dualTone({ row: 2, col: 3, ms: 60, weakLevelDbm0: -15 });
  for (let i = 0; i < tone.length; i++) clean[4000 + i] = Math.round(tone[i]);
  let tonePower = 0;
  for (const v of tone) tonePower += v * v;
  const noisy = addWhiteNoise(clean, tonePower / tone.length, 20, 7);
  const d = new DtmfDetector(RATE);
  let digits = '';
  for (let i = 0; i < noisy.length; i += 160) digits += d.detect(noisy.subarray(i, i + 160));
  d.destroy();
  t.equal(digits, 'C');
});

t.test('talk-off: no digit anywhere in the real speech prompts', async (t) => {
  t.setTimeout(120_000);
  const prompts = listPrompts();
  t.equal(prompts.length, PROMPT_COUNT);
  const out = new Uint8Array(8);
  const hits: string[] = [];
  for (const name of prompts) {
    const x = loadPrompt(name);
    const d = new DtmfDetector(RATE);
    for (let i = 0; i < x.length; i += 160) {
      const n = d.process(x.subarray(i, Math.min(i + 160, x.length)), out);
      if (n > 0) hits.push(`${name}: ${String.fromCharCode(...out.subarray(0, n))}`);
    }
    d.destroy();
  }
  t.same(hits, []);
});

// The single-tone (answering-machine beep) detector: generated beeps of 400 to 2000 Hz lasting 100 ms are
// detected clean and in noise, short blips and out-of-range tones are not, Asterisk's own beep prompt is, and
// no speech prompt is.
import t from 'tap';
import { TONE_END, TONE_START, ToneDetector } from '../../src/media/native/tone.js';
import { TONE_PROMPTS, addWhiteNoise, listPrompts, loadPrompt } from './speech-corpus.js';

// One pass over all 568 prompts: allow for a loaded CI machine.
t.setTimeout(300_000);

const RATE = 8000;

function beep(hz: number, ms: number, lead = 1000, amplitude = 8000): Int16Array {
  const x = new Int16Array(lead + (RATE * ms) / 1000 + 2000);
  for (let i = 0; i < (RATE * ms) / 1000; i++)
    x[lead + i] = Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / RATE));
  return x;
}

function run(x: Int16Array, frame = 160): { starts: number; ends: number; hz: number; start: number } {
  const d = new ToneDetector(RATE);
  let starts = 0;
  let ends = 0;
  let hz = 0;
  let start = -1;
  for (let i = 0; i < x.length; i += frame) {
    const e = d.process(x.subarray(i, Math.min(i + frame, x.length)));
    if (e & TONE_END) ends++;
    if (e & TONE_START) {
      starts++;
      hz = d.frequencyHz;
      start = d.startSample;
    }
  }
  d.destroy();
  return { starts, ends, hz, start };
}

t.test('100 ms beeps from 400 to 2000 Hz are detected once, with their frequency and start', async (t) => {
  for (const hz of [400, 550, 700, 1000, 1400, 1800, 2000]) {
    for (const lead of [1000, 1037, 1071]) {
      const r = run(beep(hz, 100, lead));
      t.equal(r.starts, 1, `${hz} Hz lead ${lead}`);
      t.equal(r.ends, 1, `${hz} Hz lead ${lead} ends`);
      t.ok(Math.abs(r.hz - hz) <= 0.01 * hz, `${hz} Hz measured ${r.hz.toFixed(1)}`);
      t.ok(Math.abs(r.start - lead) <= 0.032 * RATE, `${hz} Hz start ${r.start} near ${lead}`);
    }
  }
});

t.test('beeps are detected in white noise at 20 dB SNR', async (t) => {
  for (const hz of [440, 1000, 1900]) {
    const clean = beep(hz, 120);
    const noisy = addWhiteNoise(clean, (8000 * 8000) / 2, 20, hz);
    t.equal(run(noisy).starts, 1, `${hz} Hz`);
  }
});

t.test('short blips, out-of-range tones and silence are not beeps', async (t) => {
  t.equal(run(beep(1000, 30)).starts, 0, '30 ms blip');
  t.equal(run(beep(300, 300)).starts, 0, '300 Hz');
  t.equal(run(beep(2500, 300)).starts, 0, '2500 Hz');
  t.equal(run(new Int16Array(RATE * 2)).starts, 0, 'silence');
  t.equal(run(addWhiteNoise(new Int16Array(RATE * 2), 1e6, 0, 3)).starts, 0, 'white noise');
});

t.test("Asterisk's beep prompt is detected", async (t) => {
  const r = run(loadPrompt('beep.wav'));
  t.equal(r.starts, 1);
  t.ok(r.hz > 400 && r.hz < 2000, `beep at ${r.hz.toFixed(0)} Hz`);
});

t.test('no speech prompt is taken for a beep', async (t) => {
  t.setTimeout(120_000);
  const hits: string[] = [];
  let speech = 0;
  for (const name of listPrompts()) {
    if (TONE_PROMPTS.has(name)) continue;
    speech++;
    const r = run(loadPrompt(name));
    if (r.starts > 0) hits.push(`${name} at ${r.hz.toFixed(0)} Hz`);
  }
  t.ok(speech >= 560, `${speech} speech prompts`);
  t.same(hits, []);
});

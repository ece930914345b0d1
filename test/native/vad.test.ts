// The native VAD on real recorded speech: every speech prompt of asterisk-core-sounds-en-wav with 1 s of
// silence before and after, clean and with white noise at 10 dB SNR (seeded). Truth: the first and last 10 ms
// of the prompt's own envelope within 30 dB of its loudest 10 ms (speech-corpus.ts). Speech-start must fall
// within 100 ms of the true start and speech-end (the last voiced frame) within 150 ms of the true end; nothing
// may be reported in the added silence or noise.
import t from 'tap';
import { Resampler, type ResamplerRate } from '../../src/media/native/resampler.js';
import { VAD_DEFAULTS, VAD_SPEECH_END, VAD_SPEECH_START, Vad } from '../../src/media/native/vad.js';
import { addWhiteNoise, isSpeechPrompt, listPrompts, loadPrompt, pad, PROMPT_RATE, truthOf } from './speech-corpus.js';

// The whole corpus twice: allow for a loaded CI machine (tap's default is 60 s per file).
t.setTimeout(600_000);

const PAD = PROMPT_RATE; // 1 s
const FRAME = 160; // 20 ms
const START_TOLERANCE = (100 * PROMPT_RATE) / 1000;
const END_TOLERANCE = (150 * PROMPT_RATE) / 1000;
const SNR_DB = 10;
// Required share of prompts meeting both tolerances: the 95 % in both conditions. Reached: clean
// 96.9 %, white noise at 10 dB SNR 97.1 % (96.6 to 97.1 % over five noise seeds). What still misses in noise is
// mostly weak /s/ and /k/ onsets 15-20 dB under the noise, found 110-170 ms late.
const MIN_SHARE_CLEAN = 0.95;
const MIN_SHARE_NOISY = 0.95;

interface Outcome {
  starts: number[];
  ends: number[];
}

function runVad(x: Int16Array, frame = FRAME, rate: ResamplerRate = PROMPT_RATE): Outcome {
  const vad = new Vad(rate);
  const starts: number[] = [];
  const ends: number[] = [];
  for (let i = 0; i < x.length; i += frame) {
    const e = vad.process(x.subarray(i, Math.min(i + frame, x.length)));
    if (e & VAD_SPEECH_END) ends.push(vad.lastVoicedSample);
    if (e & VAD_SPEECH_START) starts.push(vad.speechStartSample);
  }
  if (vad.speaking) ends.push(vad.lastVoicedSample);
  vad.destroy();
  return { starts, ends };
}

const WIDEBAND_RATE = 16000;

/** x (8 kHz) at 16 kHz through the project's resampler, its group delay removed (sample i lands on 2i). */
function toWideband(x: Int16Array): Int16Array {
  const chunk = 160;
  const resampler = new Resampler(PROMPT_RATE, WIDEBAND_RATE, chunk);
  const delay = 2 * resampler.delaySamples;
  const input = new Int16Array(x.length + resampler.delaySamples + chunk);
  input.set(x);
  const out = new Int16Array(2 * input.length + resampler.maxOutput(chunk));
  let written = 0;
  for (let i = 0; i < input.length; i += chunk) {
    written += resampler.process(input.subarray(i, Math.min(i + chunk, input.length)), out.subarray(written));
  }
  resampler.destroy();
  return out.slice(delay, delay + 2 * x.length);
}

function corpus(
  noisy: boolean,
  wideband = false,
): { ok: number; total: number; inPadding: string[]; failures: string[] } {
  let ok = 0;
  let total = 0;
  const inPadding: string[] = [];
  const failures: string[] = [];
  listPrompts().forEach((name, index) => {
    if (!isSpeechPrompt(name)) return;
    const prompt = loadPrompt(name);
    const truth = truthOf(prompt);
    const clean = pad(prompt, PAD);
    const x = noisy ? addWhiteNoise(clean, truth.power, SNR_DB, index + 1) : clean;
    // At 16 kHz the events are in 16 kHz samples: halved to compare with the 8 kHz truth.
    const { starts, ends } = wideband
      ? (({ starts, ends }) => ({ starts: starts.map((s) => s / 2), ends: ends.map((e) => e / 2) }))(
          runVad(toWideband(x), 2 * FRAME, WIDEBAND_RATE),
        )
      : runVad(x);
    total++;
    const trueStart = PAD + truth.start;
    const trueEnd = PAD + truth.end;
    // Reports inside the added second of silence/noise on either side.
    const stray = starts.filter((s) => s < PAD - START_TOLERANCE || s >= PAD + prompt.length);
    if (stray.length > 0) inPadding.push(`${name} at ${stray.map((s) => (s - PAD) / 8).join(',')} ms`);
    if (starts.length === 0) {
      failures.push(`${name}: no speech`);
      return;
    }
    const startError = starts[0] - trueStart;
    const endError = ends[ends.length - 1] - trueEnd;
    if (Math.abs(startError) <= START_TOLERANCE && Math.abs(endError) <= END_TOLERANCE) ok++;
    else failures.push(`${name}: start ${startError / 8} ms, end ${endError / 8} ms`);
  });
  return { ok, total, inPadding, failures };
}

t.test('clean speech prompts: start within 100 ms, last voiced frame within 150 ms', async (t) => {
  t.setTimeout(300_000);
  const r = corpus(false);
  t.ok(r.total >= 550, `${r.total} speech prompts`);
  t.comment(`clean: ${r.ok}/${r.total} = ${((100 * r.ok) / r.total).toFixed(1)} % within tolerance`);
  t.ok(
    r.ok / r.total >= MIN_SHARE_CLEAN,
    `${r.ok}/${r.total} within tolerance; misses: ${r.failures.slice(0, 20).join('; ')}`,
  );
  t.same(r.inPadding, [], 'no speech reported in the added silence');
});

t.test(
  'speech prompts in white noise at 10 dB SNR: start within 100 ms, last voiced frame within 150 ms',
  async (t) => {
    t.setTimeout(300_000);
    const r = corpus(true);
    t.comment(`noisy: ${r.ok}/${r.total} = ${((100 * r.ok) / r.total).toFixed(1)} % within tolerance`);
    t.ok(
      r.ok / r.total >= MIN_SHARE_NOISY,
      `${r.ok}/${r.total} within tolerance; misses: ${r.failures.slice(0, 20).join('; ')}`,
    );
    t.same(r.inPadding, [], 'no speech reported in the added noise');
  },
);

t.test('16 kHz (the prompts in white noise resampled; analysed at 8 kHz inside): the same tolerances', async (t) => {
  t.setTimeout(300_000);
  const r = corpus(true, true);
  t.comment(`noisy at 16 kHz: ${r.ok}/${r.total} = ${((100 * r.ok) / r.total).toFixed(1)} % within tolerance`);
  t.ok(
    r.ok / r.total >= MIN_SHARE_NOISY,
    `${r.ok}/${r.total} within tolerance; misses: ${r.failures.slice(0, 20).join('; ')}`,
  );
  t.same(r.inPadding, [], 'no speech reported in the added noise');
});

// Speech-start and last-voiced samples as the VAD placed them before its analysis was made faster (bit-identical
// band powers since): the decisions themselves are pinned, not only the corpus figures. Keys: condition
// (clean/noisy at 8 or 16 kHz), values [start, end] in samples at that rate.
const PINNED_EVENTS: Record<string, Record<string, [number, number]>> = {
  'vm-goodbye.wav': { c8: [8560, 14080], n8: [8640, 14240], c16: [17120, 28160], n16: [17280, 28320] },
  'digits/1.wav': { c8: [9040, 13840], n8: [9360, 14720], c16: [18080, 27680], n16: [18880, 29440] },
  'vm-intro.wav': { c8: [8800, 51440], n8: [8880, 51760], c16: [17760, 102880], n16: [17760, 103520] },
  'conf-onlyperson.wav': { c8: [8880, 31120], n8: [8960, 30960], c16: [17760, 62240], n16: [17920, 62080] },
};

t.test(
  'speech start and end samples are exactly where the reference analysis put them (clean and noisy, 8 and 16 kHz)',
  async (t) => {
    const names = listPrompts();
    for (const [name, expected] of Object.entries(PINNED_EVENTS)) {
      const prompt = loadPrompt(name);
      const clean = pad(prompt, PAD);
      // The same noise as the corpus tests (seeded by the prompt's position in the list).
      const noisy = addWhiteNoise(clean, truthOf(prompt).power, SNR_DB, names.indexOf(name) + 1);
      const runs: Record<string, Outcome> = {
        c8: runVad(clean),
        n8: runVad(noisy),
        c16: runVad(toWideband(clean), 2 * FRAME, WIDEBAND_RATE),
        n16: runVad(toWideband(noisy), 2 * FRAME, WIDEBAND_RATE),
      };
      for (const [condition, [start, end]] of Object.entries(expected)) {
        t.same(runs[condition], { starts: [start], ends: [end] }, `${name} ${condition}`);
      }
    }
  },
);

t.test('silence prompts, digital silence and white noise alone never start speech', async (t) => {
  const silences = listPrompts().filter((n) => n.startsWith('silence/'));
  t.equal(silences.length, 10);
  for (const name of silences) {
    t.same(runVad(pad(loadPrompt(name), PAD)).starts, [], name);
  }
  t.same(runVad(new Int16Array(PROMPT_RATE * 10)).starts, [], 'digital silence');
  for (const rms of [3, 30, 300, 3000]) {
    for (const seed of [1, 2, 3]) {
      const noise = addWhiteNoise(new Int16Array(PROMPT_RATE * 10), rms * rms, 0, seed * 101 + rms);
      t.same(runVad(noise).starts, [], `white noise at RMS ${rms}, seed ${seed}`);
    }
  }
});

t.test('events do not depend on how the audio is framed', async (t) => {
  const x = pad(loadPrompt('vm-goodbye.wav'), PAD);
  const a = runVad(x, 160);
  const b = runVad(x, 37);
  t.same(b, a);
  t.equal(a.starts.length, 1);
  // At 16 kHz the half-band decimator takes odd and even chunk boundaries alike.
  const wide = toWideband(x);
  const c = runVad(wide, 320, WIDEBAND_RATE);
  t.same(runVad(wide, 37, WIDEBAND_RATE), c, '16 kHz in 37-sample chunks');
  t.same(runVad(wide, 1000, WIDEBAND_RATE), c, '16 kHz in 1000-sample chunks');
  t.equal(c.starts.length, 1);
  // 48 kHz is halved twice (two decimators in a row): the same boundaries as at 8 kHz, within a step.
  const up = new Resampler(PROMPT_RATE, 48000, x.length);
  const x48 = new Int16Array(up.maxOutput(x.length));
  const n48 = up.process(x, x48);
  const shift = 6 * up.delaySamples;
  up.destroy();
  const d = runVad(x48.subarray(shift, n48), 960, 48000);
  t.same(runVad(x48.subarray(shift, n48), 37, 48000), d, '48 kHz in 37-sample chunks');
  t.equal(d.starts.length, 1);
  t.ok(Math.abs(d.starts[0] / 6 - a.starts[0]) <= 80, `48 kHz start ${d.starts[0] / 6} vs 8 kHz ${a.starts[0]}`);
  t.ok(Math.abs(d.ends[0] / 6 - a.ends[0]) <= 80, `48 kHz end ${d.ends[0] / 6} vs 8 kHz ${a.ends[0]}`);
});

t.test('speech-start comes with the prebuffered audio leading into it', async (t) => {
  const x = pad(loadPrompt('vm-goodbye.wav'), PAD);
  const vad = new Vad(PROMPT_RATE);
  t.equal(vad.prebufferCapacity, (PROMPT_RATE * VAD_DEFAULTS.prebufferMs) / 1000);
  const out = new Int16Array(vad.prebufferCapacity);
  let checked = false;
  for (let i = 0; i < x.length && !checked; i += FRAME) {
    if (vad.process(x.subarray(i, i + FRAME)) & VAD_SPEECH_START) {
      const fed = i + FRAME;
      const n = vad.readPrebuffer(out);
      t.equal(n, vad.prebufferCapacity);
      t.same(out.subarray(0, n), x.subarray(fed - n, fed), 'the last 500 ms fed');
      t.ok(vad.speechStartSample >= fed - n, 'the speech start lies inside the prebuffer');
      t.ok(vad.speaking);
      checked = true;
    }
  }
  t.ok(checked, 'speech started');
  vad.destroy();
});

t.test('the timing options: min silence sets the hangover, min speech rejects short bursts', async (t) => {
  const x = pad(loadPrompt('vm-goodbye.wav'), PAD);
  for (const minSilenceMs of [200, 800]) {
    const vad = new Vad(PROMPT_RATE, { minSilenceMs });
    let endAt = -1;
    let lastVoiced = -1;
    for (let i = 0; i < x.length; i += 80) {
      if (vad.process(x.subarray(i, i + 80)) & VAD_SPEECH_END) {
        endAt = i + 80;
        lastVoiced = vad.lastVoicedSample;
      }
    }
    const hangoverMs = ((endAt - lastVoiced) * 1000) / PROMPT_RATE;
    // The refined last voiced frame may move later by the refinement's reach, never past the decision.
    t.ok(hangoverMs > 0 && hangoverMs <= minSilenceMs, `end reported ${hangoverMs} ms after the last voiced frame`);
    vad.destroy();
  }
  // Min speech: a short word is speech with the default 50 ms, not when 1.5 s of speech are required.
  const word = pad(loadPrompt('digits/1.wav'), PAD);
  t.equal(runVad(word).starts.length, 1, 'digits/1 with min speech 50 ms');
  const strict = new Vad(PROMPT_RATE, { minSpeechMs: 1500 });
  let strictStarts = 0;
  for (let i = 0; i < word.length; i += FRAME)
    if (strict.process(word.subarray(i, i + FRAME)) & VAD_SPEECH_START) strictStarts++;
  strict.destroy();
  t.equal(strictStarts, 0, 'digits/1 with min speech 1500 ms');
  t.throws(() => new Vad(PROMPT_RATE, { threshold: 1.5 }), RangeError);
  t.throws(() => new Vad(11025 as never), RangeError);
});

// ---- setOptions: a running VAD takes new options (a transfer to another agent), keeping what it has learnt ----

const STEP = PROMPT_RATE / 100; // 10 ms

interface Timed extends Outcome {
  /** Samples fed when each speech-end was reported. */
  reportedEnds: number[];
}

/** Runs x through vad in 10 ms frames; before feeding sample i, at(i, vad) may change its options. */
function runTimed(vad: Vad, x: Int16Array, at: (fed: number, vad: Vad) => void = () => {}): Timed {
  const out: Timed = { starts: [], ends: [], reportedEnds: [] };
  for (let i = 0; i < x.length; i += STEP) {
    at(i, vad);
    const e = vad.process(x.subarray(i, Math.min(i + STEP, x.length)));
    if (e & VAD_SPEECH_END) {
      out.ends.push(vad.lastVoicedSample);
      out.reportedEnds.push(i + STEP);
    }
    if (e & VAD_SPEECH_START) out.starts.push(vad.speechStartSample);
  }
  vad.destroy();
  return out;
}

t.test(
  'setOptions: min silence shortened once speech has started decides exactly as a VAD created with it, each end reported 60 steps sooner than with 800 ms',
  async (t) => {
    const x = pad(loadPrompt('vm-intro.wav'), PAD);
    const long = runTimed(new Vad(PROMPT_RATE), x);
    const created = runTimed(new Vad(PROMPT_RATE, { minSilenceMs: 200 }), x);
    const startAt = long.starts[0];
    let set = false;
    const changed = runTimed(new Vad(PROMPT_RATE), x, (fed, vad) => {
      if (!set && vad.speaking) {
        vad.setOptions({ minSilenceMs: 200 });
        set = true;
      }
    });
    t.ok(set && startAt > 0, 'changed during the speech');
    t.same(changed, created, 'the same starts, ends and report times as min silence 200 ms from the start');
    // The last end (the prompt's end, digital silence after it): 800 - 200 ms = 60 steps sooner.
    const last = (o: Timed) => o.reportedEnds[o.reportedEnds.length - 1];
    t.equal((last(long) - last(changed)) / STEP, 60, 'the last end 60 steps sooner');
  },
);

t.test(
  'setOptions: min silence shortened during a hangover ends the speech at the next step, at its last voiced step',
  async (t) => {
    const x = pad(loadPrompt('vm-goodbye.wav'), PAD);
    const reference = runTimed(new Vad(PROMPT_RATE), x);
    t.equal(reference.ends.length, 1);
    // 300 ms into the hangover (speaking, the last voiced step 300 ms back), min silence 800 -> 200 ms: already past.
    let setAt = -1;
    const changed = runTimed(new Vad(PROMPT_RATE), x, (fed, vad) => {
      if (
        setAt < 0 &&
        vad.speaking &&
        vad.lastVoicedSample > 0 &&
        fed - vad.lastVoicedSample === 30 * STEP &&
        fed > reference.ends[0]
      ) {
        vad.setOptions({ minSilenceMs: 200 });
        setAt = fed;
      }
    });
    t.ok(setAt > 0, 'set during the hangover');
    t.same(changed.reportedEnds, [setAt + STEP], 'reported at the step after the change');
    t.same(changed.starts, reference.starts);
    t.same(changed.ends, reference.ends, 'the end placed where the 800 ms hangover placed it (refinement included)');
    // Lengthened during a hangover instead: the end comes by the new length, counted from the last voiced step.
    let lengthenedAt = -1;
    let lastVoiced = -1;
    const longer = runTimed(new Vad(PROMPT_RATE), x, (fed, vad) => {
      if (lengthenedAt < 0 && vad.speaking && fed - vad.lastVoicedSample === 30 * STEP && fed > reference.ends[0]) {
        lastVoiced = vad.lastVoicedSample;
        vad.setOptions({ minSilenceMs: 1000 });
        lengthenedAt = fed;
      }
    });
    t.ok(lengthenedAt > 0, 'lengthened during the hangover');
    t.same(longer.reportedEnds, [lastVoiced + 100 * STEP], '1000 ms after the last voiced step');
  },
);

/** 3 s of white noise (RMS 300, seeded) with a 1 kHz tone of amplitude 400 from 1 to 2 s: a weak signal, its
 * probability 0.45 to 0.87 at the default threshold's VAD. */
function weakTone(): Int16Array {
  const x = addWhiteNoise(new Int16Array(PROMPT_RATE * 3), 300 * 300, 0, 7);
  for (let i = PROMPT_RATE; i < 2 * PROMPT_RATE; i++)
    x[i] += Math.round(400 * Math.sin((2 * Math.PI * 1000 * i) / PROMPT_RATE));
  return x;
}

t.test(
  'setOptions: a threshold raised after the noise is learnt keeps a weak tone from being voiced; lowered again before it, the tone is speech',
  async (t) => {
    const x = weakTone();
    const plain = runTimed(new Vad(PROMPT_RATE), x);
    t.same(
      plain.starts,
      [PROMPT_RATE + STEP],
      'the default threshold: speech from the tone (the first step whose window is all tone)',
    );
    const raise = (fed: number, vad: Vad) => {
      if (fed === 0.6 * PROMPT_RATE) vad.setOptions({ threshold: 0.9 });
    };
    t.same(runTimed(new Vad(PROMPT_RATE), x, raise).starts, [], 'threshold 0.9 from 600 ms: never voiced');
    // Lowered again at 900 ms: the noise learnt meanwhile (in Silence, whatever the threshold) is the same, so are
    // the decisions. (Lowered only inside the tone, it would find the tone learnt as noise: 7-9 dB over the noise
    // floor, within the 10 dB a silent detector learns from.)
    const lowered = runTimed(new Vad(PROMPT_RATE), x, (fed, vad) => {
      raise(fed, vad);
      if (fed === 0.9 * PROMPT_RATE) vad.setOptions({ threshold: VAD_DEFAULTS.threshold });
    });
    t.same(lowered, plain, 'the same events as never raised');
  },
);

t.test(
  'setOptions: the prebuffer takes its new length at once and keeps the newest audio; out of range changes nothing',
  async (t) => {
    const x = weakTone();
    const vad = new Vad(PROMPT_RATE, { threshold: 0.99 });
    vad.process(x.subarray(0, PROMPT_RATE));
    vad.setOptions({ prebufferMs: 200 });
    t.equal(vad.prebufferCapacity, 1600, '200 ms at 8 kHz');
    const out = new Int16Array(PROMPT_RATE);
    t.equal(vad.readPrebuffer(out), 1600);
    t.same(out.subarray(0, 1600), x.subarray(PROMPT_RATE - 1600, PROMPT_RATE), 'the newest 200 ms fed');
    vad.setOptions({ prebufferMs: 1000 });
    t.equal(vad.prebufferCapacity, PROMPT_RATE, '1 s');
    t.equal(vad.readPrebuffer(out), 1600, 'still the 200 ms held');
    vad.process(x.subarray(PROMPT_RATE, PROMPT_RATE + 500));
    t.equal(vad.readPrebuffer(out), 2100);
    t.same(
      out.subarray(0, 2100),
      x.subarray(PROMPT_RATE + 500 - 2100, PROMPT_RATE + 500),
      'held and new audio in order',
    );
    vad.process(x.subarray(PROMPT_RATE + 500, 3 * PROMPT_RATE));
    t.equal(vad.readPrebuffer(out), PROMPT_RATE, 'full again');
    t.same(out, x.subarray(2 * PROMPT_RATE), 'the last second fed');
    vad.setOptions({ prebufferMs: 0 });
    t.equal(vad.prebufferCapacity, 0);
    t.equal(vad.readPrebuffer(out), 0);
    t.throws(() => vad.setOptions({ threshold: 1.5 }), RangeError);
    t.throws(() => vad.setOptions({ minSilenceMs: 60001 }), RangeError);
    t.same(
      vad.options,
      {
        threshold: 0.99,
        prebufferMs: 0,
        minSpeechMs: VAD_DEFAULTS.minSpeechMs,
        minSilenceMs: VAD_DEFAULTS.minSilenceMs,
      },
      'a refused change changes nothing',
    );
    vad.destroy();
  },
);

t.test(
  'setOptions: min silence shortened late in a hangover still refines the end over it (the step history kept back to the last voiced step)',
  async (t) => {
    // conf-locked at 10 dB SNR: the 800 ms hangover's refinement moves the end 16 steps past the last voiced step.
    const name = 'conf-locked.wav';
    const prompt = loadPrompt(name);
    const x = addWhiteNoise(pad(prompt, PAD), truthOf(prompt).power, SNR_DB, listPrompts().indexOf(name) + 1);
    const reference = runTimed(new Vad(PROMPT_RATE), x);
    // 700 ms into the last hangover, 800 -> 200 ms (the history for 200 ms alone would reach back 420 ms).
    let setAt = -1;
    let unrefined = -1;
    const changed = runTimed(new Vad(PROMPT_RATE), x, (fed, vad) => {
      if (setAt < 0 && vad.speaking && fed - vad.lastVoicedSample === 70 * STEP && fed > reference.ends.at(-1)!) {
        unrefined = vad.lastVoicedSample;
        vad.setOptions({ minSilenceMs: 200 });
        setAt = fed;
      }
    });
    t.ok(setAt > 0, 'set late in the last hangover');
    t.equal(changed.reportedEnds.at(-1), setAt + STEP, 'ended at the next step');
    t.equal((reference.ends.at(-1)! - unrefined) / STEP, 16, 'the reference end: 16 steps of refinement');
    t.same(changed.ends, reference.ends, 'the same refined ends');
  },
);

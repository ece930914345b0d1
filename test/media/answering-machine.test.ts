// The answering-machine detector: each rule on audio made for it (prompts of asterisk-core-sounds-en-wav, tones,
// silences, noise), the events' order and `done`, frame sizes and reset; then the whole labelled set of
// test/fixtures/voicemail, whose measured figures (bench/voicemail.ts) are held as floors.
import t from 'tap';
import {
  ANALYSIS_DEADLINE_MS,
  AnsweringMachineDetector,
  BEEP_WAIT_MS,
  MACHINE_GREETING_MS,
  MAX_BEEP_MS,
  type AnsweringMachineDecision,
  type AnsweringMachineOptions,
} from '../../src/media/answering-machine.js';
import { seededRandom } from '../../src/media/noise.js';
import { loadManifest, renderCase, runCase, scoreOutcomes } from '../fixtures/voicemail/labelled-set.js';
import { concatPcm, loadPrompt } from './speech.js';

// The whole set is 200 rendered calls: allow for a loaded machine.
t.setTimeout(300_000);

const RATE = 8000;
const FRAME = 160;
const samples = (ms: number) => Math.round((ms * RATE) / 1000);
/** The tone detector dates a tone up to its 32 ms analysis window away from the truth. */
const TONE_TOLERANCE_MS = 32;

const silence = (ms: number) => new Int16Array(samples(ms));

function prompt(name: string, gainDb = 0): Int16Array {
  const x = loadPrompt(name);
  const g = 10 ** (gainDb / 20);
  return x.map((v) => Math.max(-32768, Math.min(32767, Math.round(v * g))));
}

/** A sine of the given RMS level (dBFS against 32768), with 5 ms ramps. */
function tone(hz: number, ms: number, dbfs = -15): Int16Array {
  const n = samples(ms);
  const ramp = samples(5);
  const a = 32768 * 10 ** (dbfs / 20) * Math.SQRT2;
  const x = new Int16Array(n);
  for (let i = 0; i < n; i++) {
    const edge = Math.min(i, n - 1 - i);
    const env = edge >= ramp ? 1 : 0.5 - 0.5 * Math.cos((Math.PI * edge) / ramp);
    x[i] = Math.round(a * env * Math.sin((2 * Math.PI * hz * i) / RATE));
  }
  return x;
}

/** Adds white noise of the given RMS level over the whole signal (seeded). */
function withNoise(x: Int16Array, dbfs: number, seed = 1): Int16Array {
  const rand = seededRandom(seed);
  const rms = 32768 * 10 ** (dbfs / 20);
  return x.map((v) =>
    Math.max(
      -32768,
      Math.min(32767, Math.round(v + rms * Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand()))),
    ),
  );
}

const msOf = (...parts: Int16Array[]) => (parts.reduce((n, p) => n + p.length, 0) * 1000) / RATE;

interface Run {
  events: AnsweringMachineDecision[];
  /** ms of audio pushed when each event was returned. */
  returnedAtMs: number[];
  done: boolean;
}

/** Pushes the audio (then silence, up to totalMs) in frames of frameSamples; collects what push() returns. */
function run(
  audio: Int16Array,
  totalMs = 40_000,
  frameSamples = FRAME,
  options: Partial<AnsweringMachineOptions> = {},
): Run {
  const d = new AnsweringMachineDetector(options);
  const r = feed(d, audio, totalMs, frameSamples);
  d.destroy();
  return r;
}

function feed(d: AnsweringMachineDetector, audio: Int16Array, totalMs = 40_000, frameSamples = FRAME): Run {
  const events: AnsweringMachineDecision[] = [];
  const returnedAtMs: number[] = [];
  const frame = new Int16Array(frameSamples);
  for (let at = 0; at < samples(totalMs) && !d.done; at += frameSamples) {
    frame.fill(0);
    if (at < audio.length) frame.set(audio.subarray(at, Math.min(at + frameSamples, audio.length)));
    const e = d.push(frame);
    if (e !== null) {
      events.push(e);
      returnedAtMs.push(((at + frameSamples) * 1000) / RATE);
    }
  }
  return { events, returnedAtMs, done: d.done };
}

t.test('silence alone is unknown at the deadline, and nothing follows', async (t) => {
  const r = run(silence(0));
  t.equal(r.events.length, 1);
  t.match(r.events[0], { kind: 'decision', result: 'unknown', reason: 'deadline', decidedAtMs: ANALYSIS_DEADLINE_MS });
  t.ok(r.done);
});

t.test('line noise alone is unknown at the deadline', async (t) => {
  const r = run(withNoise(silence(8000), -50));
  t.match(r.events, [{ result: 'unknown', reason: 'deadline' }]);
});

t.test('a pure tone with no speech before it is no beep and no speech: unknown at the deadline', async (t) => {
  for (const [hz, ms] of [
    [1000, 500],
    [440, 3000],
    [1400, 5000],
  ] as const) {
    const r = run(concatPcm([silence(300), tone(hz, ms)]));
    t.match(r.events, [{ kind: 'decision', result: 'unknown', reason: 'deadline' }], `${hz} Hz for ${ms} ms`);
  }
});

t.test('a short answer then silence is a human, decided about 600 ms after the word', async (t) => {
  // [prompt, ms of silence before it, where its speech ends in the file (speech-corpus.ts truthOf)]
  for (const [name, leadMs, wordEndMs] of [
    ['hello', 300, 680],
    ['hello', 600, 680],
    ['vm-no', 400, 690],
    ['auth-thankyou', 250, 790],
  ] as const) {
    const r = run(concatPcm([silence(leadMs), prompt(name)]));
    t.match(r.events, [{ kind: 'decision', result: 'human', reason: 'short_answer' }], `${name} after ${leadMs} ms`);
    const after = r.events[0]!.decidedAtMs - (leadMs + wordEndMs);
    t.ok(
      after >= 500 && after <= 700,
      `${name} after ${leadMs} ms: decided ${after} ms after the word, ${r.events[0]!.decidedAtMs} ms after the answer`,
    );
    t.ok(r.events[0]!.decidedAtMs <= 2000);
    t.ok(r.done);
  }
});

t.test('a hello inside the first 500 ms (while the VAD learns the noise) is heard', async (t) => {
  // hello.wav holds 100 ms of silence before its speech: the word starts 150 ms after the answer.
  const r = run(concatPcm([silence(50), prompt('hello')]));
  t.match(r.events, [{ result: 'human', reason: 'short_answer' }]);
  const inNoise = run(withNoise(concatPcm([silence(50), prompt('hello'), silence(3000)]), -55, 3));
  t.match(inNoise.events, [{ result: 'human', reason: 'short_answer' }], 'with line noise');
});

t.test('"Hello? ... Hello?": decided human at the first pause, before the second hello', async (t) => {
  const first = concatPcm([silence(400), prompt('hello')]);
  const r = run(concatPcm([first, silence(1500), prompt('hello')]));
  t.match(r.events, [{ result: 'human' }]);
  t.ok(r.events[0]!.decidedAtMs < msOf(first) + 1500, `decided at ${r.events[0]!.decidedAtMs} ms`);
});

t.test(
  'a person talking on ("hello, hello, hello world" with short pauses) past the greeting length is a machine',
  async (t) => {
    // The rule's known cost: an answer running MACHINE_GREETING_MS without a pause is taken for a greeting.
    const talk = concatPcm([
      silence(300),
      prompt('hello'),
      silence(150),
      prompt('hello'),
      silence(150),
      prompt('hello-world'),
    ]);
    const r = run(talk);
    t.match(r.events[0], { kind: 'decision', result: 'machine', reason: 'long_greeting' });
    // With pauses a person leaves for the caller, the same words are a human's.
    const paused = run(
      concatPcm([silence(300), prompt('hello'), silence(1200), prompt('hello'), silence(1200), prompt('hello-world')]),
    );
    t.match(paused.events, [{ result: 'human', reason: 'short_answer' }]);
  },
);

t.test('a burst shorter than an answer (a click, a cough) before silence is forgotten', async (t) => {
  const hello = prompt('hello');
  // 120 ms of the word, the rest silent.
  const burst = new Int16Array(hello.length);
  burst.set(hello.subarray(samples(300), samples(420)), samples(300));
  const r = run(concatPcm([silence(800), burst]));
  t.match(r.events, [{ result: 'unknown', reason: 'deadline' }]);
});

t.test('speech barely above the line noise is not an answer (background talk); clearly above it, it is', async (t) => {
  // hello.wav's active speech level is about -17 dBFS; the noise is set this many dB under it.
  const hello = concatPcm([silence(300), prompt('hello'), silence(6000)]);
  t.match(
    run(withNoise(hello, -17 - 5, 5)).events,
    [{ result: 'unknown', reason: 'deadline' }],
    '5 dB above the noise',
  );
  t.match(
    run(withNoise(hello, -17 - 15, 5)).events,
    [{ result: 'human', reason: 'short_answer' }],
    '15 dB above the noise',
  );
});

t.test(
  'a long greeting is a machine once it has run MACHINE_GREETING_MS; its beep follows with its times',
  async (t) => {
    const lead = silence(600);
    const greeting = concatPcm([prompt('vm-nobodyavail'), prompt('vm-intro')]);
    const gap = silence(500);
    const beep = tone(1000, 250);
    const r = run(concatPcm([lead, greeting, gap, beep, silence(1000)]));
    t.equal(r.events.length, 2);
    const [decision, beepEvent] = r.events;
    t.match(decision, { kind: 'decision', result: 'machine', reason: 'long_greeting' });
    // vm-nobodyavail's speech starts 110 ms into it.
    const speechStartMs = msOf(lead) + 110;
    t.ok(
      Math.abs(decision!.decidedAtMs - (speechStartMs + MACHINE_GREETING_MS)) <= 100,
      `decided at ${decision!.decidedAtMs} ms`,
    );
    const beepStartMs = msOf(lead, greeting, gap);
    t.match(beepEvent, { kind: 'beep', result: 'machine', reason: 'beep', decidedAtMs: decision!.decidedAtMs });
    t.ok(
      Math.abs(beepEvent!.beepAtMs! - beepStartMs) <= TONE_TOLERANCE_MS,
      `beep at ${beepEvent!.beepAtMs} ms, truth ${beepStartMs}`,
    );
    t.ok(
      Math.abs(beepEvent!.beepEndMs! - (beepStartMs + 250)) <= TONE_TOLERANCE_MS,
      `beep end at ${beepEvent!.beepEndMs} ms`,
    );
    t.ok(
      r.returnedAtMs[1]! - (beepStartMs + 250) <= 60,
      `reported ${r.returnedAtMs[1]! - (beepStartMs + 250)} ms after the beep ended`,
    );
    t.ok(r.done);
  },
);

t.test(
  'a greeting too short for the greeting rule is a machine by its beep, and the beep is then reported',
  async (t) => {
    // "is unavailable" (1 s of speech), a short pause, a 440 Hz beep.
    const head = concatPcm([silence(400), prompt('vm-isunavail'), silence(150)]);
    const r = run(concatPcm([head, tone(440, 400), silence(1000)]));
    t.equal(r.events.length, 2);
    t.match(r.events[0], { kind: 'decision', result: 'machine', reason: 'beep_after_speech' });
    t.match(r.events[1], { kind: 'beep', reason: 'beep' });
    t.ok(Math.abs(r.events[1]!.beepAtMs! - msOf(head)) <= TONE_TOLERANCE_MS);
    t.ok(
      r.events[0]!.decidedAtMs < r.events[1]!.beepEndMs!,
      "the machine decision comes at the beep's start, before its end",
    );
  },
);

t.test('beeps at the frequencies and lengths machines use are found in noise', async (t) => {
  const greeting = concatPcm([
    silence(300),
    prompt('vm-theperson'),
    prompt('digits/4'),
    prompt('digits/1'),
    prompt('vm-isunavail'),
  ]);
  for (const [hz, ms] of [
    [1000, 250],
    [440, 500],
    [850, 200],
    [1400, 1000],
    [1800, 300],
  ] as const) {
    const r = run(withNoise(concatPcm([greeting, silence(700), tone(hz, ms, -20), silence(1500)]), -55, hz));
    t.equal(r.events.length, 2, `${hz} Hz ${ms} ms`);
    t.ok(
      Math.abs(r.events[1]!.beepAtMs! - (msOf(greeting) + 700)) <= TONE_TOLERANCE_MS,
      `${hz} Hz at ${r.events[1]!.beepAtMs} ms`,
    );
  }
});

t.test('a tone that goes on is reported MAX_BEEP_MS after it began', async (t) => {
  const head = concatPcm([silence(300), prompt('vm-nobodyavail'), silence(300)]);
  const r = run(concatPcm([head, tone(1000, 4000), silence(500)]));
  t.match(r.events, [{ kind: 'decision', result: 'machine' }, { kind: 'beep' }]);
  const b = r.events[1]!;
  t.ok(
    Math.abs(b.beepEndMs! - b.beepAtMs! - MAX_BEEP_MS) <= 20,
    `reported ${b.beepEndMs! - b.beepAtMs!} ms into the tone`,
  );
});

t.test('a machine whose beep never comes: done once the beep wait is over, with no second event', async (t) => {
  const r = run(concatPcm([silence(300), prompt('vm-nobodyavail'), prompt('vm-intro')]), BEEP_WAIT_MS + 2000);
  t.match(r.events, [{ kind: 'decision', result: 'machine' }]);
  t.ok(r.done, 'done');
  t.ok(r.returnedAtMs[0]! < BEEP_WAIT_MS);
});

t.test('a human decision is final: a later greeting and beep report nothing more', async (t) => {
  const d = new AnsweringMachineDetector();
  const r = feed(
    d,
    concatPcm([silence(300), prompt('hello'), silence(1500), prompt('vm-nobodyavail'), silence(300), tone(1000, 300)]),
  );
  t.match(r.events, [{ result: 'human' }]);
  t.equal(d.push(new Int16Array(FRAME)), null);
  t.match(d.result, { result: 'human' });
  d.destroy();
});

t.test('a decision and a beep both within the held first 500 ms come one per push', async (t) => {
  // 240 ms of a word at once, then a 150 ms beep: both over before the warm-up's audio is analysed.
  const word = prompt('hello').subarray(samples(100), samples(340));
  const audio = concatPcm([word, silence(40), tone(1000, 150), silence(1000)]);
  const d = new AnsweringMachineDetector();
  const r = feed(d, audio);
  t.match(r.events, [
    { kind: 'decision', result: 'machine', reason: 'beep_after_speech', decidedAtMs: 500 },
    { kind: 'beep', decidedAtMs: 500 },
  ]);
  t.same(r.returnedAtMs, [500, 520], 'the beep on the push after the decision');
  t.ok(Math.abs(r.events[1]!.beepAtMs! - 280) <= TONE_TOLERANCE_MS, `beep at ${r.events[1]!.beepAtMs} ms`);
  t.ok(d.done);
  d.destroy();
});

t.test('frames of 10, 20 or 30 ms and odd sizes decide alike', async (t) => {
  const cases = [
    concatPcm([silence(200), prompt('hello')]),
    concatPcm([
      silence(300),
      prompt('vm-nobodyavail'),
      prompt('vm-intro'),
      silence(400),
      tone(1000, 250),
      silence(500),
    ]),
  ];
  for (const audio of cases) {
    const base = run(audio);
    for (const size of [80, 240, 97]) {
      const r = run(audio, 40_000, size);
      t.same(
        r.events.map((e) => [e.kind, e.result, e.reason]),
        base.events.map((e) => [e.kind, e.result, e.reason]),
        `${size}-sample frames`,
      );
      r.events.forEach((e, i) =>
        t.ok(
          Math.abs(e.decidedAtMs - base.events[i]!.decidedAtMs) <= 40,
          `${size}-sample frames: decided at ${e.decidedAtMs} vs ${base.events[i]!.decidedAtMs} ms`,
        ),
      );
    }
  }
});

t.test('reset starts over for another answer, its times from the reset', async (t) => {
  const d = new AnsweringMachineDetector();
  const machine = feed(
    d,
    concatPcm([
      silence(300),
      prompt('vm-nobodyavail'),
      prompt('vm-intro'),
      silence(300),
      tone(1000, 300),
      silence(500),
    ]),
  );
  t.match(machine.events, [{ result: 'machine' }, { kind: 'beep' }]);
  d.reset();
  t.equal(d.result, null);
  t.notOk(d.done);
  const human = feed(d, concatPcm([silence(300), prompt('hello')]));
  t.match(human.events, [{ result: 'human' }]);
  t.ok(human.events[0]!.decidedAtMs < 2000, `decided at ${human.events[0]!.decidedAtMs} ms after the reset`);
  d.destroy();
});

t.test(
  'the labelled set: machine precision and recall, human accuracy, decision times and beeps hold their measured floors',
  async (t) => {
    const manifest = loadManifest();
    t.ok(manifest.cases.length >= 100, `${manifest.cases.length} cases`);
    const outcomes = manifest.cases.map((c) => {
      const d = new AnsweringMachineDetector();
      const o = runCase(c, renderCase(c), d);
      d.destroy();
      return o;
    });
    const s = scoreOutcomes(outcomes);
    t.equal(s.machine.cases, 100);
    t.equal(s.human.cases, 100);
    // Measured (bench/results/voicemail.json): precision 95/99, recall 95/100, humans 96/100.
    t.ok(s.machine.precision >= 0.959, `machine precision ${s.machine.precision.toFixed(3)}`);
    t.ok(s.machine.recall >= 0.95, `machine recall ${s.machine.recall.toFixed(3)}`);
    t.ok(s.human.accuracy >= 0.96, `human accuracy ${s.human.accuracy.toFixed(3)}`);
    t.equal(s.confusion.human.unknown + s.confusion.machine.unknown, 0, 'every case decided before the deadline');
    // Times are audio time (samples pushed), not wall time. Measured: human p50 1920 ms, p95 3120 ms (the 2 s goal
    // is not met: bench/voicemail.ts sweeps the trade-off), machine p95 4820 ms; 20 ms of slack, one frame.
    t.ok(s.decisionMs.human.p50! <= 1940, `human decided p50 ${s.decisionMs.human.p50} ms`);
    t.ok(s.decisionMs.human.p95! <= 3140, `human decided p95 ${s.decisionMs.human.p95} ms`);
    t.ok(s.decisionMs.machine.p95! <= 4840, `machine decided p95 ${s.decisionMs.machine.p95} ms`);
    // Beeps: every machine decided as one has its beep reported, within the tone detector's window of the truth.
    t.equal(s.beep.reported, s.machine.truePositives, `${s.beep.reported} beeps reported`);
    t.ok(s.beep.startErrorMs.max! <= TONE_TOLERANCE_MS, `beep start error max ${s.beep.startErrorMs.max} ms`);
    t.ok(s.beep.endErrorMs.max! <= TONE_TOLERANCE_MS, `beep end error max ${s.beep.endErrorMs.max} ms`);
  },
);

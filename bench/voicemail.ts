// Answering-machine detection (src/media/answering-machine.ts) on the labelled set of answered calls
// (test/fixtures/voicemail/manifest.json, audio rendered from asterisk-core-sounds-en-wav prompts, beeps, silences
// and noise): precision and recall of `machine`, accuracy of `human`, the time from the answer to the decision per
// class (p50, p95), the beep's timing error; on the whole set, on the half the thresholds were tuned on (`tune`)
// and on the half they were not (`holdout`). Also: per case group, the silence a person hears after answering
// before the decision, a sweep of the two human-silence thresholds on the tune half (the trade-off between
// machine recall and the human's wait), and the CPU time and heap per 20 ms frame.
// Writes bench/results/voicemail.json.
// Run: node --expose-gc --import tsx bench/voicemail.ts [--errors]
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import {
  ANSWERING_MACHINE_DEFAULTS,
  AnsweringMachineDetector,
  type AnsweringMachineOptions,
} from '../src/media/answering-machine.js';
import {
  type CaseOutcome,
  type SetCase,
  type Split,
  loadManifest,
  percentiles,
  renderCase,
  runCase,
  scoreOutcomes,
} from '../test/fixtures/voicemail/labelled-set.js';
import { measurePerFrame, median } from './measure.js';

const FRAME = 160;
/** The sweep's grid: the silence ending a person's answer is HUMAN_SILENCE_MS + SILENCE_PER_SPEECH x its speech. */
const SWEEP_HUMAN_SILENCE_MS = [150, 200, 250, 300, 350, 400];
const SWEEP_SILENCE_PER_SPEECH = [0.2, 0.3, 0.4, 0.5, 0.6];

const manifest = loadManifest();
const t0 = performance.now();
const set = manifest.cases.map((c) => ({ c, audio: renderCase(c) }));
const renderMs = performance.now() - t0;

function runAll(cases: typeof set, options: Partial<AnsweringMachineOptions> = {}): CaseOutcome[] {
  return cases.map(({ c, audio }) => {
    const d = new AnsweringMachineDetector(options);
    try {
      return runCase(c, audio, d);
    } finally {
      d.destroy();
    }
  });
}

const outcomes = runAll(set);
const bySplit = (split: Split | 'all') => outcomes.filter((o) => split === 'all' || o.split === split);
const scores = {
  all: scoreOutcomes(bySplit('all')),
  tune: scoreOutcomes(bySplit('tune')),
  holdout: scoreOutcomes(bySplit('holdout')),
};

// Per group: how many were right, when they were decided, and for people the silence after their first utterance.
const caseById = new Map<string, SetCase>(manifest.cases.map((c) => [c.id, c]));
const groups = [...new Set(manifest.cases.map((c) => `${c.label}/${c.group}`))].sort().map((key) => {
  const members = outcomes.filter((o) => `${o.label}/${caseById.get(o.id)!.group}` === key);
  const silence = members
    .filter((o) => o.label === 'human' && o.result === 'human')
    .map((o) => o.decidedAtMs - caseById.get(o.id)!.truth.firstUtteranceEndMs!);
  return {
    group: key,
    cases: members.length,
    right: members.filter((o) => o.result === o.label).length,
    decisionMs: percentiles(members.map((o) => o.decidedAtMs)),
    ...(silence.length > 0 ? { silenceAfterAnswerMs: percentiles(silence) } : {}),
  };
});
const humanSilence = percentiles(
  outcomes
    .filter((o) => o.label === 'human' && o.result === 'human')
    .map((o) => o.decidedAtMs - caseById.get(o.id)!.truth.firstUtteranceEndMs!),
);

// The trade-off, on the tune half only (the holdout half stays unseen by the choice of thresholds).
const tuneSet = set.filter(({ c }) => c.split === 'tune');
const sweep = SWEEP_HUMAN_SILENCE_MS.flatMap((humanSilenceMs) =>
  SWEEP_SILENCE_PER_SPEECH.map((silencePerSpeech) => {
    const s = scoreOutcomes(runAll(tuneSet, { humanSilenceMs, silencePerSpeech }));
    return {
      humanSilenceMs,
      silencePerSpeech,
      machinePrecision: round3(s.machine.precision),
      machineRecall: round3(s.machine.recall),
      humanAccuracy: round3(s.human.accuracy),
      humanDecisionP50Ms: s.decisionMs.human.p50,
      humanDecisionP95Ms: s.decisionMs.human.p95,
    };
  }),
);

// The rule the defaults were chosen by, rerun: among the grid's points whose tune-half machine recall is at least
// CHOICE_MIN_RECALL, and so are their neighbours' in the grid (a point on the edge of a cliff is not robust), the
// one deciding humans soonest (p95, then p50). Precision does not separate the points: its misses on the tune half
// are people talking on past MACHINE_GREETING_MS, whatever the silence thresholds.
const CHOICE_MIN_RECALL = 0.95;
const at = (b: number, k: number) =>
  sweep.find(
    (r) => r.humanSilenceMs === SWEEP_HUMAN_SILENCE_MS[b] && r.silencePerSpeech === SWEEP_SILENCE_PER_SPEECH[k],
  );
const robust = sweep.filter((r) => {
  const b = SWEEP_HUMAN_SILENCE_MS.indexOf(r.humanSilenceMs);
  const k = SWEEP_SILENCE_PER_SPEECH.indexOf(r.silencePerSpeech);
  const around = [at(b, k), at(b - 1, k), at(b + 1, k), at(b, k - 1), at(b, k + 1)].filter((x) => x !== undefined);
  return around.every((x) => x.machineRecall >= CHOICE_MIN_RECALL);
});
const chosen =
  [...robust].sort(
    (x, y) => x.humanDecisionP95Ms! - y.humanDecisionP95Ms! || x.humanDecisionP50Ms! - y.humanDecisionP50Ms!,
  )[0] ?? null;
const chosenIsDefault =
  chosen !== null &&
  chosen.humanSilenceMs === ANSWERING_MACHINE_DEFAULTS.humanSilenceMs &&
  chosen.silencePerSpeech === ANSWERING_MACHINE_DEFAULTS.silencePerSpeech;
const fastest = [...sweep].sort((x, y) => x.humanDecisionP95Ms! - y.humanDecisionP95Ms!)[0]!;

// CPU and heap per frame: the whole set's frames pushed in turn, a detector reset after each case.
const frames = set.flatMap(({ audio }) => {
  const out: Int16Array[] = [];
  for (let i = 0; i + FRAME <= audio.length; i += FRAME) out.push(audio.subarray(i, i + FRAME));
  out.push(new Int16Array(0)); // marks a case's end
  return out;
});
const costDetector = new AnsweringMachineDetector();
const cost = measurePerFrame(
  (i) => {
    const f = frames[i % frames.length]!;
    if (f.length === 0) costDetector.reset();
    else costDetector.push(f);
  },
  { warmup: 5000, frames: frames.length, runs: 5, heapWindow: 2000 },
);
costDetector.destroy();

function round3(x: number): number {
  return Number(x.toFixed(3));
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const ms = (p: { p50: number | null; p95: number | null }) => `p50 ${p.p50} ms, p95 ${p.p95} ms`;
console.log(
  `voicemail detection: ${manifest.cases.length} cases rendered in ${renderMs.toFixed(0)} ms, thresholds ${JSON.stringify(ANSWERING_MACHINE_DEFAULTS)}\n`,
);
for (const [name, s] of Object.entries(scores)) {
  console.log(
    `${name.padEnd(8)} machine precision ${pct(s.machine.precision)} recall ${pct(s.machine.recall)}, human accuracy ${pct(s.human.accuracy)}; ` +
      `decided: human ${ms(s.decisionMs.human)}, machine ${ms(s.decisionMs.machine)}; ` +
      `beep ${s.beep.reported}/${s.beep.expected}, start error ${ms(s.beep.startErrorMs)}, end error ${ms(s.beep.endErrorMs)}`,
  );
}
console.log(`\nsilence a person hears after the first utterance before the human decision: ${ms(humanSilence)}`);
for (const g of groups) {
  console.log(
    `  ${g.group.padEnd(38)} ${g.right}/${g.cases} right, decided ${ms(g.decisionMs)}` +
      (g.silenceAfterAnswerMs ? `, silence after answer ${ms(g.silenceAfterAnswerMs)}` : ''),
  );
}
console.log('\nsweep on the tune half (human silence = base + per-speech x speech):');
for (const r of sweep) {
  console.log(
    `  base ${String(r.humanSilenceMs).padStart(3)} ms, x${r.silencePerSpeech.toFixed(1)}: machine P ${pct(r.machinePrecision)} R ${pct(r.machineRecall)}, ` +
      `human ${pct(r.humanAccuracy)}, human decided p50 ${r.humanDecisionP50Ms} ms p95 ${r.humanDecisionP95Ms} ms`,
  );
}
console.log(
  `chosen on the tune half (recall >= ${pct(CHOICE_MIN_RECALL)} with its grid neighbours, then soonest human decision): ` +
    (chosen === null ? 'none' : `base ${chosen.humanSilenceMs} ms, x${chosen.silencePerSpeech}`) +
    (chosenIsDefault ? ' = the defaults' : ' (NOT the defaults)'),
);
console.log(
  `fastest point of the grid: base ${fastest.humanSilenceMs} ms, x${fastest.silencePerSpeech}: human p95 ${fastest.humanDecisionP95Ms} ms at machine recall ${pct(fastest.machineRecall)}`,
);
console.log(
  `\ncost: ${median(cost.runsNs).toFixed(0)} ns CPU per 20 ms frame, ${cost.bytesPerFrame ?? '-'} heap bytes per frame (run with --expose-gc)`,
);
if (process.argv.includes('--errors'))
  for (const e of scores.all.errors)
    console.log(`${e.id} (${caseById.get(e.id)!.description}): ${e.result} by ${e.reason} at ${e.decidedAtMs} ms`);

mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(
  new URL('./results/voicemail.json', import.meta.url),
  JSON.stringify(
    {
      benchmark: 'voicemail',
      date: new Date().toISOString(),
      node: process.version,
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, loadavg: os.loadavg() },
      set: {
        manifest: 'test/fixtures/voicemail/manifest.json',
        seed: manifest.seed,
        cases: manifest.cases.length,
        renderMs: Math.round(renderMs),
      },
      method:
        'each case fed in 20 ms frames to a fresh detector from the answer on, then silence until it is done; ' +
        'decision times from the answer; percentiles nearest-rank; thresholds chosen on the tune half, holdout never used to choose',
      thresholds: ANSWERING_MACHINE_DEFAULTS,
      scores,
      humanSilenceAfterAnswerMs: humanSilence,
      groups,
      sweepOnTune: sweep,
      choice: {
        rule: `tune-half machine recall >= ${CHOICE_MIN_RECALL} at the point and its grid neighbours, then the lowest human decision p95, then p50`,
        chosen:
          chosen === null ? null : { humanSilenceMs: chosen.humanSilenceMs, silencePerSpeech: chosen.silencePerSpeech },
        chosenIsDefault,
        fastestPoint: fastest,
      },
      cost: {
        nsPerFrame: Math.round(median(cost.runsNs)),
        runsNs: cost.runsNs.map(Math.round),
        bytesPerFrame: cost.bytesPerFrame,
      },
    },
    null,
    2,
  ) + '\n',
);

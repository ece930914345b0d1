// Redaction quality on the labelled set (test/fixtures/redaction/utterances.jsonl): precision and recall per tag of
// the offline rules (no chat model), and the time per utterance. Prints a table; writes bench/results/redaction.json.
// Run: node --import tsx bench/redaction.ts [--errors]
import { mkdirSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { redactText } from '../src/jobs/redaction/redact.js';
import { loadLabelledSet, scoreSet } from '../test/fixtures/redaction/labelled-set.js';

const set = loadLabelledSet();
const REPEATS = 20;
const score = scoreSet(set, (text) => redactText(text).spans);
const t0 = performance.now();
for (let r = 0; r < REPEATS; r++) for (const u of set) redactText(u.text);
const usPerUtterance = ((performance.now() - t0) * 1000) / (REPEATS * set.length);

const pct = (x: number) => `${(x * 100).toFixed(1)}%`.padStart(7);
console.log(`redaction, offline rules: ${score.utterances} utterances (${score.negatives} without PII)\n`);
console.log('tag              expected  found  precision  recall');
for (const [tag, s] of Object.entries(score.perTag)) {
  console.log(
    `${tag.padEnd(16)} ${String(s.expected).padStart(8)} ${String(s.found).padStart(6)}    ${pct(s.precision)} ${pct(s.recall)}`,
  );
}
console.log(
  `${'overall'.padEnd(16)} ${String(score.overall.expected).padStart(8)} ${String(score.overall.found).padStart(6)}    ${pct(score.overall.precision)} ${pct(score.overall.recall)}`,
);
console.log(
  `\nhidden under any tag: ${pct(score.hiddenRecall)}; utterances without PII redacted anyway: ${score.negativesWithFalsePositives}/${score.negatives}`,
);
console.log(`time: ${usPerUtterance.toFixed(1)} us per utterance`);
if (process.argv.includes('--errors'))
  for (const e of score.errors) console.log(`${e.kind} ${e.tag}: "${e.span}" in "${e.text}"`);

mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
const { errors, ...summary } = score;
writeFileSync(
  new URL('./results/redaction.json', import.meta.url),
  JSON.stringify(
    { date: new Date().toISOString(), node: process.version, ...summary, usPerUtterance, errors },
    null,
    2,
  ) + '\n',
);

// The agent schema's vad_* bounds (src/schemas/agents.ts, kept free of native code) against the ranges the native
// VAD accepts (native/src/vad.h, exported as vadLimits): each value the schema lets an agent store must build a
// VAD, and each value past the addon's limit must be refused by the schema too. Fails when either side moves.
import t from 'tap';
import { VAD_LIMITS, Vad, type VadOptions } from '../../src/media/native/vad.js';
import { agentUpdateBody } from '../../src/schemas/agents.js';

const update = agentUpdateBody({ PARLEY_ALLOW_PRIVATE_ENDPOINTS: false });
const RATE = 8000;
/** Past a threshold's maximum by less than any agent would set, more than float rounding. */
const THRESHOLD_STEP = 1e-3;

const FIELDS = [
  { field: 'vad_threshold', option: 'threshold', max: VAD_LIMITS.maxThreshold, step: THRESHOLD_STEP },
  { field: 'vad_prebuffer_duration_ms', option: 'prebufferMs', max: VAD_LIMITS.maxPrebufferMs, step: 1 },
  { field: 'vad_min_speech_duration_ms', option: 'minSpeechMs', max: VAD_LIMITS.maxMinSpeechMs, step: 1 },
  { field: 'vad_min_silence_duration_ms', option: 'minSilenceMs', max: VAD_LIMITS.maxMinSilenceMs, step: 1 },
] as const satisfies readonly { field: string; option: keyof VadOptions; max: number; step: number }[];

function schemaAccepts(field: string, value: number): boolean {
  return update.safeParse({ [field]: value }).success;
}

function vadAccepts(option: keyof VadOptions, value: number): boolean {
  let vad: Vad;
  try {
    vad = new Vad(RATE, { [option]: value });
  } catch (err) {
    if (err instanceof RangeError) return false;
    throw err;
  }
  vad.destroy();
  return true;
}

t.test('the addon exports its limits as a frozen object of positive numbers', async (t) => {
  t.ok(Object.isFrozen(VAD_LIMITS));
  t.same(Object.keys(VAD_LIMITS).sort(), ['maxMinSilenceMs', 'maxMinSpeechMs', 'maxPrebufferMs', 'maxThreshold']);
  for (const v of Object.values(VAD_LIMITS)) t.ok(v > 0, `${v} > 0`);
});

for (const { field, option, max, step } of FIELDS) {
  t.test(`${field}: the schema and the native VAD accept and refuse the same edges`, async (t) => {
    t.ok(vadAccepts(option, max), `the VAD accepts ${option} = vadLimits max ${max}`);
    t.notOk(vadAccepts(option, max + step), `the VAD refuses ${max + step}`);
    t.ok(vadAccepts(option, 0), 'the VAD accepts 0');
    t.notOk(vadAccepts(option, -step), `the VAD refuses ${-step}`);
    t.ok(schemaAccepts(field, max), `the schema accepts ${max}`);
    t.notOk(schemaAccepts(field, max + step), `the schema refuses ${max + step}`);
    t.ok(schemaAccepts(field, 0), 'the schema accepts 0');
    t.notOk(schemaAccepts(field, -step), `the schema refuses ${-step}`);
  });
}

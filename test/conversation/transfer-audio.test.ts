// A transfer to another agent (the built-in transfer tool), checked on the audio itself: the background noise the
// client receives changes from the next utterance (the one playing keeps its bed), and the next user turn hands the
// engine the new agent's vad_prebuffer_duration_ms of audio (TurnTaking.setVadOptions resizes its prebuffer copy).
import t from 'tap';
import type { SpeechEngine } from '../../src/engines/engine.js';
import { Resampler } from '../../src/media/native/resampler.js';
import { noiseBedLoop, seededRandom, type NoiseBed } from '../../src/media/noise.js';
import { config, setup, type Setup } from './harness.js';
import { until } from '../helpers/wait.js';
import { PROBE_FRAME, PROBE_RATE, ProbeEngine } from './probe-engine.js';
import { concatPcm as concat, loadPrompt } from '../media/speech.js';

t.setTimeout(120_000);

const transferTool = {
  id: 'tool_tr',
  name: 'transfer',
  definition: {
    type: 'built_in_transfer_to_agent',
    name: 'transfer',
    description: 'Transfer',
    execution_mode: 'sync',
    agents_to_transfer_to: ['billing'],
  },
};
const billing = (config: Record<string, unknown>) => ({
  orgId: 'org_test',
  project: { id: 'proj_main', name: 'main' },
  agent: { id: 'agent_billing', name: 'billing', enabled: true },
  config,
  tools: [],
});

/** Hands a transfer call to the conversation and waits for its output to reach the engine. */
async function transfer(s: Setup, probe: ProbeEngine): Promise<void> {
  const before = probe.of('submitToolOutput').length;
  probe.toolCall({ responseId: 'resp_tr', callId: 'c_tr', name: 'transfer', arguments: { agent_name: 'billing' } });
  await until(() => probe.of('submitToolOutput').length > before, { what: 'the transfer tool output' });
  if (s.conv.settings?.system_prompt !== 'Billing.') throw new Error('the transfer did not happen');
}

// ---- background noise ----

/** Every audio frame the client is sent (pcm_16000: little-endian int16, the engine's rate), copied. */
function captureSent(s: Setup): Int16Array[] {
  const sent: Int16Array[] = [];
  const send = s.client.sendAudio.bind(s.client);
  s.client.sendAudio = (frame, text) => {
    const ok = send(frame, text);
    if (ok) sent.push(new Int16Array(frame.slice().buffer));
    return ok;
  };
  return sent;
}

/**
 * Where in `bed`'s loop (at PROBE_RATE) `x` is one unbroken stretch of it at `level` (mixed into silence, as
 * NoiseMix does: the scaled sample truncated into the int16 frame); -1 when it is not.
 */
function bedOffset(x: Int16Array, bed: NoiseBed, level: number): number {
  const loop = noiseBedLoop(bed, PROBE_RATE);
  const len = loop.length;
  for (let p = 0; p < len; p++) {
    let i = 0;
    while (i < x.length && x[i] === Math.trunc(loop[(p + i) % len] * level)) i++;
    if (i === x.length) return p;
  }
  return -1;
}

/** The engine speaks `frames` frames of digital silence as response `id`: all the client hears is the noise bed. */
function saySilence(probe: ProbeEngine, id: string, frames: number): void {
  probe.hooks!.onAssistantText(id, 'Silence.');
  probe.hooks!.onAssistantAudio(id, new Int16Array(PROBE_FRAME * frames));
  probe.hooks!.onResponseDone(id);
}

t.test(
  "transfer to agent: the next utterance is sent over the new agent's noise bed and level; the one playing keeps its own",
  async (t) => {
    const UTTERANCE_FRAMES = 10;
    const PLAYED_BEFORE_TRANSFER = 3;
    const probe = new ProbeEngine();
    const s = setup({ engine: probe });
    s.store.tools.set('transfer', transferTool);
    s.store.agents.set(
      'billing',
      billing({ system_prompt: 'Billing.', background_noise: 'office', background_noise_level: 0.5 }),
    );
    await s.conv.start({
      kind: 'config',
      config: config({
        tools: ['transfer'],
        background_noise: 'coffee-shop',
        background_noise_level: 0.2,
        welcome_message: null,
      }),
    });
    const sent = captureSent(s);
    const finished = (n: number) => {
      for (let i = 0; i < 2 * UTTERANCE_FRAMES && s.client.count('assistant_finished_speaking') < n; i++)
        s.pacing.tick();
      t.equal(s.client.count('assistant_finished_speaking'), n, `utterance ${n} played out`);
    };

    s.conv.handle({ type: 'generate_reply' });
    const before = probe.of('createResponse')[0].id;
    saySilence(probe, before, UTTERANCE_FRAMES);
    for (let i = 1; i < PLAYED_BEFORE_TRANSFER; i++) s.pacing.tick(); // the first frame went out on enqueue
    t.equal(sent.length, PLAYED_BEFORE_TRANSFER, 'part of the first utterance is out when the transfer comes');
    await transfer(s, probe);
    finished(1);
    const first = concat(sent.splice(0));

    s.conv.handle({ type: 'generate_reply' });
    const after = probe.of('createResponse')[1].id;
    saySilence(probe, after, UTTERANCE_FRAMES);
    finished(2);
    const second = concat(sent.splice(0));
    await s.conv.end('user');

    t.equal(first.length, UTTERANCE_FRAMES * PROBE_FRAME);
    t.equal(second.length, UTTERANCE_FRAMES * PROBE_FRAME);
    t.not(
      bedOffset(first, 'coffee-shop', 0.2),
      -1,
      'the utterance playing at the transfer: coffee-shop at 0.2 throughout, unbroken',
    );
    t.equal(bedOffset(first, 'office', 0.5), -1, 'none of it is office');
    t.not(bedOffset(second, 'office', 0.5), -1, 'the next utterance: office at 0.5 throughout');
    t.equal(bedOffset(second, 'coffee-shop', 0.2), -1, 'none of it is coffee-shop');
    // The level is in bedOffset's exact match (each sample is the bed's scaled by exactly that level). An RMS
    // comparison is not: 200 ms of two beds at loop offsets that depend on timing differ by more than 0.2 vs 0.5.
  },
);

// ---- prebuffer ----

const INPUT_FRAME = PROBE_FRAME; // pcm_16000 in: the engine's rate, so what the engine gets is the input as sent
const LEAD_MS = 1500;
const TAIL_MS = 1200;
const NOISE_AMPLITUDE = 40;

/** A speech prompt at 16 kHz after LEAD_MS and before TAIL_MS of low seeded noise (so every sample is telling). */
function userInput(): Int16Array {
  const prompt = loadPrompt('vm-goodbye');
  const up = new Resampler(8000, PROBE_RATE, prompt.length);
  const speech = new Int16Array(up.maxOutput(prompt.length));
  const m = up.process(prompt, speech);
  up.destroy();
  const lead = (PROBE_RATE * LEAD_MS) / 1000;
  const total = lead + m + (PROBE_RATE * TAIL_MS) / 1000;
  const x = new Int16Array(Math.ceil(total / INPUT_FRAME) * INPUT_FRAME);
  x.set(speech.subarray(0, m), lead);
  const random = seededRandom(7);
  for (let i = 0; i < x.length; i++) x[i] += Math.round((random() * 2 - 1) * NOISE_AMPLITUDE);
  return x;
}

interface Append {
  pcm: Int16Array;
  /** Input samples pushed when it came (the frame being pushed included). */
  fed: number;
}

/** The probe, recording the audio the conversation appends and how much input had been pushed by then. */
function appendRecording(probe: ProbeEngine, fed: () => number): { engine: SpeechEngine; appends: Append[] } {
  const appends: Append[] = [];
  const engine: SpeechEngine = {
    name: 'probe',
    open: async (options, hooks) => ({
      ...(await probe.open(options, hooks)),
      appendAudio: (pcm: Int16Array) => void appends.push({ pcm: pcm.slice(), fed: fed() }),
    }),
  };
  return { engine, appends };
}

/** The audio handed to the engine at the start of the user's turn (its first append), and where the input stood. */
async function prebufferHanded(
  first: Record<string, unknown>,
  transferTo: Record<string, unknown> | null,
): Promise<{ got: Int16Array; expected: Int16Array }> {
  const input = userInput();
  let fed = 0;
  const probe = new ProbeEngine();
  const { engine, appends } = appendRecording(probe, () => fed);
  const s = setup({ engine });
  s.store.tools.set('transfer', transferTool);
  s.store.agents.set('billing', billing({ system_prompt: 'Billing.', ...transferTo }));
  await s.conv.start({
    kind: 'config',
    config: config({ tools: ['transfer'], input_format: 'pcm_16000', welcome_message: null, ...first }),
  });
  if (transferTo) await transfer(s, probe);
  while (fed < input.length && s.client.count('user_started_speaking') === 0) {
    const frame = input.subarray(fed, fed + INPUT_FRAME);
    fed += frame.length;
    s.conv.pushAudio(new Uint8Array(frame.slice().buffer));
    s.pacing.tick();
  }
  await s.conv.end('user');
  if (appends.length === 0) throw new Error('the user turn never started');
  const { pcm, fed: at } = appends[0];
  return { got: pcm, expected: input.subarray(Math.max(0, at - pcm.length), at) };
}

t.test(
  "transfer to agent: the next user turn hands the engine the new agent's vad_prebuffer_duration_ms of audio",
  async (t) => {
    const samples = (ms: number) => (PROBE_RATE * ms) / 1000;
    const cases = [
      { name: 'no transfer: 500 ms', first: { vad_prebuffer_duration_ms: 500 }, transferTo: null, ms: 500 },
      {
        name: 'transfer 500 -> 1000 ms (the copy must grow)',
        first: { vad_prebuffer_duration_ms: 500 },
        transferTo: { vad_prebuffer_duration_ms: 1000 },
        ms: 1000,
      },
      {
        name: 'transfer 500 -> 200 ms',
        first: { vad_prebuffer_duration_ms: 500 },
        transferTo: { vad_prebuffer_duration_ms: 200 },
        ms: 200,
      },
    ];
    for (const c of cases) {
      const { got, expected } = await prebufferHanded(c.first, c.transferTo);
      t.equal(got.length, samples(c.ms), `${c.name}: ${samples(c.ms)} samples`);
      t.same(got, expected, `${c.name}: the input audio just before the start decision, sample for sample`);
    }
  },
);

// End to end: a real STS conversation (media worker, scripted engine) with enable_redaction in which the caller says a
// phone number ends; its finish enqueues the post-call pipeline and raises conversation.ended; the jobs run against
// the fake speech and chat servers; and then, through the API: the post-call transcript, the extraction and the task
// results (read before the redaction, which drops the unredacted text), then the redacted transcript with `[PHONE]`
// and the recording bleeped where the number was said; a webhook receiver got conversation.ended and
// conversation.analyzed, signed as the standardwebhooks package verifies. PostgreSQL.
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { createNodeJobQueue } from '../../src/jobs/handlers.js';
import { createJobQueue } from '../../src/jobs/queue.js';
import { evaluationHandler } from '../../src/jobs/evaluation.js';
import { extractionHandler } from '../../src/jobs/extraction.js';
import { postCallTranscriptHandler } from '../../src/jobs/post-call-transcript.js';
import { BLEEP_FREQUENCY_HZ, BLEEP_LEVEL_DBFS } from '../../src/jobs/redaction/bleep.js';
import { WORD_PAD_MS } from '../../src/jobs/redaction/timing.js';
import { newWebhookSecret } from '../../src/jobs/webhooks/signature.js';
import { insertWebhookEndpoint } from '../../src/store/webhooks.js';
import { startFakeChatServer, type ChatStep } from '../fakes/chat-server.js';
import { startFakeSpeechServer, type FakeTranscript } from '../fakes/speech-server.js';
import { api, type ApiClient } from '../helpers/server.js';
import { startRealtimeServer, streamAudio, TestClient, wavPcm } from '../helpers/realtime.js';
import { startReceiver } from './delivery-helpers.js';
import { eventually, quiet } from './helpers.js';

t.setTimeout(240_000);

const PROMPT = '/usr/share/asterisk/sounds/en_US_f_Allison/tt-weasels.wav';
const HEARD = 'my number is 415 555 0132';
const TONE_PEAK = Math.round(32767 * 10 ** (BLEEP_LEVEL_DBFS / 20));
/** A sample louder than this is speech (or the assistant's voice), not the recording's silence. */
const VOICED = 1000;
/** Silence between two stretches of one side's audio that splits them. */
const GAP_MS = 400;

interface Stereo {
  rate: number;
  left: Int16Array;
  right: Int16Array;
}

function parseStereo(file: Buffer): Stereo {
  const wav = file[0] === 0x1f && file[1] === 0x8b ? gunzipSync(file) : file;
  const rate = wav.readUInt32LE(24);
  const frames = (wav.length - 44) / 4;
  const left = new Int16Array(frames);
  const right = new Int16Array(frames);
  for (let i = 0; i < frames; i++) {
    left[i] = wav.readInt16LE(44 + i * 4);
    right[i] = wav.readInt16LE(46 + i * 4);
  }
  return { rate, left, right };
}

/** The stretches [start, end) ms of a side where it is voiced, split at silences of GAP_MS. */
function voicedSpans(pcm: Int16Array, rate: number): [number, number][] {
  const spans: [number, number][] = [];
  const gap = (GAP_MS * rate) / 1000;
  let start = -1;
  let last = -1;
  for (let i = 0; i < pcm.length; i++) {
    if (Math.abs(pcm[i]!) < VOICED) continue;
    if (start >= 0 && i - last > gap) {
      spans.push([start, last + 1]);
      start = -1;
    }
    if (start < 0) start = i;
    last = i;
  }
  if (start >= 0) spans.push([start, last + 1]);
  return spans.map(([a, b]) => [(a * 1000) / rate, (b * 1000) / rate]);
}

/** `text`'s words spread over [fromMs, toMs) of the recording, as a transcription of it would time them. */
function timed(text: string, fromMs: number, toMs: number): FakeTranscript {
  const words = text.split(' ');
  const step = (toMs - fromMs) / words.length;
  return {
    text,
    words: words.map((word, i) => ({ word, start: (fromMs + i * step) / 1000, end: (fromMs + (i + 1) * step) / 1000 })),
  };
}

const window = (pcm: Int16Array, rate: number, fromMs: number, ms: number) =>
  pcm.subarray(Math.round((fromMs * rate) / 1000), Math.round(((fromMs + ms) * rate) / 1000));
const peak = (pcm: Int16Array) => pcm.reduce((m, s) => Math.max(m, Math.abs(s)), 0);
/** Sample for sample the same (tap's deep comparison is far too slow for arrays this long). */
const samePcm = (a: Int16Array, b: Int16Array) =>
  Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
function crossings(pcm: Int16Array): number {
  let n = 0;
  for (let i = 1; i < pcm.length; i++) if (pcm[i - 1]! < 0 !== pcm[i]! < 0) n++;
  return n;
}

async function recording(http: ApiClient, id: string): Promise<Stereo> {
  const conv = (await http.get(`/v1/conversations/${id}?audio_container=wav`)).body.conversation;
  const res = await fetch(conv.audio_url);
  if (res.status !== 200) throw new Error(`recording download: ${res.status}`);
  return parseStereo(Buffer.from(await res.arrayBuffer()));
}

t.test('a redacted conversation through the whole post-call pipeline, with its webhooks', async (t) => {
  const speech = await startFakeSpeechServer();
  const chat = await startFakeChatServer();
  const receiver = await startReceiver();
  const server = await startRealtimeServer({
    env: {
      PARLEY_RECONNECT_GRACE_SEC: '0',
      PARLEY_ENGINE_DEFAULT: 'scripted',
      PARLEY_STT_BASE_URL: speech.baseUrl,
      PARLEY_LLM_BASE_URL: chat.baseUrl,
      PARLEY_LLM_MODEL: 'judge-1',
    },
  });
  const jobs = createNodeJobQueue({ sql: server.sql, settings: server.settings, log: quiet, pollMs: 50 });
  t.teardown(async () => {
    await jobs.stop();
    await server.close();
    await receiver.close();
    await speech.close();
    await chat.close();
  });
  const http = api(server);

  t.equal(
    (
      await http.post('/v1/extraction_schemas', {
        name: 'callback',
        prompt: 'Does the caller want a callback?',
        fields: [{ name: 'wants_callback', type: 'bool', description: null }],
      })
    ).status,
    201,
  );
  t.equal(
    (
      await http.post(`/v1/projects/${server.projectId}/conversation_eval_prompts`, {
        name: 'tone',
        prompt: 'Was the assistant friendly?',
      })
    ).status,
    201,
  );
  // The receiver is plain HTTP on loopback, which the API refuses for an endpoint: stored as the API would store it.
  const secret = newWebhookSecret();
  await insertWebhookEndpoint(
    server.sql,
    {
      orgId: server.orgId,
      projectId: server.projectId,
      url: receiver.url,
      description: null,
      events: ['conversation.ended', 'conversation.analyzed', 'conversation.failed'],
      secret,
    },
    20,
  );
  chat.fallback = (req): ChatStep => {
    const format = (req.body.response_format as { json_schema?: { name?: string } } | undefined)?.json_schema?.name;
    if (format === 'extraction') return { reply: { content: JSON.stringify({ wants_callback: true }) } };
    if (format === 'personal_data') return { reply: { content: JSON.stringify({ entities: [] }) } };
    const question = String(req.body.messages[1]?.content);
    return {
      reply: { content: JSON.stringify({ verdict: question.includes('(note)') ? 'pass' : 'fail', reason: 'judged' }) },
    };
  };

  // ---- the call ----
  const c = await TestClient.open(`${server.wsUrl}/v1/sts/ws`, { authorization: `Bearer ${server.apiKey}` });
  c.send({
    type: 'config',
    input_format: 'pcm_8000',
    output_format: 'pcm_8000',
    welcome_message: 'Hello, how can I help?',
    enable_redaction: true,
    tasks: [{ name: 'note', description: 'Note the number the caller gives.' }],
    scripted_engine: { turns: [{ heard: HEARD, say: 'Thanks, noted.' }] },
  });
  await c.untilEvent('assistant_finished_speaking');
  const id = String(c.events('conversation_created')[0]?.conversation_id);
  const prompt = wavPcm(readFileSync(PROMPT));
  const speechPcm = new Int16Array(4000 + prompt.length);
  speechPcm.set(prompt, 4000);
  await streamAudio(c, speechPcm, 8000, { keepGoing: () => c.events('assistant_finished_speaking').length < 2 });
  t.match(c.events('input_text').at(-1), { type: 'input_text', text: HEARD }, 'the engine heard the number');
  c.close();
  const ended = await server.endedConversation(id);
  t.equal(ended.ended_by, 'user');

  // ---- the transcript, extraction and evaluations, before the redaction ----
  const original = await recording(http, id);
  const [userSpan] = voicedSpans(original.left, original.rate);
  const assistantSpans = voicedSpans(original.right, original.rate);
  t.ok(userSpan && assistantSpans.length >= 2, 'the recording holds the caller and the assistant');
  const welcome = assistantSpans[0]!;
  const answer = assistantSpans.at(-1)!;
  speech.transcripts.push(timed(HEARD, userSpan![0], userSpan![1]), {
    text: 'Hello, how can I help? Thanks, noted.',
    words: [
      ...timed('Hello, how can I help?', welcome[0], welcome[1]).words,
      ...timed('Thanks, noted.', answer[0], answer[1]).words,
    ],
  });
  const analysis = createJobQueue({
    sql: server.sql,
    settings: server.settings,
    log: quiet,
    handlers: [postCallTranscriptHandler(), extractionHandler(), evaluationHandler()],
  });
  t.equal(await analysis.drain(), 3, 'the transcript, the extraction and the evaluations ran');

  let conv = (await http.get(`/v1/conversations/${id}`)).body.conversation;
  t.match(
    conv.post_call.jobs,
    [
      { kind: 'post_call_transcript', status: 'done' },
      { kind: 'extraction', status: 'done' },
      { kind: 'evaluation', status: 'done' },
      { kind: 'redact', status: 'pending' },
      { kind: 'conversation_analyzed', status: 'pending' },
    ],
    'redaction (enabled) and the analysis event wait for them',
  );
  t.equal(
    conv.post_call_transcript,
    `assistant: Hello, how can I help?\nuser: ${HEARD}\nassistant: Thanks, noted.`,
    'the post-call transcript',
  );
  t.same(
    conv.items.map((i: { role: string; post_call_transcript: string | null }) => [i.role, i.post_call_transcript]),
    [
      ['assistant', 'Hello, how can I help?'],
      ['user', HEARD],
      ['assistant', 'Thanks, noted.'],
    ],
    "each item's post-call transcript",
  );
  const extractions = (await http.get(`/v1/conversations/${id}/extractions`)).body.extractions;
  t.match(extractions, [{ schema: { name: 'callback' }, result: { wants_callback: true } }], 'the extraction');
  t.same(
    conv.task_results,
    {
      tone: { verdict: 'fail', reason: 'judged', kind: 'eval_prompt' },
      note: { verdict: 'pass', reason: 'judged', kind: 'task' },
    },
    'the task results',
  );

  // ---- the rest of the pipeline: redaction, the analysis event, the webhook deliveries ----
  await jobs.start();
  await eventually('the pipeline settled and both events were delivered', async () => {
    conv = (await http.get(`/v1/conversations/${id}`)).body.conversation;
    return conv.post_call.jobs.every((j: { status: string }) => j.status === 'done') && receiver.requests.length >= 2;
  });
  t.equal(conv.is_redacted, true);
  t.equal(
    conv.redacted_transcript,
    'assistant: Hello, how can I help?\nuser: my number is [PHONE]\nassistant: Thanks, noted.',
    'the redacted transcript',
  );
  t.equal(conv.items[1].redacted_transcript, 'my number is [PHONE]');
  t.same(
    [
      conv.live_transcript,
      conv.post_call_transcript,
      conv.items[1].live_transcript,
      conv.items[1].post_call_transcript,
    ],
    [null, null, null, null],
    'the unredacted text is gone',
  );
  t.notOk(JSON.stringify(conv).includes('0132'), 'the number is nowhere in the record');
  t.match(
    (await http.get(`/v1/conversations/${id}/extractions`)).body.extractions,
    [{ result: { wants_callback: true } }],
    'the extraction stays',
  );

  // The number's words (the last three of six) are the tone on the caller's channel; the rest is as recorded.
  const bleeped = await recording(http, id);
  t.equal(bleeped.left.length, original.left.length, 'the recording keeps its length');
  const word = (userSpan![1] - userSpan![0]) / 6;
  const numberFrom = userSpan![0] + 3 * word - WORD_PAD_MS;
  const numberTo = userSpan![1] + WORD_PAD_MS;
  const inside = window(bleeped.left, bleeped.rate, numberFrom + 20, numberTo - numberFrom - 40);
  t.ok(Math.abs(peak(inside) - TONE_PEAK) <= 2, `the number is the tone's level (${peak(inside)})`);
  const expected = (2 * BLEEP_FREQUENCY_HZ * inside.length) / bleeped.rate;
  t.ok(
    Math.abs(crossings(inside) - expected) <= 4,
    `at the tone's frequency (${crossings(inside)} zero crossings, ${expected} expected)`,
  );
  t.ok(
    peak(window(original.left, original.rate, numberFrom + 20, numberTo - numberFrom - 40)) > VOICED,
    'where the caller spoke',
  );
  t.ok(
    samePcm(
      window(bleeped.left, bleeped.rate, userSpan![0], 2 * word),
      window(original.left, original.rate, userSpan![0], 2 * word),
    ),
    '"my number" is as recorded',
  );
  t.ok(samePcm(bleeped.right, original.right), "the assistant's channel is as recorded");

  // ---- the webhooks ----
  const events = receiver.requests.map(
    (r) =>
      new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as {
        type: string;
        data: Record<string, unknown>;
      },
  );
  t.same(
    events.map((e) => e.type),
    ['conversation.ended', 'conversation.analyzed'],
    'ended, then analyzed; each signature verifies',
  );
  t.match(events[0], {
    data: { conversation_id: id, project_id: server.projectId, ended_by: 'user', origin: 'direct', agent: null },
  });
  t.same(
    events[1]!.data.analysis,
    {
      post_call_transcript: { status: 'done' },
      extraction: { status: 'done' },
      evaluation: { status: 'done' },
      redact: { status: 'done' },
    },
    'the analysis event says how each part ended',
  );
  t.notOk(
    receiver.requests.some((r) => r.body.includes('0132')),
    'no event carries what was said',
  );
});

// The post_call_transcript job against the fake speech server, on PGlite and PostgreSQL: each side of the stored
// recording transcribed with word timestamps (silence never sent), the words split into the items by their time
// spans, the record's and the items' post_call_transcript and the words stored; a `.wav.gz` read as well; a
// failing model retried; the skipped reasons (no model, zero data retention, audio deleted, no recording).
import t from 'tap';
import { createJobQueue } from '../../src/jobs/queue.js';
import { jobHandlers } from '../../src/jobs/handlers.js';
import type { Settings } from '../../src/config.js';
import { deleteConversationContent } from '../../src/store/conversations.js';
import { listJobs } from '../../src/store/jobs.js';
import { postCallWords } from '../../src/store/post-call.js';
import { startFakeSpeechServer } from '../fakes/speech-server.js';
import { api, DB_KINDS, startTestServer, type TestServer } from '../helpers/server.js';
import { storeEndedConversation } from './conversations.js';
import { stereoWav, toneSpans } from './recordings.js';
import { quiet } from './helpers.js';

t.setTimeout(240_000);

const RATE = 16_000;
const T0 = new Date('2026-11-27T10:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

/** A six-second call: the user speaks 1.0-3.0 s, the assistant 3.5-5.0 s (its items say so too). */
function call(
  server: TestServer,
  opts: {
    format?: 'wav' | 'wav.gz';
    settings?: Parameters<typeof storeEndedConversation>[1]['settings'];
    recording?: boolean;
  } = {},
) {
  return storeEndedConversation(server, {
    startedAt: T0,
    endedAt: at(6000),
    settings: opts.settings,
    items: [
      { role: 'user', live_transcript: 'hallo there', duration_ms: 2000, started_at: at(1000) },
      { role: 'assistant', live_transcript: 'How can I help?', duration_ms: 1500, started_at: at(3500) },
      { role: 'user', live_transcript: null, duration_ms: 500, started_at: at(5300) },
    ],
    liveTranscript: 'user: hallo there\nassistant: How can I help?',
    recording:
      opts.recording === false
        ? undefined
        : {
            wav: stereoWav(toneSpans(6, RATE, [[1, 3]]), toneSpans(6, RATE, [[3.5, 5]]), RATE),
            format: opts.format,
            sampleRate: RATE,
          },
  });
}

for (const db of DB_KINDS) {
  t.test(`post-call transcript on ${db}`, async (t) => {
    const speech = await startFakeSpeechServer();
    t.teardown(() => speech.close());
    const server = await startTestServer({
      db,
      env: { PARLEY_STT_BASE_URL: speech.baseUrl, PARLEY_STT_API_KEY: 'stt-key' },
    });
    t.teardown(() => server.close());
    const http = api(server);
    const queue = (settings: Settings = server.settings) =>
      createJobQueue({ sql: server.sql, settings, log: quiet, handlers: jobHandlers(), pin: null, maxAttempts: 2 });
    const jobOf = async (id: string) =>
      (await listJobs(server.sql, 'post_call_transcript')).find((j) => j.conversation_id === id)!;

    t.test('each side transcribed; the words split into the items; record, items and words stored', async (t) => {
      const id = await call(server, { settings: { default_language: 'de', boosted_keywords: ['Parley', 'SKU'] } });
      speech.transcriptions.length = 0;
      speech.transcripts.push(
        {
          text: 'Hello there. Later.',
          words: [
            { word: 'Hello', start: 1.1, end: 1.5 },
            { word: 'there', start: 1.6, end: 2.0 },
            { word: 'later', start: 5.4, end: 5.7 },
          ],
        },
        {
          text: 'How can I help?',
          words: [
            { word: 'How', start: 3.6, end: 3.8 },
            { word: 'can', start: 3.8, end: 4.0 },
            { word: 'I', start: 4.0, end: 4.1 },
            { word: 'help', start: 4.1, end: 4.6 },
          ],
        },
      );
      t.equal(await queue().drain(), 4, 'transcript, extraction, evaluation, the analysis event');
      t.match(await jobOf(id), { status: 'done', attempts: 1, detail: { words: 7, requests: 2, duration_ms: 6000 } });

      t.equal(speech.transcriptions.length, 2, 'one request per side');
      for (const r of speech.transcriptions) {
        t.match(r.fields, {
          model: 'whisper-1',
          response_format: 'verbose_json',
          'timestamp_granularities[]': 'word',
          language: 'de',
          prompt: 'Parley, SKU',
        });
        t.equal(r.authorization, 'Bearer stt-key');
        t.equal(r.file.bytes.readUInt16LE(22), 1, 'one side: mono');
        t.equal(r.file.bytes.readUInt32LE(24), RATE, 'at the recording rate');
        t.equal(r.file.bytes.length, 44 + 6 * RATE * 2, 'the whole side');
      }
      const user = speech.transcriptions[0].file.bytes;
      t.equal(
        user.readInt16LE(44 + 2 * RATE * 2 + 2),
        toneSpans(6, RATE, [[1, 3]])[2 * RATE + 1],
        'the left channel is the user',
      );

      const conv = (await http.get(`/v1/conversations/${id}`)).body.conversation;
      t.equal(conv.post_call_transcript, 'user: Hello there\nassistant: How can I help\nuser: later');
      t.same(
        conv.items.map((i: { post_call_transcript: string | null }) => i.post_call_transcript),
        ['Hello there', 'How can I help', 'later'],
      );
      t.equal(conv.live_transcript, 'user: hallo there\nassistant: How can I help?', 'the live transcript stays');
      t.match(conv.post_call.jobs, [
        { kind: 'post_call_transcript', status: 'done', attempts: 1 },
        { kind: 'extraction', status: 'skipped', reason: 'the project has no extraction schemas' },
        { kind: 'evaluation', status: 'skipped', reason: 'no eval prompts in the project and no tasks on the agent' },
      ]);
      const words = await postCallWords(server.sql, id);
      t.same(
        words!.map((w) => [w.role, w.word, w.start_ms, w.end_ms, w.item_id]),
        [
          ['user', 'Hello', 1100, 1500, conv.items[0].id],
          ['user', 'there', 1600, 2000, conv.items[0].id],
          ['assistant', 'How', 3600, 3800, conv.items[1].id],
          ['assistant', 'can', 3800, 4000, conv.items[1].id],
          ['assistant', 'I', 4000, 4100, conv.items[1].id],
          ['assistant', 'help', 4100, 4600, conv.items[1].id],
          ['user', 'later', 5400, 5700, conv.items[2].id],
        ],
        'the words with their times on the recording and their items',
      );

      // Deleting the content drops the words with the transcripts.
      t.equal((await deleteConversationContent(server.sql, id)).kind, 'deleted');
      t.equal(await postCallWords(server.sql, id), null, 'words deleted with the content');
      t.equal((await http.get(`/v1/conversations/${id}`)).body.conversation.post_call_transcript, null);
    });

    t.test('a gzipped recording, a silent side never sent', async (t) => {
      const id = await storeEndedConversation(server, {
        startedAt: T0,
        endedAt: at(2000),
        items: [{ role: 'assistant', live_transcript: 'Hi.', duration_ms: 1000, started_at: at(500) }],
        recording: {
          wav: stereoWav(new Int16Array(2 * RATE), toneSpans(2, RATE, [[0.5, 1.5]]), RATE),
          format: 'wav.gz',
          sampleRate: RATE,
        },
      });
      speech.transcriptions.length = 0;
      speech.transcripts.push('Hi there');
      await queue().drain();
      t.match(await jobOf(id), { status: 'done', detail: { requests: 1, words: 2 } });
      t.equal(speech.transcriptions.length, 1, 'the silent user side was not sent');
      const conv = (await http.get(`/v1/conversations/${id}`)).body.conversation;
      t.equal(conv.post_call_transcript, 'assistant: Hi there');
      t.equal(conv.items[0].post_call_transcript, 'Hi there');
    });

    t.test('a failing model: retried with its error, then parked', async (t) => {
      const id = await call(server);
      speech.failTranscription = 503;
      t.teardown(() => void (speech.failTranscription = null));
      const q = queue();
      await q.drain();
      const job = await jobOf(id);
      t.equal(job.status, 'pending', 'to be retried');
      t.match(job.error, /HTTP 503/);
      t.equal(
        (await listJobs(server.sql, 'extraction')).find((j) => j.conversation_id === id)!.status,
        'pending',
        'the extraction waits for it',
      );
      await server.sql`update jobs set run_at = now() where id = ${job.id}`;
      await q.drain();
      t.match(await jobOf(id), { status: 'failed', attempts: 2, error: /HTTP 503/ }, 'parked after its last attempt');
      t.match(
        (await listJobs(server.sql, 'extraction')).find((j) => j.conversation_id === id),
        { status: 'skipped' },
        'then the extraction ran',
      );
      const conv = (await http.get(`/v1/conversations/${id}`)).body.conversation;
      t.match(conv.post_call.jobs[0], {
        kind: 'post_call_transcript',
        status: 'failed',
        attempts: 2,
        error: /HTTP 503/,
      });
    });

    t.test('skipped, with the reason', async (t) => {
      const noStt = await call(server);
      await queue({ ...server.settings, PARLEY_STT_BASE_URL: undefined }).drain();
      t.match(await jobOf(noStt), {
        status: 'skipped',
        reason: 'no speech-to-text model is configured (PARLEY_STT_BASE_URL)',
      });

      const zdr = await call(server, { settings: { data_retention_policy: { zero_data_retention: true } } });
      const deleted = await call(server);
      await deleteConversationContent(server.sql, deleted);
      const none = await call(server, { recording: false });
      speech.transcriptions.length = 0;
      await queue().drain();
      t.match(await jobOf(zdr), { status: 'skipped', reason: 'no recording: zero data retention' });
      t.match(await jobOf(deleted), { status: 'skipped', reason: 'no recording: the audio was deleted' });
      t.match(await jobOf(none), { status: 'skipped', reason: 'no recording: none was made' });
      t.equal(speech.transcriptions.length, 0, 'nothing sent');
      const conv = (await http.get(`/v1/conversations/${zdr}`)).body.conversation;
      t.match(conv.post_call.jobs[0], {
        kind: 'post_call_transcript',
        status: 'skipped',
        reason: 'no recording: zero data retention',
      });
      t.equal(conv.post_call.jobs[0].error, undefined);
    });
  });
}

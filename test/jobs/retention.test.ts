// The retention sweep (a recurring job) on PGlite and PostgreSQL, with an injected clock: transcripts (the record's
// and items' texts, the post-call words, tool-call bodies) deleted once `transcripts.delete_after_hours` have passed
// since the end, recordings (rows, then files through a removal job) once `audio_recordings.delete_after_hours`
// have; deletion_info set; a second sweep changes nothing; conversations kept forever (null) untouched.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { createJobQueue } from '../../src/jobs/queue.js';
import { jobHandlers } from '../../src/jobs/handlers.js';
import { RECORDINGS_DIR } from '../../src/media/recording.js';
import { listJobs, ensureRecurringJob } from '../../src/store/jobs.js';
import { postCallWords, replaceExtraction, savePostCallTranscript } from '../../src/store/post-call.js';
import { api, DB_KINDS, startTestServer, type TestServer } from '../helpers/server.js';
import { storeEndedConversation } from './conversations.js';
import { manualClock, quiet } from './helpers.js';
import { stereoWav, toneSpans } from './recordings.js';

t.setTimeout(240_000);

const HOUR_MS = 3_600_000;
const SWEEP_EVERY_MS = 60_000;
const END = new Date('2026-11-20T08:00:00.000Z');

/** An ended conversation with content everywhere: texts, a tool call, post-call words, an extraction, a recording. */
async function fullConversation(server: TestServer, policy: object): Promise<{ id: string; file: string }> {
  const id = await storeEndedConversation(server, {
    startedAt: new Date(END.getTime() - 10_000),
    endedAt: END,
    settings: { data_retention_policy: policy as never },
    liveTranscript: 'user: my card is 4111\nassistant: thanks',
    items: [
      {
        role: 'user',
        live_transcript: 'my card is 4111',
        duration_ms: 1000,
        started_at: new Date(END.getTime() - 9000),
      },
      {
        role: 'assistant',
        live_transcript: 'thanks',
        duration_ms: 500,
        started_at: new Date(END.getTime() - 7000),
        tool_calls: [
          {
            tool: { id: 'tool_x', name: 'lookup' },
            request_body: { card: '4111' },
            response_body: { ok: true },
            timed_out: false,
            error_message: null,
          },
        ],
      },
    ],
    recording: { wav: stereoWav(toneSpans(1, 8000, [[0, 1]]), new Int16Array(8000), 8000), sampleRate: 8000 },
  });
  const [item] = await server.sql<
    { id: string }[]
  >`select id from conversation_items where conversation_id = ${id} order by item_idx limit 1`;
  const saved = await savePostCallTranscript(server.sql, id, {
    text: 'user: my card is 4111',
    items: [{ id: item.id, text: 'my card is 4111' }],
    words: [{ role: 'user', word: '4111', start_ms: 100, end_ms: 400, item_id: item.id }],
  });
  if (saved !== 'saved') throw new Error(`the post-call transcript was not stored: ${saved}`);
  await replaceExtraction(server.sql, id, {
    schemaId: 'conv_extract_schema_x',
    schemaName: 'card',
    result: { last4: '4111' },
    createdAt: END,
  });
  const [rec] = await server.sql<
    { path: string }[]
  >`select path from conversation_recordings where conversation_id = ${id}`;
  return { id, file: join(server.settings.PARLEY_DATA_DIR, RECORDINGS_DIR, rec.path) };
}

for (const db of DB_KINDS) {
  t.test(`retention on ${db}`, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const http = api(server);
    const clock = manualClock(END);
    const queue = createJobQueue({
      sql: server.sql,
      settings: server.settings,
      log: quiet,
      handlers: jobHandlers(),
      pin: null,
      now: clock.now,
    });
    await ensureRecurringJob(server.sql, 'retention_sweep', SWEEP_EVERY_MS, clock.now());

    const timed = await fullConversation(server, {
      zero_data_retention: false,
      transcripts: { delete_after_hours: 24 },
      audio_recordings: { delete_after_hours: 48 },
    });
    const forever = await fullConversation(server, {
      zero_data_retention: false,
      transcripts: { delete_after_hours: null },
      audio_recordings: { delete_after_hours: null },
    });
    const get = async (id: string) => (await http.get(`/v1/conversations/${id}`)).body.conversation;
    /** Runs the sweep (and the jobs it enqueues) at `ms` after the end. */
    const sweepAt = async (ms: number) => {
      clock.set(new Date(END.getTime() + ms));
      await queue.drain();
    };
    const sweepJob = async () => (await listJobs(server.sql, 'retention_sweep'))[0];

    await sweepAt(24 * HOUR_MS - 1);
    let conv = await get(timed.id);
    t.equal(conv.live_transcript, 'user: my card is 4111\nassistant: thanks', 'a millisecond before: kept');
    t.same(conv.deletion_info, { transcripts_deleted_at: null, audio_recordings_deleted_at: null });

    await sweepAt(24 * HOUR_MS + SWEEP_EVERY_MS);
    conv = await get(timed.id);
    t.equal(conv.live_transcript, null, 'the record has no transcript');
    t.equal(conv.post_call_transcript, null);
    t.same(
      conv.items.map((i: { live_transcript: unknown; post_call_transcript: unknown }) => [
        i.live_transcript,
        i.post_call_transcript,
      ]),
      [
        [null, null],
        [null, null],
      ],
      'nor its items',
    );
    t.same(
      conv.items[1].tool_calls.map((c: { request_body: unknown; response_body: unknown }) => [
        c.request_body,
        c.response_body,
      ]),
      [[null, null]],
      'tool-call bodies dropped',
    );
    t.equal(await postCallWords(server.sql, timed.id), null, 'the words deleted');
    t.equal(
      conv.deletion_info.transcripts_deleted_at,
      new Date(END.getTime() + 24 * HOUR_MS + SWEEP_EVERY_MS).toISOString(),
    );
    t.equal(conv.deletion_info.audio_recordings_deleted_at, null, 'the recording is kept longer');
    t.match(conv.audio_url, /^http/, 'still downloadable');
    t.ok(existsSync(timed.file));
    t.match(
      (await http.get(`/v1/conversations/${timed.id}/extractions`)).body.extractions,
      [{ result: { last4: '4111' } }],
      'extraction results are not transcripts',
    );
    t.match(await sweepJob(), { status: 'pending', detail: { transcripts: 1, audio: 0 } });

    await sweepAt(48 * HOUR_MS + 2 * SWEEP_EVERY_MS);
    conv = await get(timed.id);
    t.equal(conv.audio_url, null, 'no recording link');
    t.equal(
      conv.deletion_info.audio_recordings_deleted_at,
      new Date(END.getTime() + 48 * HOUR_MS + 2 * SWEEP_EVERY_MS).toISOString(),
    );
    t.equal(
      (await server.sql`select 1 from conversation_recordings where conversation_id = ${timed.id}`).length,
      0,
      'its row deleted',
    );
    t.notOk(existsSync(timed.file), 'its file removed');
    t.match(await listJobs(server.sql, 'recording_files_removal'), [
      { status: 'done', detail: { files: 1, removed: 1 } },
    ]);
    const transcriptsDeletedAt = conv.deletion_info.transcripts_deleted_at;

    await sweepAt(100 * HOUR_MS);
    conv = await get(timed.id);
    t.equal(conv.deletion_info.transcripts_deleted_at, transcriptsDeletedAt, 'a later sweep changes nothing');
    t.match(await sweepJob(), { status: 'pending', detail: { transcripts: 0, audio: 0, recordings: 0 } });
    t.equal((await listJobs(server.sql, 'recording_files_removal')).length, 1, 'no removal enqueued again');

    // A week after it settled, the removal job itself is deleted; the sweep's own row stays.
    await sweepAt(48 * HOUR_MS + 2 * SWEEP_EVERY_MS + 7 * 24 * HOUR_MS + SWEEP_EVERY_MS);
    t.equal((await listJobs(server.sql, 'recording_files_removal')).length, 0, 'a settled removal job is pruned');
    t.match(await sweepJob(), { status: 'pending', detail: { jobs: 1 } });
    t.equal((await listJobs(server.sql, 'post_call_transcript')).length, 2, "conversations' jobs stay");

    // Hours past what an interval holds compare all the same.
    const huge = await fullConversation(server, {
      zero_data_retention: false,
      transcripts: { delete_after_hours: 2 ** 40 },
      audio_recordings: { delete_after_hours: null },
    });
    const runsBefore = (await sweepJob()).run_at;
    await sweepAt(300 * HOUR_MS);
    t.ok((await sweepJob()).run_at > runsBefore, 'the sweep ran');
    t.equal((await get(huge.id)).live_transcript, 'user: my card is 4111\nassistant: thanks', 'a huge period: kept');
    t.match(
      await sweepJob(),
      { status: 'pending', error: null, detail: { transcripts: 0 } },
      'and the sweep did not fail',
    );

    const kept = await get(forever.id);
    t.equal(kept.live_transcript, 'user: my card is 4111\nassistant: thanks', 'null hours: kept for good');
    t.same(kept.deletion_info, { transcripts_deleted_at: null, audio_recordings_deleted_at: null });
    t.ok(existsSync(forever.file));
    t.same(await postCallWords(server.sql, forever.id), [
      { role: 'user', word: '4111', start_ms: 100, end_ms: 400, item_id: kept.items[0].id },
    ]);
  });
}

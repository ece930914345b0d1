// Conversations repository: what the live engine writes (create, append items, state, finish) reads back as the
// API's record; appends are all or nothing with dense, ordered item_idx, concurrent ones too; cancel and content
// deletion; listing order with ties. Runs on both databases.
import t from 'tap';
import { DB_KINDS, startTestServer } from '../helpers/server.js';
import {
  addRecording,
  appendItems,
  appendItemsBatch,
  cancelConversation,
  ConversationNotFoundError,
  createConversation,
  deleteConversationContent,
  finishConversation,
  getConversation,
  getRecording,
  listConversations,
  updateConversation,
  type Append,
  type NewItem,
} from '../../src/store/conversations.js';
import { conversation as conversationSchema } from '../../src/schemas/conversations.js';

// Two databases, each a fresh server: more than tap's default file timeout on a loaded machine.
t.setTimeout(300_000);

for (const db of DB_KINDS) {
  t.test(`conversations repository on ${db}`, { timeout: 180_000 }, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const { sql, orgId, projectId } = server;

    t.test('a live conversation: created, items appended, active, finished', async (t) => {
      const id = await createConversation(sql, {
        orgId,
        projectId,
        origin: 'telephony-inbound',
        external_id: 'crm-1',
        nodeId: 'node-a',
        call_info: { from_phone_number: 'anonymous', to_phone_number: '+14155550100' },
        settings: {
          model: 'merritt',
          input_format: 'mulaw_8000',
          output_format: 'mulaw_8000',
          template_variables: { customer: 'Ada' },
          boosted_keywords: ['Parley'],
          additional_languages: ['de', 'fr'],
          pronunciation_dictionary: [{ word: 'SQL', pronunciation: 'sequel' }],
          background_noise: 'office',
          background_noise_level: 0.2,
          vad_threshold: 0.5,
          metadata: { ticket: 42 },
          // Form B: this conversation keeps its content (zero data retention keeps none: tests below).
          data_retention_policy: {
            zero_data_retention: false,
            transcripts: { delete_after_hours: 24 },
            audio_recordings: { delete_after_hours: null },
          },
        },
      });
      let got = await getConversation(sql, id);
      t.equal(got?.state, 'created');
      t.equal(got?.record.ended_by, null, 'no terminal cause while in progress');
      t.equal(got?.record.started_at, null);

      const startedAt = new Date('2026-11-22T10:00:00.000Z');
      t.equal(await updateConversation(sql, id, { state: 'active', started_at: startedAt }), true);
      t.equal(
        await updateConversation(sql, id, {
          external_id: 'crm-2',
          settings: { system_prompt: 'Be brief.', template_variables: { customer: 'Ada' } },
        }),
        true,
        'set_external_id and prompt updates while live',
      );
      t.equal(await updateConversation(sql, id, { started_at: new Date(startedAt.getTime() + 5000) }), true);
      await appendItems(sql, id, [
        { role: 'user', live_transcript: 'Hello?', duration_ms: 820, started_at: startedAt },
      ]);
      const [assistantId] = await appendItems(sql, id, [
        {
          role: 'assistant',
          live_transcript: 'Hi Ada, let me look that up.',
          duration_ms: 1500.5,
          started_at: new Date(startedAt.getTime() + 1000),
          voice_id: 'sabrina',
          audio_speed: 1.1,
          tool_calls: [
            {
              tool: { id: 'tool_lookup', name: 'lookup' },
              request_body: { order: 'A-1' },
              response_body: { status: 'shipped' },
              timed_out: false,
              error_message: null,
              integration: null,
              endpoint_method: 'POST',
              endpoint_url: 'https://example.com/orders/A-1',
              endpoint_headers: { 'x-k': 'v' },
              endpoint_timeout_ms: 5000,
              endpoint_called_at: '2026-11-22T10:00:01.500Z',
              query_params: { q: '1' },
              response_status_code: 200,
              tool_call_output_timeout_ms: null,
            },
            {
              tool: { id: 'tool_ws', name: 'client_side' },
              request_body: null,
              response_body: null,
              timed_out: true,
              error_message: 'no tool_call_output within 5000 ms',
              tool_call_output_timeout_ms: 5000,
            },
          ],
        },
      ]);
      t.same(
        await finishConversation(
          sql,
          id,
          {
            ended_by: 'assistant',
            ended_at: new Date(startedAt.getTime() + 3000),
            duration_ms: 3000,
            live_transcript: 'user: Hello?\nassistant: Hi Ada, let me look that up.',
            latencies_ms: [310.5],
            interruptions_count: 1,
          },
          [
            { side: 'both', path: `${id}/both.wav.gz`, format: 'wav.gz', sample_rate: 8000, channels: 2, bytes: 1234 },
            { side: 'user', path: `${id}/user.wav.gz`, format: 'wav.gz', sample_rate: 8000, channels: 1, bytes: 600 },
          ],
        ),
        { ended: true, recordingsStored: true },
      );
      t.match(
        await getRecording(sql, id, 'user'),
        { format: 'wav.gz', channels: 1, bytes: 600 },
        'recordings stored with the finish',
      );
      got = await getConversation(sql, id);
      t.ok(got);
      const r = got!.record;
      t.ok(conversationSchema.safeParse(r).success, 'the record matches the API schema');
      t.equal(got!.state, 'ended');
      t.equal(r.ended_by, 'assistant');
      t.equal(r.duration_ms, 3000);
      t.equal(r.started_at, startedAt.toISOString(), 'started_at is set once');
      t.match(got!.recording, { side: 'both', format: 'wav.gz' });
      t.same(r.call_info, { from_phone_number: 'anonymous', to_phone_number: '+14155550100' });
      t.same(r.analysis.latencies_ms, [310.5]);
      t.equal(r.analysis.interruptions_count, 1);
      t.match(r.analysis.id, /^conv_analysis_/);
      t.same(r.template_variables, { customer: 'Ada' });
      t.same(r.boosted_keywords, ['Parley']);
      t.same(r.additional_languages, ['de', 'fr']);
      t.same(r.pronunciation_dictionary, [{ word: 'SQL', pronunciation: 'sequel' }]);
      t.same(r.metadata, { ticket: 42 });
      t.same(r.data_retention_policy, {
        zero_data_retention: false,
        transcripts: { delete_after_hours: 24 },
        audio_recordings: { delete_after_hours: null },
      });
      t.equal(r.background_noise, 'office');
      t.equal(r.input_format, 'mulaw_8000');
      t.equal(r.items.length, 2);
      t.same(
        r.items.map((i) => [i.item_idx, i.role]),
        [
          [0, 'user'],
          [1, 'assistant'],
        ],
      );
      t.equal(r.items[0].tool_calls, undefined, 'user items carry no tool calls');
      const a = r.items[1];
      t.equal(a.id, assistantId);
      t.equal(a.audio_speed, 1.1);
      t.equal(a.voice_id, 'sabrina');
      t.equal(a.duration_ms, 1500.5);
      t.equal(a.tool_calls?.length, 2);
      t.match(a.tool_calls?.[0], {
        tool: { id: 'tool_lookup', name: 'lookup' },
        request_body: { order: 'A-1' },
        response_body: { status: 'shipped' },
        endpoint_called_at: '2026-11-22T10:00:01.500Z',
        response_status_code: 200,
        endpoint_headers: { 'x-k': 'v' },
      });
      t.match(a.tool_calls?.[1], { timed_out: true, endpoint_called_at: null, tool_call_output_timeout_ms: 5000 });
      t.equal(r.external_id, 'crm-2');
      t.equal(r.system_prompt, 'Be brief.');
      t.equal(
        await updateConversation(sql, id, { state: 'active' }),
        false,
        'an ended conversation does not come back',
      );
      t.equal(await updateConversation(sql, 'conv_missing', { state: 'active' }), false);
    });

    const turn = (text: string, extra: Partial<NewItem> = {}): NewItem => ({
      role: 'user',
      live_transcript: text,
      duration_ms: 10,
      started_at: new Date(),
      ...extra,
    });
    const indexes = async (id: string) =>
      (await getConversation(sql, id))!.record.items.map((i) => [i.item_idx, i.live_transcript]);

    t.test('several items in one append land in order after the earlier ones, created items included', async (t) => {
      const id = await createConversation(sql, { orgId, projectId, origin: 'web', items: [turn('a'), turn('b')] });
      const ids = await appendItems(sql, id, [turn('c'), turn('d', { role: 'assistant' }), turn('e')]);
      t.equal(ids.length, 3);
      t.same(await appendItems(sql, id, []), [], 'an empty append writes nothing');
      t.same(await indexes(id), [
        [0, 'a'],
        [1, 'b'],
        [2, 'c'],
        [3, 'd'],
        [4, 'e'],
      ]);
      t.same(
        (await getConversation(sql, id))!.record.items.slice(2).map((i) => i.id),
        ids,
        'ids in the order given',
      );
    });

    t.test('a tool call lands with its item or neither does', async (t) => {
      const id = await createConversation(sql, { orgId, projectId, origin: 'web' });
      const call = (callId: string) => ({
        id: callId,
        tool: { id: 'tool_x', name: 'x' },
        request_body: 'a string body',
        response_body: { list: [1, 2] },
        timed_out: false,
        error_message: null,
      });
      await appendItems(sql, id, [turn('first', { role: 'assistant', tool_calls: [call('tool_call_once')] })]);
      // The same tool call id again: its insert fails, so the whole append must.
      const err = await appendItems(sql, id, [
        turn('lost user turn'),
        turn('lost', { role: 'assistant', tool_calls: [call('tool_call_fresh'), call('tool_call_once')] }),
      ]).then(
        () => null,
        (e: unknown) => e as Error,
      );
      t.ok(err, 'the append rejects');
      t.match(err?.message, /duplicate key/);
      await appendItems(sql, id, [turn('next')]);
      t.same(
        await indexes(id),
        [
          [0, 'first'],
          [1, 'next'],
        ],
        'no item of the failed append, and no gap it left',
      );
      const calls = await sql<
        { id: string }[]
      >`select id from conversation_tool_calls where conversation_id = ${id} order by id`;
      t.same(
        calls.map((c) => c.id),
        ['tool_call_once'],
        'nor its other tool call',
      );
      const [stored] = (await getConversation(sql, id))!.record.items[0].tool_calls!;
      t.same(
        [stored.request_body, stored.response_body],
        ['a string body', { list: [1, 2] }],
        'jsonb bodies of any JSON kind',
      );
    });

    t.test('an invalid item fails its whole append', async (t) => {
      const id = await createConversation(sql, { orgId, projectId, origin: 'web' });
      const bad = turn('bad', { role: 'system' as NewItem['role'] });
      await t.rejects(appendItems(sql, id, [turn('ok'), bad]), /check constraint/);
      t.same(await indexes(id), []);
      await t.rejects(
        appendItems(sql, id, [
          turn('ok', {
            tool_calls: [
              {
                tool: { id: 'tool_x', name: 'x' },
                request_body: null,
                response_body: null,
                timed_out: false,
                error_message: null,
                endpoint_called_at: 'not a time',
              },
            ],
          }),
        ]),
        RangeError,
        'an unparseable tool call time is refused, not stored as null',
      );
      t.same(await indexes(id), []);
    });

    t.test('an append to a conversation that does not exist rejects and writes nothing', async (t) => {
      const before = await sql`select count(*)::int as n from conversation_items`;
      const err = await appendItems(sql, 'conv_missing', [
        turn('x', {
          tool_calls: [
            {
              tool: { id: 't', name: 't' },
              request_body: null,
              response_body: null,
              timed_out: false,
              error_message: null,
            },
          ],
        }),
      ]).then(
        () => null,
        (e: unknown) => e,
      );
      t.type(err, ConversationNotFoundError);
      t.same(await sql`select count(*)::int as n from conversation_items`, before);
    });

    t.test('concurrent appends keep item_idx dense and ordered, per conversation', async (t) => {
      const CONVERSATIONS = 8;
      const APPENDS = 6;
      const ids = await Promise.all(
        Array.from({ length: CONVERSATIONS }, () => createConversation(sql, { orgId, projectId, origin: 'web' })),
      );
      // Every conversation's appends in order one after another (as the live record chains them), all
      // conversations at once; and the last conversation also takes appends racing each other.
      const racing = ids[CONVERSATIONS - 1];
      await Promise.all([
        ...ids.map(async (id, c) => {
          for (let a = 0; a < APPENDS; a++) await appendItems(sql, id, [turn(`${c}.${a}.0`), turn(`${c}.${a}.1`)]);
        }),
        ...Array.from({ length: APPENDS }, (_, a) =>
          appendItems(sql, racing, [turn(`race.${a}.0`), turn(`race.${a}.1`)]),
        ),
      ]);
      for (const [c, id] of ids.entries()) {
        const items = await indexes(id);
        const count = id === racing ? 4 * APPENDS : 2 * APPENDS;
        t.same(
          items.map(([idx]) => idx),
          Array.from({ length: count }, (_, i) => i),
          `conversation ${c}: dense from 0`,
        );
        const own = items.filter(([, text]) => !String(text).startsWith('race'));
        t.same(
          own.map(([, text]) => text),
          Array.from({ length: 2 * APPENDS }, (_, i) => `${c}.${i >> 1}.${i & 1}`),
          `conversation ${c}: in order`,
        );
        for (let i = 0; i < items.length; i += 2) {
          t.equal(
            String(items[i + 1][1]).slice(0, -1) + '0',
            items[i][1],
            `conversation ${c}: an append's items stay together`,
          );
        }
      }
    });

    t.test('every field of the API record is stored and read back', async (t) => {
      const at = new Date('2026-11-21T09:00:00.000Z');
      const id = await createConversation(sql, {
        orgId,
        projectId,
        origin: 'sdk-js',
        agent: null,
        external_id: 'ext-full',
        started_at: at,
        call_info: { from_phone_number: '+14155550100', to_phone_number: '+14155550101', telephony_call_sid: 'sid' },
        settings: {
          model: 'merritt',
          generate_welcome_message: true,
          is_welcome_message_interruptible: false,
          listen_only: true,
          welcome_message: null,
          template_variables: { a: 'b' },
          input_format: 'pcm_24000',
          output_format: 'pcm_16000',
          background_noise_level: 0.3,
          background_noise: 'call-center',
          boosted_keywords: ['k'],
          pronunciation_dictionary: [],
          min_words_to_interrupt: 3,
          default_language: 'fr',
          additional_languages: ['en'],
          multilingual_mode: 'auto',
          push_to_talk: true,
          no_input_poke_sec: 10,
          no_input_end_conversation_sec: 60,
          no_input_poke_text: 'Hello?',
          system_prompt: 'Be kind.',
          generate_no_input_poke_text: true,
          websocket_timeout_sec: 60.5,
          vad_prebuffer_duration_ms: 300,
          vad_min_speech_duration_ms: 120,
          vad_min_silence_duration_ms: 500,
          vad_threshold: 0.6,
          metadata: { k: 1 },
          enable_watermarking: true,
          data_retention_policy: {
            zero_data_retention: false,
            transcripts: { delete_after_hours: 24 },
            audio_recordings: { delete_after_hours: null },
          },
          enable_assistant_backchannel: true,
          assistant_backchannel_aggressiveness: 0.4,
          languages: ['fr', 'en'],
        },
        finish: {
          ended_by: 'assistant_silence_limit_reached',
          ended_at: new Date(at.getTime() + 60_000),
          duration_ms: 60_000,
          live_transcript: 'l',
          post_call_transcript: 'p',
          redacted_transcript: 'r',
          task_results: { score: 5 },
        },
      });
      const r = (await getConversation(sql, id))!.record;
      t.ok(conversationSchema.safeParse(r).success);
      // Optional fields (`external_storage`) appear only once they have something to say.
      const shape = conversationSchema.shape;
      const required = (Object.keys(shape) as (keyof typeof shape)[]).filter((k) => !shape[k].isOptional());
      t.same(
        required.filter((k) => !(k in r)),
        [],
        'no field of the API record is missing',
      );
      t.match(r, {
        origin: 'sdk-js',
        listen_only: true,
        input_format: 'pcm_24000',
        min_words_to_interrupt: 3,
        default_language: 'fr',
        multilingual_mode: 'auto',
        push_to_talk: true,
        websocket_timeout_sec: 60.5,
        vad_threshold: 0.6,
        assistant_backchannel_aggressiveness: 0.4,
        languages: ['fr', 'en'],
        task_results: { score: 5 },
        post_call_transcript: 'p',
        redacted_transcript: 'r',
        ended_by: 'assistant_silence_limit_reached',
        data_retention_policy: { zero_data_retention: false, transcripts: { delete_after_hours: 24 } },
        call_info: { telephony_call_sid: 'sid' },
      });
    });

    t.test('cancel ends a conversation in progress once', async (t) => {
      const id = await createConversation(sql, {
        orgId,
        projectId,
        origin: 'web',
        state: 'active',
        started_at: new Date(),
      });
      t.equal(await cancelConversation(sql, id), 'canceled');
      const got = await getConversation(sql, id);
      t.equal(got?.record.ended_by, 'user_canceled');
      t.ok(got?.record.ended_at);
      t.ok((got?.record.duration_ms ?? -1) >= 0);
      t.equal(await cancelConversation(sql, id), 'already_ended');
      t.equal(await cancelConversation(sql, 'conv_missing'), 'not_found');
    });

    // What the live side knows when it ends after a cancel (src/conversation/record.ts passes these).
    const late = (transcript: string) => ({
      ended_by: 'user' as const,
      ended_at: new Date(Date.now() + 60_000),
      duration_ms: 99_999,
      live_transcript: transcript,
      latencies_ms: [120, 340.5],
      interruptions_count: 2,
      task_results: { score: 4 },
    });
    const lateWav = (id: string) => ({
      side: 'both' as const,
      path: `${id}.wav`,
      format: 'wav' as const,
      sample_rate: 16000,
      channels: 2,
      bytes: 4444,
      compress_to: 'wav.gz' as const,
    });

    t.test('a finish after a cancel keeps the cancel and stores what the call produced', async (t) => {
      const id = await createConversation(sql, {
        orgId,
        projectId,
        origin: 'web',
        state: 'active',
        started_at: new Date(Date.now() - 5000),
      });
      t.equal(await cancelConversation(sql, id), 'canceled');
      const canceled = (await getConversation(sql, id))!.record;
      t.same(
        await finishConversation(sql, id, late('user: hi\nassistant: hello'), [lateWav(id)]),
        { ended: false, recordingsStored: true },
        'not ended by this finish, but its recording stored',
      );
      const got = (await getConversation(sql, id))!;
      const r = got.record;
      t.equal(got.state, 'ended');
      t.equal(r.ended_by, 'user_canceled', 'the cancel stands');
      t.equal(r.ended_at, canceled.ended_at, "the cancel's ended_at");
      t.equal(r.duration_ms, canceled.duration_ms, "the cancel's duration");
      t.ok(r.duration_ms >= 4000 && r.duration_ms < 60_000, `duration counted by the cancel (${r.duration_ms} ms)`);
      t.equal(r.live_transcript, 'user: hi\nassistant: hello', 'the transcript is stored');
      t.same(r.analysis.latencies_ms, [120, 340.5], 'latencies stored');
      t.equal(r.analysis.interruptions_count, 2, 'interruptions stored');
      t.same(r.task_results, { score: 4 });
      t.match(
        got.recording,
        { side: 'both', path: `${id}.wav`, format: 'wav', bytes: 4444 },
        'the recording row is stored',
      );
      t.ok(conversationSchema.safeParse(r).success, 'the record matches the API schema');
      t.equal(await cancelConversation(sql, id), 'already_ended');
      t.equal(await cancelConversation(sql, 'conv_missing'), 'not_found');
    });

    t.test('recordings deleted after the cancel: a late finish brings no recording or transcript back', async (t) => {
      const id = await createConversation(sql, {
        orgId,
        projectId,
        origin: 'web',
        state: 'active',
        started_at: new Date(),
      });
      t.equal(await cancelConversation(sql, id), 'canceled');
      t.equal((await deleteConversationContent(sql, id)).kind, 'deleted');
      t.same(await finishConversation(sql, id, late('user: secret'), [lateWav(id)]), {
        ended: false,
        recordingsStored: false,
      });
      const got = (await getConversation(sql, id))!;
      t.equal(got.recording, null, 'no recording row');
      t.equal(await getRecording(sql, id, 'both'), null);
      t.equal(got.record.live_transcript, null, 'the deleted transcript stays deleted');
      t.ok(got.record.deletion_info?.audio_recordings_deleted_at, 'still marked deleted');
      t.equal(got.record.ended_by, 'user_canceled');
    });

    t.test('zero data retention: a finish after a cancel stores no transcript and no recording', async (t) => {
      const id = await createConversation(sql, {
        orgId,
        projectId,
        origin: 'web',
        state: 'active',
        started_at: new Date(),
        settings: { data_retention_policy: { zero_data_retention: true } },
      });
      t.equal(await cancelConversation(sql, id), 'canceled');
      t.same(
        await finishConversation(
          sql,
          id,
          { ...late('user: secret'), post_call_transcript: 'p', redacted_transcript: 'r' },
          [lateWav(id)],
        ),
        { ended: false, recordingsStored: false },
      );
      const got = (await getConversation(sql, id))!;
      t.equal(got.recording, null, 'no recording row');
      t.same(
        [got.record.live_transcript, got.record.post_call_transcript, got.record.redacted_transcript],
        [null, null, null],
        'no transcript',
      );
      // Numbers, nothing said: stored under zero data retention as on a first finish.
      t.same(got.record.analysis.latencies_ms, [120, 340.5]);
      t.equal(got.record.ended_by, 'user_canceled');
    });

    t.test('zero data retention: a first finish stores no recording and no transcript', async (t) => {
      const id = await createConversation(sql, {
        orgId,
        projectId,
        origin: 'web',
        state: 'active',
        started_at: new Date(),
        settings: { data_retention_policy: { zero_data_retention: true } },
      });
      t.same(
        await finishConversation(
          sql,
          id,
          { ...late('user: secret'), post_call_transcript: 'p', redacted_transcript: 'r' },
          [lateWav(id)],
        ),
        { ended: true, recordingsStored: false },
        'it ends the conversation and stores no recording',
      );
      const got = (await getConversation(sql, id))!;
      t.equal(got.recording, null, 'no recording row');
      const [{ n }] = await sql<
        { n: number }[]
      >`select count(*)::int as n from conversation_recordings where conversation_id = ${id}`;
      t.equal(n, 0, 'no recording row of any side');
      t.same(
        [got.record.live_transcript, got.record.post_call_transcript, got.record.redacted_transcript],
        [null, null, null],
        'no transcript',
      );
      t.match(
        got.record,
        { ended_by: 'user', duration_ms: 99_999, analysis: { latencies_ms: [120, 340.5], interruptions_count: 2 } },
        'the ending and the numbers are stored',
      );
    });

    t.test('zero data retention: a conversation created already ended (an import) keeps no transcript', async (t) => {
      const id = await createConversation(sql, {
        orgId,
        projectId,
        origin: 'web',
        started_at: new Date(),
        settings: { data_retention_policy: { zero_data_retention: true } },
        finish: { ...late('user: secret'), post_call_transcript: 'p', redacted_transcript: 'r' },
        items: [turn('my secret')],
      });
      const got = (await getConversation(sql, id))!;
      t.same(
        [got.record.live_transcript, got.record.post_call_transcript, got.record.redacted_transcript],
        [null, null, null],
        'no transcript',
      );
      t.equal(got.record.items.length, 1, 'the item is kept');
      t.equal(got.record.items[0].live_transcript, null, 'without its text');
      t.match(
        got.record,
        { ended_by: 'user', analysis: { latencies_ms: [120, 340.5], interruptions_count: 2 } },
        'the ending and the numbers are stored',
      );
    });

    // A conversation marked zero data retention mid-call (a transfer to such an agent: src/conversation/record.ts
    // keepNothing) after items with text were appended: the finish keeps none of it.
    t.test(
      'zero data retention set mid-call: the finish drops the text items and tool calls already hold',
      async (t) => {
        const id = await createConversation(sql, {
          orgId,
          projectId,
          origin: 'web',
          state: 'active',
          started_at: new Date(),
        });
        const call = {
          id: `tool_call_${id}`,
          tool: { id: 'tool_x', name: 'x' },
          request_body: { card: '4111' },
          response_body: { ok: true },
          timed_out: false,
          error_message: null,
        };
        await appendItems(sql, id, [turn('my card is 4111'), turn('noted', { role: 'assistant', tool_calls: [call] })]);
        t.equal(
          await updateConversation(sql, id, { settings: { data_retention_policy: { zero_data_retention: true } } }),
          true,
        );
        t.same(await finishConversation(sql, id, late('user: my card is 4111'), [lateWav(id)]), {
          ended: true,
          recordingsStored: false,
        });
        const got = (await getConversation(sql, id))!;
        t.equal(got.recording, null, 'no recording row');
        t.equal(got.record.live_transcript, null, 'no transcript');
        t.same(
          got.record.items.map((i) => [i.role, i.live_transcript]),
          [
            ['user', null],
            ['assistant', null],
          ],
          'the items stay, without their text',
        );
        const [stored] = got.record.items[1].tool_calls!;
        t.same(
          [stored.tool.name, stored.request_body, stored.response_body],
          ['x', null, null],
          'the tool call stays, without its bodies',
        );
        t.same(got.record.data_retention_policy, { zero_data_retention: true });
      },
    );

    // The text stored before the marking must not stay readable until the finish (which may never come: a worker
    // that dies mid-call).
    t.test(
      'zero data retention set mid-call: the marking drops the text items and tool calls already hold, at once',
      async (t) => {
        const secretCall = (id: string) => ({
          id: `tool_call_${id}`,
          tool: { id: 'tool_x', name: 'x' },
          request_body: { card: '4111' },
          response_body: { ok: true },
          timed_out: false,
          error_message: null,
        });
        const said = (id: string) => [
          turn('my card is 4111', {
            post_call_transcript: 'My card is 4111.',
            redacted_transcript: 'My card is [card].',
          }),
          turn('noted', { role: 'assistant', tool_calls: [secretCall(id)] }),
        ];
        const id = await createConversation(sql, {
          orgId,
          projectId,
          origin: 'web',
          state: 'active',
          started_at: new Date(),
        });
        await appendItems(sql, id, said(id));
        const kept = await createConversation(sql, {
          orgId,
          projectId,
          origin: 'web',
          state: 'active',
          started_at: new Date(),
        });
        await appendItems(sql, kept, said(kept));
        const before = (await getConversation(sql, id))!.record.items;

        t.equal(
          await updateConversation(sql, kept, {
            settings: {
              data_retention_policy: {
                zero_data_retention: false,
                transcripts: { delete_after_hours: 1 },
                audio_recordings: { delete_after_hours: null },
              },
            },
          }),
          true,
        );
        t.equal(
          await updateConversation(sql, id, { settings: { data_retention_policy: { zero_data_retention: true } } }),
          true,
        );

        const got = (await getConversation(sql, id))!;
        t.equal(got.state, 'active', 'still in progress: no finish yet');
        t.same(
          got.record.items.map((i) => [
            i.role,
            i.item_idx,
            i.started_at,
            i.duration_ms,
            i.live_transcript,
            i.post_call_transcript,
            i.redacted_transcript,
          ]),
          before.map((i) => [i.role, i.item_idx, i.started_at, i.duration_ms, null, null, null]),
          'the items stay (roles, times, durations), without their text',
        );
        const [stored] = got.record.items[1].tool_calls!;
        t.same(
          [stored.tool.name, stored.request_body, stored.response_body],
          ['x', null, null],
          'the tool call stays, without its bodies',
        );
        const other = (await getConversation(sql, kept))!.record;
        t.same(
          other.items.map((i) => i.live_transcript),
          ['my card is 4111', 'noted'],
          'a conversation that retains its content keeps it',
        );
        t.same(other.items[1].tool_calls![0].request_body, { card: '4111' });
      },
    );

    t.test('zero data retention: an append stores the items and tool calls without their text', async (t) => {
      const id = await createConversation(sql, {
        orgId,
        projectId,
        origin: 'web',
        state: 'active',
        started_at: new Date(),
      });
      t.equal(
        await updateConversation(sql, id, { settings: { data_retention_policy: { zero_data_retention: true } } }),
        true,
      );
      const kept = await createConversation(sql, {
        orgId,
        projectId,
        origin: 'web',
        state: 'active',
        started_at: new Date(),
      });
      const at = new Date('2026-11-22T10:00:01.000Z');
      const call = (cid: string) => ({
        id: `tool_call_${cid}`,
        tool: { id: 'tool_x', name: 'x' },
        request_body: { card: '4111' },
        response_body: { ok: true },
        timed_out: false,
        error_message: null,
      });
      const said = (cid: string): Append => ({
        conversationId: cid,
        items: [
          turn('my card is 4111', {
            post_call_transcript: 'My card is 4111.',
            redacted_transcript: 'My card is [card].',
            started_at: at,
            duration_ms: 1200,
          }),
          turn('noted', {
            role: 'assistant',
            started_at: new Date(at.getTime() + 1500),
            duration_ms: 800,
            tool_calls: [call(cid)],
          }),
        ],
      });
      // One batch for both: the text is dropped per conversation.
      const out = await appendItemsBatch(sql, [said(id), said(kept)]);
      t.notOk(
        out.some((r) => r instanceof Error),
        'both appends stored',
      );
      const got = (await getConversation(sql, id))!.record;
      t.same(
        got.items.map((i) => [
          i.role,
          i.item_idx,
          i.started_at,
          i.duration_ms,
          i.live_transcript,
          i.post_call_transcript,
          i.redacted_transcript,
        ]),
        [
          ['user', 0, '2026-11-22T10:00:01.000Z', 1200, null, null, null],
          ['assistant', 1, '2026-11-22T10:00:02.500Z', 800, null, null, null],
        ],
        'the items are stored (roles, times, durations) without their text',
      );
      const [stored] = got.items[1].tool_calls!;
      t.same(
        [stored.id, stored.tool.name, stored.request_body, stored.response_body],
        [`tool_call_${id}`, 'x', null, null],
        'the tool call is stored without its bodies',
      );
      const other = (await getConversation(sql, kept))!.record;
      t.same(
        other.items.map((i) => [i.live_transcript, i.redacted_transcript]),
        [
          ['my card is 4111', 'My card is [card].'],
          ['noted', null],
        ],
        'a conversation that retains its content keeps it',
      );
      t.same(other.items[1].tool_calls![0].response_body, { ok: true });
    });

    t.test(
      'a second finish of a conversation it ended itself changes nothing it had, fills only what was empty',
      async (t) => {
        const id = await createConversation(sql, {
          orgId,
          projectId,
          origin: 'web',
          state: 'active',
          started_at: new Date(),
        });
        const first = {
          ended_by: 'assistant' as const,
          ended_at: new Date('2026-11-22T12:00:00.000Z'),
          duration_ms: 3000,
          live_transcript: 'assistant: bye',
          latencies_ms: [100],
          interruptions_count: 1,
          task_results: { done: true },
        };
        t.same(await finishConversation(sql, id, first, [{ ...lateWav(id), path: 'first.wav' }]), {
          ended: true,
          recordingsStored: true,
        });
        t.same(
          await finishConversation(sql, id, { ...late('other'), ended_by: 'error', post_call_transcript: 'post' }, [
            { ...lateWav(id), path: 'second.wav' },
          ]),
          { ended: false, recordingsStored: false },
        );
        const got = (await getConversation(sql, id))!;
        t.match(
          got.record,
          {
            ended_by: 'assistant',
            ended_at: '2026-11-22T12:00:00.000Z',
            duration_ms: 3000,
            live_transcript: 'assistant: bye',
            task_results: { done: true },
            analysis: { latencies_ms: [100], interruptions_count: 1 },
          },
          'everything the first finish set is kept',
        );
        t.same(got.record.analysis.latencies_ms, [100], 'latencies not concatenated');
        t.equal(got.record.post_call_transcript, 'post', 'what it left empty is filled in');
        t.match(got.recording, { path: 'first.wav' }, 'the recording of the side is kept');
      },
    );

    t.test('a finish replaces a stored recording of a side, and of two for one side keeps the later', async (t) => {
      const id = await createConversation(sql, { orgId, projectId, origin: 'web', state: 'active' });
      await addRecording(sql, id, {
        side: 'both',
        path: 'y/early.wav',
        format: 'wav',
        sample_rate: 8000,
        channels: 2,
        bytes: 44,
      });
      t.same(
        await finishConversation(sql, id, { ended_by: 'user', ended_at: new Date() }, [
          { side: 'both', path: 'y/first.wav', format: 'wav', sample_rate: 8000, channels: 2, bytes: 50 },
          { side: 'both', path: 'y/second.wav.gz', format: 'wav.gz', sample_rate: 8000, channels: 2, bytes: 20 },
        ]),
        { ended: true, recordingsStored: true },
      );
      t.match(await getRecording(sql, id, 'both'), { path: 'y/second.wav.gz', format: 'wav.gz', bytes: 20 });
    });

    t.test('deleting content keeps the record with deletion_info', async (t) => {
      const live = await createConversation(sql, { orgId, projectId, origin: 'web', state: 'active' });
      t.same(await deleteConversationContent(sql, live), { kind: 'in_progress' });
      const id = await createConversation(sql, {
        orgId,
        projectId,
        origin: 'web',
        started_at: new Date(),
        items: [
          { role: 'user', live_transcript: 'secret', duration_ms: 100, started_at: new Date() },
          {
            role: 'assistant',
            live_transcript: 'noted',
            duration_ms: 100,
            started_at: new Date(),
            tool_calls: [
              {
                tool: { id: 'tool_x', name: 'x' },
                request_body: { card: '4111' },
                response_body: { ok: true },
                timed_out: false,
                error_message: null,
              },
            ],
          },
        ],
        finish: { ended_by: 'user', ended_at: new Date(), live_transcript: 'secret', duration_ms: 100 },
      });
      await addRecording(sql, id, {
        side: 'both',
        path: 'x/both.wav',
        format: 'wav',
        sample_rate: 8000,
        channels: 2,
        bytes: 44,
      });
      await addRecording(sql, id, {
        side: 'both',
        path: 'x/both.wav.gz',
        format: 'wav.gz',
        sample_rate: 8000,
        channels: 2,
        bytes: 30,
      });
      t.match(
        await getRecording(sql, id, 'both'),
        { path: 'x/both.wav.gz', format: 'wav.gz', bytes: 30 },
        'a new file replaces the old',
      );
      const out = await deleteConversationContent(sql, id);
      t.equal(out.kind, 'deleted');
      t.same(out.kind === 'deleted' && out.recordings.map((r) => r.path), ['x/both.wav.gz']);
      const got = await getConversation(sql, id);
      t.equal(got?.record.live_transcript, null);
      t.equal(got?.record.items[0].live_transcript, null);
      t.same(
        got?.record.items[1].tool_calls!.map((c) => [c.tool.name, c.request_body, c.response_body]),
        [['x', null, null]],
        'tool call bodies dropped',
      );
      t.ok(got?.record.deletion_info?.transcripts_deleted_at);
      t.ok(got?.record.deletion_info?.audio_recordings_deleted_at);
      t.equal(got?.recording, null);
      t.same(await deleteConversationContent(sql, 'conv_missing'), { kind: 'not_found' });
    });

    t.test('equal start times are ordered by id, and pages never repeat or skip', async (t) => {
      const [p] = await sql<{ id: string }[]>`
        insert into projects (id, org_id, name) values ('proj_ties', ${orgId}, 'ties') returning id`;
      const at = new Date('2026-11-20T08:00:00.000Z');
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        ids.push(await createConversation(sql, { orgId, projectId: p.id, origin: 'web', started_at: at }));
      }
      const expected = [...ids].sort().reverse();
      const seen: string[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await listConversations(sql, { projectId: p.id, limit: 2, after });
        if (page.kind !== 'page') throw new Error('unexpected');
        seen.push(...page.conversations.map((c) => c.record.id));
        if (!page.next_cursor) break;
        after = page.next_cursor;
      }
      t.same(seen, expected);
      t.same(await listConversations(sql, { projectId: p.id, limit: 2, after: 'conv_nope' }), {
        kind: 'cursor_not_found',
        cursor: 'conv_nope',
      });
    });
  });
}

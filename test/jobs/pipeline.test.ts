// The post-call pipeline as main runs it, on both databases: a phone call's conversation (origin telephony-inbound,
// with call_info, recorded as the media worker records every conversation) created, appended to and finished
// through main's answers to the worker protocol (src/workers/main-handlers.ts); its finish enqueues the pipeline
// and raises conversation.ended in the same transaction; the node's queue runs every job to done; the events reach
// a real HTTP receiver. Also: conversation.failed for a failed ending, one ended event however often a conversation
// is finished, a finish whose events cannot be written not committed, the pipeline without redaction, and the
// external storage requests answered only to the conversation's owner.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { createNodeJobQueue } from '../../src/jobs/handlers.js';
import { BLEEP_LEVEL_DBFS } from '../../src/jobs/redaction/bleep.js';
import { newWebhookSecret } from '../../src/jobs/webhooks/signature.js';
import { createLogger } from '../../src/log.js';
import { recordingPath } from '../../src/media/recording.js';
import {
  finishConversation,
  getConversation,
  type Finish,
  type NewItem,
  type NewRecording,
} from '../../src/store/conversations.js';
import { insertPolicy } from '../../src/store/external-storage-policies.js';
import { listJobs } from '../../src/store/jobs.js';
import { leasePolicy } from '../../src/store/leases.js';
import { insertWebhookEndpoint } from '../../src/store/webhooks.js';
import type { NewConversation } from '../../src/store/conversations.js';
import { createRequestHandler, type RequestOrigin } from '../../src/workers/main-handlers.js';
import type { WorkerReplies, WorkerRequest } from '../../src/workers/worker-protocol.js';
import { startFakeChatServer } from '../fakes/chat-server.js';
import { startFakeSpeechServer } from '../fakes/speech-server.js';
import { DB_KINDS, startTestServer, type TestServer } from '../helpers/server.js';
import { startReceiver } from './delivery-helpers.js';
import { quiet } from './helpers.js';
import { stereoWav, toneSpans, writeRecording } from './recordings.js';

t.setTimeout(300_000);

const RATE = 8000;
const T0 = new Date('2026-11-27T09:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const TONE_PEAK = Math.round(32767 * 10 ** (BLEEP_LEVEL_DBFS / 20));
const CALL_INFO = { from_phone_number: '+14155550100', to_phone_number: '+14155550199' };

type Handle = (
  req: WorkerRequest,
  from?: RequestOrigin,
) => Promise<{ ok: boolean; value?: unknown; error?: { status?: number } }>;

/** main's answer to one request, as a worker would get it. */
async function ask<T extends WorkerRequest['type']>(
  handle: Handle,
  req: Extract<WorkerRequest, { type: T }>,
  from?: RequestOrigin,
): Promise<WorkerReplies[T]> {
  const reply = await handle(req, from);
  if (!reply.ok) throw new Error(`${req.type} refused (${reply.error?.status})`);
  return reply.value as WorkerReplies[T];
}

/** The status main refused a request with (null: answered). */
async function refusal(handle: Handle, req: WorkerRequest, from?: RequestOrigin): Promise<number | null> {
  const reply = await handle(req, from);
  return reply.ok ? null : (reply.error?.status ?? 0);
}

/** A phone call's conversation as the media worker stores it, through main; its id. */
async function phoneCall(
  server: TestServer,
  handle: Handle,
  o: { redaction: boolean; endedBy: Finish['ended_by']; items?: NewItem[]; recording?: Buffer },
): Promise<string> {
  const conversation: NewConversation = {
    orgId: server.orgId,
    projectId: server.projectId,
    origin: 'telephony-inbound',
    call_info: CALL_INFO,
    state: 'active',
    started_at: T0,
    settings: {
      enable_redaction: o.redaction,
      input_format: 'mulaw_8000',
      output_format: 'mulaw_8000',
      tasks: [{ name: 'note', description: 'Note the number.' }],
    },
  };
  const { conversationId: id } = await ask(handle, { type: 'create_conversation', id: 1, conversation });
  if (o.items) await ask(handle, { type: 'append_items', id: 2, conversationId: id, items: o.items });
  const recordings: NewRecording[] = [];
  if (o.recording) {
    const path = writeRecording(server.settings.PARLEY_DATA_DIR, id, o.recording);
    recordings.push({ side: 'both', path, format: 'wav', sample_rate: RATE, channels: 2, bytes: o.recording.length });
  }
  const finish: Finish = {
    ended_by: o.endedBy,
    ended_at: at(5000),
    duration_ms: 5000,
    live_transcript: o.items?.map((i) => `${i.role}: ${i.live_transcript}`).join('\n') ?? null,
  };
  const { ended } = await ask(handle, { type: 'finish_conversation', id: 3, conversationId: id, finish, recordings });
  if (!ended) throw new Error(`the finish of ${id} did not end it`);
  return id;
}

async function deliveries(
  server: TestServer,
  conversationId: string,
): Promise<{ event_type: string; status: string }[]> {
  return server.sql<{ event_type: string; status: string }[]>`select event_type, status from webhook_deliveries
    where conversation_id = ${conversationId} order by created_at, event_type`;
}

for (const db of DB_KINDS) {
  t.test(`the post-call pipeline on ${db}`, async (t) => {
    const speech = await startFakeSpeechServer();
    const chat = await startFakeChatServer();
    const receiver = await startReceiver();
    const server = await startTestServer({
      db,
      env: { PARLEY_STT_BASE_URL: speech.baseUrl, PARLEY_LLM_BASE_URL: chat.baseUrl, PARLEY_LLM_MODEL: 'judge-1' },
    });
    t.teardown(async () => {
      await server.close();
      await receiver.close();
      await speech.close();
      await chat.close();
    });
    const handle: Handle = createRequestHandler({
      sql: server.sql,
      policy: leasePolicy(server.settings),
      log: createLogger('silent'),
      now: () => new Date(),
    });
    const queue = () => createNodeJobQueue({ sql: server.sql, settings: server.settings, log: quiet });
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
    chat.fallback = (req) => {
      const format = (req.body.response_format as { json_schema?: { name?: string } } | undefined)?.json_schema?.name;
      if (format === 'personal_data') return { reply: { content: JSON.stringify({ entities: [] }) } };
      return { reply: { content: JSON.stringify({ verdict: 'pass', reason: 'judged' }) } };
    };
    const verified = () =>
      receiver.requests.map(
        (r) =>
          new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as {
            type: string;
            data: Record<string, any>;
          },
      );

    t.test("a phone call's conversation gets the whole pipeline", async (t) => {
      // The caller speaks 1-3 s, the assistant 3.5-4.5 s of a 5 s call.
      const wav = stereoWav(toneSpans(5, RATE, [[1, 3]]), toneSpans(5, RATE, [[3.5, 4.5]]), RATE);
      const items: NewItem[] = [
        { role: 'user', live_transcript: 'call me at 415 555 0132', duration_ms: 2000, started_at: at(1000) },
        { role: 'assistant', live_transcript: 'Thank you.', duration_ms: 1000, started_at: at(3500) },
      ];
      const id = await phoneCall(server, handle, { redaction: true, endedBy: 'user', items, recording: wav });
      t.same(
        (await listJobs(server.sql)).filter((j) => j.conversation_id === id).map((j) => j.kind),
        ['post_call_transcript', 'extraction', 'evaluation', 'redact', 'conversation_analyzed'],
        'the pipeline, redaction included, enqueued by the finish',
      );
      t.same(
        await deliveries(server, id),
        [{ event_type: 'conversation.ended', status: 'pending' }],
        'conversation.ended enqueued with the finish',
      );

      const word = (w: string, s: number, e: number) => ({ word: w, start: s, end: e });
      speech.transcripts.push(
        {
          text: 'call me at 415 555 0132',
          words: [
            word('call', 1.0, 1.3),
            word('me', 1.3, 1.6),
            word('at', 1.6, 1.9),
            word('415', 2.0, 2.3),
            word('555', 2.3, 2.6),
            word('0132', 2.6, 3.0),
          ],
        },
        { text: 'Thank you.', words: [word('Thank', 3.5, 4.0), word('you.', 4.0, 4.5)] },
      );
      // Model servers are reached through JobContext.modelFetch, customer URLs (webhooks) through JobContext.fetch
      // (the guarded client in production): count each against the peers'.
      const viaModel: string[] = [];
      const viaCustomer: string[] = [];
      const counting =
        (seen: string[]): typeof fetch =>
        (input, init) => {
          seen.push(new URL(input instanceof Request ? input.url : String(input)).pathname);
          return fetch(input, init);
        };
      const before = { stt: speech.transcriptions.length, chat: chat.requests.length, hooks: receiver.requests.length };
      const ran = await createNodeJobQueue({
        sql: server.sql,
        settings: server.settings,
        log: quiet,
        fetch: counting(viaCustomer),
        modelFetch: counting(viaModel),
      }).drain();
      t.ok(ran >= 7, `the five jobs and two deliveries ran (${ran})`);
      const count = (seen: string[], path: string) => seen.filter((p) => p === path).length;
      t.equal(
        count(viaModel, '/v1/audio/transcriptions'),
        speech.transcriptions.length - before.stt,
        'the transcript through JobContext.modelFetch',
      );
      t.equal(
        count(viaModel, '/v1/chat/completions'),
        chat.requests.length - before.chat,
        'the evaluation and the redaction too',
      );
      t.equal(
        count(viaCustomer, '/hook'),
        receiver.requests.length - before.hooks,
        'the webhook deliveries through JobContext.fetch',
      );
      t.equal(viaCustomer.length, count(viaCustomer, '/hook'), 'no model request through the customer client');
      t.ok(
        count(viaModel, '/v1/audio/transcriptions') === 2 &&
          count(viaModel, '/v1/chat/completions') === 2 &&
          count(viaCustomer, '/hook') === 2,
        'each of them made its requests',
      );
      const conv = (await getConversation(server.sql, id))!.record;
      t.match(
        conv.post_call!.jobs.map((j) => [j.kind, j.status]),
        [
          ['post_call_transcript', 'done'],
          ['extraction', 'skipped'],
          ['evaluation', 'done'],
          ['redact', 'done'],
          ['conversation_analyzed', 'done'],
        ],
      );
      t.equal(conv.redacted_transcript, 'user: call me at [PHONE]\nassistant: Thank you.');
      t.match(conv.call_info, CALL_INFO);
      t.same(conv.task_results, { note: { verdict: 'pass', reason: 'judged', kind: 'task' } });
      const [row] = await server.sql<
        { path: string }[]
      >`select path from conversation_recordings where conversation_id = ${id}`;
      t.equal(row!.path, `${id}.redacted.wav`, 'the recording is bleeped');
      const bleeped = readFileSync(recordingPath(server.settings.PARLEY_DATA_DIR, row!.path));
      const leftPeak = (fromS: number, toS: number) => {
        let p = 0;
        for (let f = fromS * RATE; f < toS * RATE; f++) p = Math.max(p, Math.abs(bleeped.readInt16LE(44 + f * 4)));
        return p;
      };
      t.ok(Math.abs(leftPeak(2.1, 2.9) - TONE_PEAK) <= 2, "the number is the tone on the caller's channel");
      t.equal(leftPeak(1.1, 1.8), 8000, 'the words before it are as recorded');

      const events = verified().filter((e) => e.data.conversation_id === id);
      t.same(
        events.map((e) => e.type),
        ['conversation.ended', 'conversation.analyzed'],
      );
      t.match(events[0]!.data, {
        origin: 'telephony-inbound',
        ended_by: 'user',
        duration_ms: 5000,
        started_at: T0.toISOString(),
        ended_at: at(5000).toISOString(),
      });
      t.match(events[1]!.data.analysis, {
        post_call_transcript: { status: 'done' },
        extraction: { status: 'skipped', reason: /no extraction schemas/ },
        evaluation: { status: 'done' },
        redact: { status: 'done' },
      });

      const again = await ask(handle, {
        type: 'finish_conversation',
        id: 4,
        conversationId: id,
        finish: { ended_by: 'error', ended_at: at(9000) },
        recordings: [],
      });
      t.match(again, { ended: false });
      t.equal((await deliveries(server, id)).length, 2, 'a later finish raises nothing more');
    });

    t.test('a failed ending also raises conversation.failed; no redaction job where it is off', async (t) => {
      const id = await phoneCall(server, handle, { redaction: false, endedBy: 'configuration_endpoint_error' });
      t.same((await deliveries(server, id)).map((d) => d.event_type).sort(), [
        'conversation.ended',
        'conversation.failed',
      ]);
      t.notOk(
        (await listJobs(server.sql, 'redact')).some((j) => j.conversation_id === id),
        'no redact job',
      );
      await queue().drain();
      const events = verified().filter((e) => e.data.conversation_id === id);
      t.same(events.map((e) => e.type).sort(), ['conversation.analyzed', 'conversation.ended', 'conversation.failed']);
      t.match(events.find((e) => e.type === 'conversation.failed')!.data, {
        ended_by: 'configuration_endpoint_error',
        origin: 'telephony-inbound',
      });
      const analyzed = events.find((e) => e.type === 'conversation.analyzed')!;
      t.same(
        Object.keys(analyzed.data.analysis),
        ['post_call_transcript', 'extraction', 'evaluation'],
        'the analysis without redaction',
      );
    });

    t.test('events that cannot be written fail the finish: nothing of it commits', async (t) => {
      const { conversationId: id } = await ask(handle, {
        type: 'create_conversation',
        id: 5,
        conversation: {
          orgId: server.orgId,
          projectId: server.projectId,
          origin: 'telephony-outbound',
          call_info: CALL_INFO,
          state: 'active',
          started_at: T0,
        },
      });
      await t.rejects(
        finishConversation(server.sql, id, { ended_by: 'user', ended_at: at(1000) }, [], {
          onFirstFinish: async () => {
            throw new Error('no room for events');
          },
        }),
        /no room for events/,
      );
      const conv = (await getConversation(server.sql, id))!;
      t.equal(conv.state, 'active', 'the conversation did not end');
      t.same(
        (await listJobs(server.sql)).filter((j) => j.conversation_id === id),
        [],
        'no jobs',
      );
      t.match(
        await ask(handle, {
          type: 'finish_conversation',
          id: 6,
          conversationId: id,
          finish: { ended_by: 'user', ended_at: at(1000) },
          recordings: [],
        }),
        { ended: true },
        'finished again, it ends',
      );
      t.same(
        (await deliveries(server, id)).map((d) => d.event_type),
        ['conversation.ended'],
      );
    });

    t.test(
      'external storage: the policy, outcomes and record only for the worker owning the conversation',
      async (t) => {
        const { conversationId: id } = await ask(handle, {
          type: 'create_conversation',
          id: 7,
          conversation: {
            orgId: server.orgId,
            projectId: server.projectId,
            origin: 'telephony-inbound',
            call_info: CALL_INFO,
            state: 'active',
            settings: { data_retention_policy: { zero_data_retention: true } },
          },
        });
        const inserted = await insertPolicy(server.sql, server.orgId, server.projectId, {
          name: 'vault',
          endpoint_url: 'https://s3.example.com',
          bucket: 'b1',
          region: null,
          key_prefix: 'p/',
          addressing_style: 'path',
          access_key_id: 'AK',
          secret_access_key: 'SK',
        });
        const policyId = (inserted as { id: string }).id;
        const owner: RequestOrigin = { owns: (c) => c === id };
        const stranger: RequestOrigin = { owns: () => false };
        const byName = { type: 'storage_policy' as const, id: 8, conversationId: id, ref: { name: 'vault' } };
        t.equal(await refusal(handle, byName), 403, 'refused without an origin');
        t.equal(await refusal(handle, byName, stranger), 403, 'refused to a worker that does not own it');
        t.match(
          await ask(handle, byName, owner),
          {
            id: policyId,
            bucket: 'b1',
            keyPrefix: 'p/',
            addressingStyle: 'path',
            accessKeyId: 'AK',
            secretAccessKey: 'SK',
          },
          'the owner gets it, credentials included',
        );
        t.match(
          await ask(handle, { type: 'storage_policy', id: 9, conversationId: id, ref: { id: policyId } }, owner),
          { id: policyId },
          'and by id',
        );
        t.equal(
          await ask(handle, { type: 'storage_policy', id: 10, conversationId: id, ref: { name: 'nope' } }, owner),
          null,
          'no such policy',
        );
        const outcome = {
          conversation_id: id,
          artifact: 'recording' as const,
          policy_id: policyId,
          bucket: 'b1',
          object_key: `p/${id}/recording.wav`,
          status: 'failed' as const,
          bytes: null,
          error: 'SlowUpload',
          finished_at: at(2000),
        };
        t.equal(await refusal(handle, { type: 'storage_outcome', id: 11, outcome }, stranger), 403);
        t.equal(await refusal(handle, { type: 'stored_record', id: 11, conversationId: id }, stranger), 403);
        t.same(await ask(handle, { type: 'storage_outcome', id: 12, outcome }, owner), { recorded: true });
        const stored = await ask(handle, { type: 'stored_record', id: 13, conversationId: id }, owner);
        t.match(
          stored,
          {
            id,
            origin: 'telephony-inbound',
            external_storage: {
              deliveries: [
                {
                  artifact: 'recording',
                  status: 'failed',
                  bucket: 'b1',
                  key: `p/${id}/recording.wav`,
                  bytes: null,
                  error: 'SlowUpload',
                },
              ],
            },
          },
          'the outcome is on the record',
        );
      },
    );
  });
}

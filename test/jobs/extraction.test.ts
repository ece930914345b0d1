// The extraction job against the fake chat server, on PGlite and PostgreSQL: every schema of the project asked of
// the model with a JSON-schema response format built from its fields, the answer checked against the field types
// (a wrong one sent back with what is wrong, a bounded number of times), each result stored and listed by the API,
// kept (isDeleted) when its schema is deleted; the post-call transcript preferred to the live one; a rerun on
// request (POST /v1/conversations/{id}/extractions) replacing each schema's result; the skipped reasons.
import t from 'tap';
import { createJobQueue } from '../../src/jobs/queue.js';
import { jobHandlers } from '../../src/jobs/handlers.js';
import { extractionJsonSchema, extractionResultSchema } from '../../src/jobs/extraction-format.js';
import type { Settings } from '../../src/config.js';
import { createConversation } from '../../src/store/conversations.js';
import { listJobs } from '../../src/store/jobs.js';
import { startFakeChatServer } from '../fakes/chat-server.js';
import { api, createWorkspace, DB_KINDS, startTestServer } from '../helpers/server.js';
import { storeEndedConversation } from './conversations.js';
import { quiet } from './helpers.js';

t.setTimeout(240_000);

const T0 = new Date('2026-11-27T10:00:00.000Z');
const ORDER_FIELDS = [
  { name: 'order_id', type: 'string', description: 'the order number' },
  { name: 'quantity', type: 'int', description: null },
  { name: 'weight', type: 'float', description: null },
  { name: 'gift', type: 'bool', description: null },
  { name: 'colors', type: 'string[]', description: 'colours asked for' },
  { name: 'sizes', type: 'int[]', description: null },
] as const;

t.test('the response format and the checks built from the fields', async (t) => {
  t.same(extractionJsonSchema([...ORDER_FIELDS]), {
    type: 'object',
    properties: {
      order_id: { type: ['string', 'null'], description: 'the order number' },
      quantity: { type: ['integer', 'null'] },
      weight: { type: ['number', 'null'] },
      gift: { type: ['boolean', 'null'] },
      colors: { type: ['array', 'null'], items: { type: 'string' }, description: 'colours asked for' },
      sizes: { type: ['array', 'null'], items: { type: 'integer' } },
    },
    required: ['order_id', 'quantity', 'weight', 'gift', 'colors', 'sizes'],
    additionalProperties: false,
  });
  const check = extractionResultSchema([...ORDER_FIELDS]);
  const good = { order_id: 'A-1', quantity: 2, weight: 1.5, gift: false, colors: ['red'], sizes: [38, 39] };
  t.ok(check.safeParse(good).success);
  t.ok(
    check.safeParse({ order_id: null, quantity: null, weight: null, gift: null, colors: null, sizes: null }).success,
    'every field nullable',
  );
  t.notOk(check.safeParse({ ...good, quantity: 2.5 }).success, 'int is whole');
  t.notOk(check.safeParse({ ...good, sizes: [1.5] }).success, 'int[] items whole');
  t.notOk(check.safeParse({ ...good, gift: 'no' }).success, 'bool is boolean');
  t.notOk(check.safeParse({ ...good, extra: 1 }).success, 'no other field');
  const { weight: _, ...missing } = good;
  t.notOk(check.safeParse(missing).success, 'every field required');
});

for (const db of DB_KINDS) {
  t.test(`extraction on ${db}`, async (t) => {
    const chat = await startFakeChatServer();
    t.teardown(() => chat.close());
    const server = await startTestServer({
      db,
      env: { PARLEY_LLM_BASE_URL: chat.baseUrl, PARLEY_LLM_MODEL: 'judge-1', PARLEY_LLM_MAX_RETRIES: '0' },
    });
    t.teardown(() => server.close());
    const http = api(server);
    const queue = (settings: Settings = server.settings) =>
      createJobQueue({ sql: server.sql, settings, log: quiet, handlers: jobHandlers(), pin: null, maxAttempts: 1 });
    const jobOf = async (id: string) =>
      (await listJobs(server.sql, 'extraction')).find((j) => j.conversation_id === id)!;
    const ended = (live: string | null, settings?: Parameters<typeof storeEndedConversation>[1]['settings']) =>
      storeEndedConversation(server, {
        startedAt: T0,
        endedAt: new Date(T0.getTime() + 60_000),
        liveTranscript: live,
        settings,
      });
    /** The chat requests made from here on. */
    const requestsFrom = (n: number) => chat.requests.slice(n);

    await t.test('skipped without schemas', async (t) => {
      const id = await ended('user: hi');
      await queue().drain();
      t.match(await jobOf(id), { status: 'skipped', reason: 'the project has no extraction schemas' });
    });

    const order = await http.post('/v1/extraction_schemas', {
      name: 'order',
      prompt: 'Find the order.',
      fields: ORDER_FIELDS,
    });
    const mood = await http.post('/v1/extraction_schemas', {
      name: 'mood',
      prompt: 'How did the caller feel?',
      fields: [{ name: 'score', type: 'float', description: '0 to 1' }],
    });
    t.equal(order.status, 201);
    t.equal(mood.status, 201);

    t.test('every schema extracted; a wrong answer corrected; results listed', async (t) => {
      const id = await ended('user: I want two red shoes, order A-1\nassistant: Done.');
      const before = chat.requests.length;
      chat.script(
        {
          reply: {
            content: JSON.stringify({
              order_id: 'A-1',
              quantity: 'two',
              weight: null,
              gift: false,
              colors: ['red'],
              sizes: null,
            }),
          },
        },
        {
          reply: {
            content: JSON.stringify({
              order_id: 'A-1',
              quantity: 2,
              weight: null,
              gift: false,
              colors: ['red'],
              sizes: null,
            }),
          },
        },
        { reply: { content: '{"score": 0.8}' } },
      );
      await queue().drain();
      t.match(await jobOf(id), { status: 'done', detail: { schemas: 2, transcript: 'live' } });
      const sent = requestsFrom(before);
      t.equal(sent.length, 3, 'one correction, then the second schema');
      const first = sent[0].body;
      t.equal(first.model, 'judge-1');
      t.match(first.response_format, {
        type: 'json_schema',
        json_schema: { name: 'extraction', strict: true, schema: extractionJsonSchema([...ORDER_FIELDS]) },
      });
      t.match(
        first.messages[1].content,
        /Find the order\.[\s\S]*- quantity \(int\)[\s\S]*user: I want two red shoes, order A-1/,
      );
      const correction = sent[1].body.messages;
      t.equal(correction.length, 4, 'the question, the wrong answer, what was wrong');
      t.equal(correction[2].role, 'assistant');
      t.match(correction[3].content, /not valid: quantity: /);
      const listed = (await http.get(`/v1/conversations/${id}/extractions`)).body.extractions;
      t.match(listed, [
        {
          schema: { id: order.body.id, name: 'order', isDeleted: false },
          result: { order_id: 'A-1', quantity: 2, gift: false, colors: ['red'], weight: null, sizes: null },
        },
        { schema: { id: mood.body.id, name: 'mood', isDeleted: false }, result: { score: 0.8 } },
      ]);
      t.equal(listed.length, 2);

      // Deleting a schema keeps what it extracted.
      t.equal((await http.delete('/v1/extraction_schemas/mood')).status, 200);
      const after = (await http.get(`/v1/conversations/${id}/extractions`)).body.extractions;
      t.match(after[1], { schema: { name: 'mood', isDeleted: true }, result: { score: 0.8 } }, 'kept, marked deleted');

      // A rerun replaces the order schema's result; the deleted schema's stays.
      chat.script({
        reply: {
          content: JSON.stringify({ order_id: 'A-2', quantity: 3, weight: 2.5, gift: true, colors: [], sizes: [40] }),
        },
      });
      const rerun = await http.post(`/v1/conversations/${id}/extractions`);
      t.equal(rerun.status, 202);
      t.same(rerun.body, { success: true });
      t.match(await jobOf(id), { status: 'pending', attempts: 0, detail: null });
      await queue().drain();
      const again = (await http.get(`/v1/conversations/${id}/extractions`)).body.extractions;
      t.equal(again.length, 2, 'one per schema');
      t.match(
        again.find((e: { schema: { name: string } }) => e.schema.name === 'order'),
        { result: { order_id: 'A-2', quantity: 3 } },
      );
      t.match(
        again.find((e: { schema: { name: string } }) => e.schema.name === 'mood'),
        { schema: { isDeleted: true }, result: { score: 0.8 } },
      );
    });

    t.test('the post-call transcript is preferred to the live one', async (t) => {
      const id = await ended('user: live words');
      await server.sql`update conversations set post_call_transcript = 'user: second pass words' where id = ${id}`;
      const before = chat.requests.length;
      chat.script({
        reply: {
          content: JSON.stringify({
            order_id: null,
            quantity: null,
            weight: null,
            gift: null,
            colors: null,
            sizes: null,
          }),
        },
      });
      await queue().drain();
      t.match(await jobOf(id), { status: 'done', detail: { transcript: 'post_call' } });
      t.match(requestsFrom(before)[0].body.messages[1].content, /user: second pass words/);
      t.notMatch(requestsFrom(before)[0].body.messages[1].content, /live words/);
    });

    t.test('an answer wrong every time is the job error', async (t) => {
      const id = await ended('user: hi');
      const before = chat.requests.length;
      chat.script(...Array.from({ length: 3 }, () => ({ reply: { content: 'not json' } })));
      await queue().drain();
      t.equal(requestsFrom(before).length, 3, 'asked three times');
      const job = await jobOf(id);
      t.equal(job.status, 'failed');
      t.match(
        job.error,
        /^extraction schema order: the model's answer did not follow the schema after 3 attempts: it is not JSON/,
      );
      t.same((await http.get(`/v1/conversations/${id}/extractions`)).body.extractions, [], 'nothing stored');
    });

    t.test('skipped without a model or a transcript', async (t) => {
      const noModel = await ended('user: hi');
      await queue({ ...server.settings, PARLEY_LLM_BASE_URL: undefined }).drain();
      t.match(await jobOf(noModel), {
        status: 'skipped',
        reason: 'no chat model is configured (PARLEY_LLM_BASE_URL and PARLEY_LLM_MODEL)',
      });
      const zdr = await ended('user: secret', { data_retention_policy: { zero_data_retention: true } });
      const silent = await ended(null);
      const before = chat.requests.length;
      await queue().drain();
      t.match(await jobOf(zdr), {
        status: 'skipped',
        reason: 'zero data retention: the conversation keeps no transcript',
      });
      t.match(await jobOf(silent), {
        status: 'skipped',
        reason: 'the conversation has no transcript (nothing was said)',
      });
      t.equal(chat.requests.length, before, 'the model was not asked');
    });

    t.test('a rerun: 409 while live, 404 unknown, 403 of another workspace', async (t) => {
      const live = await createConversation(server.sql, {
        orgId: server.orgId,
        projectId: server.projectId,
        origin: 'web',
        state: 'active',
      });
      const r = await http.post(`/v1/conversations/${live}/extractions`);
      t.equal(r.status, 409);
      t.equal(r.body.error.code, 'conversation_in_progress');
      t.equal(
        (await listJobs(server.sql, 'extraction')).filter((j) => j.conversation_id === live).length,
        0,
        'nothing enqueued',
      );
      t.equal((await http.post('/v1/conversations/conv_nope/extractions')).status, 404);
      const other = await createWorkspace(server.sql, `other-extraction-${db}`);
      const theirs = await storeEndedConversation(server, {
        startedAt: T0,
        endedAt: T0,
        orgId: other.orgId,
        projectId: other.projectId,
      });
      t.equal((await http.post(`/v1/conversations/${theirs}/extractions`)).status, 403);
      // A conversation that ended before it had jobs gets one.
      const old = await ended('user: hi');
      await server.sql`delete from jobs where conversation_id = ${old}`;
      t.equal((await http.post(`/v1/conversations/${old}/extractions`)).status, 202);
      t.match(await jobOf(old), { status: 'pending', after_kinds: ['post_call_transcript'] });
    });
  });
}

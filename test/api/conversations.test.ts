// Conversation endpoints over real HTTP on both databases (get, list, extractions, delete and cancel).
// The live engine does not exist yet: conversations are seeded through the repository it will use.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, createWorkspace, DB_KINDS, startTestServer, type TestServer } from '../helpers/server.js';
import { addExtraction, createConversation, type NewConversation } from '../../src/store/conversations.js';
import { admit } from '../../src/store/leases.js';
import { conversation as conversationSchema } from '../../src/schemas/conversations.js';

const DAY = '2026-11-10';
const MINUTE_MS = 60_000;
/** Conversations of the pagination walk; more than a page of the default size. */
const SEEDED = 23;

interface Seeded {
  id: string;
  startedAt: Date;
  durationMs: number;
}

/** Seeds conversations one minute apart from DAY 09:00 UTC (every fourth shares its predecessor's start). */
async function seed(
  server: TestServer,
  projectId: string,
  n: number,
  extra: Partial<NewConversation> = {},
): Promise<Seeded[]> {
  const out: Seeded[] = [];
  for (let i = 0; i < n; i++) {
    const minute = i % 4 === 3 ? i - 1 : i;
    const startedAt = new Date(Date.parse(`${DAY}T09:00:00.000Z`) + minute * MINUTE_MS);
    const durationMs = (i + 1) * 1000 + 250;
    const id = await createConversation(server.sql, {
      orgId: server.orgId,
      projectId,
      origin: 'web',
      started_at: startedAt,
      items: [
        { role: 'user', live_transcript: `question ${i}`, duration_ms: 400, started_at: startedAt },
        {
          role: 'assistant',
          live_transcript: `answer ${i}`,
          duration_ms: 600,
          started_at: new Date(startedAt.getTime() + 500),
        },
      ],
      finish: { ended_by: 'user', ended_at: new Date(startedAt.getTime() + durationMs), duration_ms: durationMs },
      ...extra,
    });
    out.push({ id, startedAt, durationMs });
  }
  return out;
}

/** The listing order: started_at desc, then id desc. */
function ordered(list: Seeded[]): string[] {
  return [...list]
    .sort((a, b) => b.startedAt.getTime() - a.startedAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
    .map((s) => s.id);
}

// Two databases, each a fresh server: more than tap's default file timeout on a loaded machine.
t.setTimeout(300_000);

for (const db of DB_KINDS) {
  t.test(`conversation endpoints on ${db}`, { timeout: 180_000 }, async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'parley-conv-'));
    const server = await startTestServer({ db, env: { PARLEY_DATA_DIR: dataDir } });
    t.teardown(async () => {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const client = api(server);
    const [{ name: workspaceName }] = await server.sql<{ name: string }[]>`
      select name from organizations where id = ${server.orgId}`;
    const all = await seed(server, server.projectId, SEEDED);
    const expectedOrder = ordered(all);

    t.test('get returns the full record', async (t) => {
      const startedAt = new Date('2026-11-11T12:00:00.000Z');
      const id = await createConversation(server.sql, {
        orgId: server.orgId,
        projectId: server.projectId,
        agent: { id: 'agent_00000000-0000-4000-8000-000000000000', name: 'gone' },
        origin: 'telephony-outbound',
        external_id: 'crm-single',
        call_info: { from_phone_number: '+14155550100', to_phone_number: '+14155550199', telephony_call_sid: 'sid-1' },
        started_at: startedAt,
        settings: { voice_id: 'sabrina', template_variables: { who: 'Ada' }, welcome_message: 'Hi {{who}}' },
        items: [
          {
            role: 'assistant',
            live_transcript: 'Hi Ada',
            duration_ms: 900,
            started_at: startedAt,
            tool_calls: [
              {
                tool: { id: 'tool_x', name: 'lookup' },
                request_body: { q: 1 },
                response_body: { a: 2 },
                timed_out: false,
                error_message: null,
              },
            ],
          },
        ],
        finish: {
          ended_by: 'assistant',
          ended_at: new Date(startedAt.getTime() + 5000),
          duration_ms: 5000,
          latencies_ms: [250],
        },
      });
      const res = await client.get(`/v1/conversations/${id}`);
      t.equal(res.status, 200);
      const c = res.body.conversation;
      t.ok(conversationSchema.safeParse(c).success, 'the body is a spec Conversation');
      t.equal(c.id, id);
      t.same(
        c.agent,
        { id: 'agent_00000000-0000-4000-8000-000000000000', name: 'gone', is_deleted: true },
        'an agent no longer stored is reported deleted',
      );
      t.equal(c.workspace, workspaceName);
      t.same(c.project, { id: server.projectId, name: 'main' });
      t.equal(c.origin, 'telephony-outbound');
      t.equal(c.external_id, 'crm-single');
      t.same(c.call_info, {
        from_phone_number: '+14155550100',
        to_phone_number: '+14155550199',
        telephony_call_sid: 'sid-1',
      });
      t.equal(c.started_at, startedAt.toISOString());
      t.equal(c.ended_by, 'assistant');
      t.equal(c.duration_ms, 5000);
      t.equal(c.audio_url, null, 'no recording, no link');
      t.same(c.analysis.latencies_ms, [250]);
      t.equal(c.welcome_message, 'Hi {{who}}');
      t.equal(c.items[0].tool_calls[0].tool.name, 'lookup');
      t.same(c.deletion_info, { transcripts_deleted_at: null, audio_recordings_deleted_at: null });

      const single = await client.get('/v1/conversations?external_id=crm-single');
      t.equal(single.status, 200);
      t.same(
        Object.keys(single.body),
        ['conversation'],
        'an external_id matching exactly one answers that conversation',
      );
      t.equal(single.body.conversation.id, id);
      await server.sql`delete from conversations where id = ${id}`;
    });

    t.test("the record's agent: is_deleted follows the agent's existence", async (t) => {
      const upsert = await client.put('/v1/agents/upsert', { name: 'helper' });
      t.equal(upsert.status, 200);
      const agentId = (await client.get('/v1/agents/helper')).body.agent.id;
      t.match(agentId, /^agent_/);
      const id = await createConversation(server.sql, {
        orgId: server.orgId,
        projectId: server.projectId,
        origin: 'web',
        agent: { id: agentId, name: 'helper' },
        finish: { ended_by: 'user', ended_at: new Date() },
      });
      t.same((await client.get(`/v1/conversations/${id}`)).body.conversation.agent, {
        id: agentId,
        name: 'helper',
        is_deleted: false,
      });
      t.equal((await client.delete('/v1/agents/helper')).status, 200);
      t.same((await client.get(`/v1/conversations/${id}`)).body.conversation.agent, {
        id: agentId,
        name: 'helper',
        is_deleted: true,
      });
      await server.sql`delete from conversations where id = ${id}`;
    });

    t.test('get: 404, 403, 401 and a bad audio_container', async (t) => {
      t.equal((await client.get('/v1/conversations/conv_nope')).status, 404);
      const other = await createWorkspace(server.sql, 'other-ws-get');
      const theirs = await createConversation(server.sql, {
        orgId: other.orgId,
        projectId: other.projectId,
        origin: 'web',
      });
      const forbidden = await client.get(`/v1/conversations/${theirs}`);
      t.equal(forbidden.status, 403);
      t.match(forbidden.body, { error: { message: String } });
      t.equal((await client.get(`/v1/conversations/${theirs}`, undefined, { key: other.apiKey })).status, 200);
      t.equal((await client.get(`/v1/conversations/${all[0].id}`, undefined, { key: null })).status, 401);
      const bad = await client.get(`/v1/conversations/${all[0].id}?audio_container=mp3`);
      t.equal(bad.status, 400);
      t.ok(bad.body.param_errors.audio_container);
      const theirList = await client.get(`/v1/conversations?project=${server.projectId}`, undefined, {
        key: other.apiKey,
      });
      t.equal(theirList.status, 403, "another workspace's project id is forbidden");
    });

    t.test('list: default page, then every page forward and back, no duplicates, no gaps', async (t) => {
      const first = await client.get('/v1/conversations');
      t.equal(first.status, 200);
      t.equal(first.body.conversations.length, 20, 'default limit 20');
      t.same(
        first.body.conversations.map((c: { id: string }) => c.id),
        expectedOrder.slice(0, 20),
      );
      t.equal(first.body.pagination.prev_cursor, null, 'no newer page');
      t.equal(first.body.pagination.next_cursor, expectedOrder[19]);

      const limit = 4;
      const pages: string[][] = [];
      let res = await client.get(`/v1/conversations?limit=${limit}`);
      for (;;) {
        t.equal(res.status, 200);
        pages.push(res.body.conversations.map((c: { id: string }) => c.id));
        if (pages.length > 1) t.ok(res.body.pagination.prev_cursor, 'an older page links back');
        if (!res.body.pagination.next_cursor) break;
        res = await client.get(`/v1/conversations?limit=${limit}&after=${res.body.pagination.next_cursor}`);
      }
      t.same(pages.flat(), expectedOrder, 'forward: every conversation once, in order');
      t.equal(pages.length, Math.ceil(SEEDED / limit));

      const back: string[][] = [pages[pages.length - 1]];
      let prev = res.body.pagination.prev_cursor;
      while (prev) {
        const r = await client.get(`/v1/conversations?limit=${limit}&before=${prev}`);
        t.equal(r.status, 200);
        back.unshift(r.body.conversations.map((c: { id: string }) => c.id));
        t.ok(r.body.pagination.next_cursor, 'a newer page links forward');
        prev = r.body.pagination.prev_cursor;
      }
      t.same(back.flat(), expectedOrder, 'backward: the same conversations, no duplicates, no gaps');
      t.same(back[0], pages[0], 'walking back ends on the first page');
    });

    t.test('list filters', async (t) => {
      const ids = (r: { body: { conversations: { id: string }[] } }) => r.body.conversations.map((c) => c.id);
      const within = (pred: (s: Seeded) => boolean) => ordered(all.filter(pred));

      let r = await client.get('/v1/conversations?duration_min=5&duration_max=9&limit=100');
      t.equal(r.status, 200);
      t.same(
        ids(r),
        within((s) => s.durationMs >= 5000 && s.durationMs <= 9000),
        'duration in whole seconds, inclusive',
      );

      r = await client.get(
        '/v1/conversations?started_at_min=2026-11-10T09:05:00Z&started_at_max=2026-11-10T09:10:00.000Z&limit=100',
      );
      t.same(
        ids(r),
        within(
          (s) => s.startedAt >= new Date('2026-11-10T09:05:00Z') && s.startedAt <= new Date('2026-11-10T09:10:00Z'),
        ),
        'timestamp bounds, inclusive',
      );
      t.ok(ids(r).length > 0);

      r = await client.get(`/v1/conversations?started_at_min=${DAY}&started_at_max=${DAY}&limit=100`);
      t.same(ids(r), expectedOrder, 'a date covers its whole UTC day');
      r = await client.get('/v1/conversations?started_at_min=2026-11-11&limit=100');
      t.same(ids(r), [], 'nothing on later days');
      r = await client.get('/v1/conversations?started_at_max=2026-11-09');
      t.same(ids(r), [], 'nothing on earlier days');

      const dup = await seed(server, server.projectId, 2, { external_id: 'crm-shared' });
      r = await client.get('/v1/conversations?external_id=crm-shared');
      t.same(ids(r), ordered(dup), 'two matches give a listing');
      r = await client.get('/v1/conversations?external_id=crm-none');
      t.same(r.body, { conversations: [], pagination: { prev_cursor: null, next_cursor: null } });
      for (const d of dup) await server.sql`delete from conversations where id = ${d.id}`;

      const [p] = await server.sql<{ id: string }[]>`
        insert into projects (id, org_id, name) values ('proj_00000000-0000-4000-8000-00000000a1a1', ${server.orgId}, 'side') returning id`;
      const side = await seed(server, p.id, 2);
      r = await client.get('/v1/conversations?project=side');
      t.same(ids(r), ordered(side), 'the project parameter selects the project by name');
      r = await client.get(`/v1/conversations?project=${p.id}`);
      t.same(ids(r), ordered(side), 'or by id');
      r = await client.get(`/v1/conversations?after=${side[0].id}`);
      t.equal(r.status, 404, "a cursor of another project's conversation is not found");
    });

    t.test('list: invalid queries', async (t) => {
      const cases: [string, string][] = [
        [`before=${all[3].id}&after=${all[5].id}`, 'before'],
        ['limit=0', 'limit'],
        ['limit=101', 'limit'],
        ['limit=abc', 'limit'],
        ['duration_min=-1', 'duration_min'],
        ['duration_min=9&duration_max=2', 'duration_min'],
        ['started_at_min=2026-13-01', 'started_at_min'],
        ['started_at_max=yesterday', 'started_at_max'],
        ['audio_container=flac', 'audio_container'],
      ];
      for (const [q, param] of cases) {
        const r = await client.get(`/v1/conversations?${q}`);
        t.equal(r.status, 400, q);
        t.ok(r.body.param_errors?.[param], `${q}: param_errors names ${param}`);
      }
      t.equal((await client.get('/v1/conversations?limit=100')).status, 200, 'the documented upper bound is accepted');
      t.equal((await client.get('/v1/conversations?project=nope')).status, 404);
      t.equal((await client.get('/v1/conversations?after=conv_unknown')).status, 404);
      t.equal((await client.get('/v1/conversations', undefined, { key: 'pk_wrong' })).status, 401);
    });

    t.test('extractions', async (t) => {
      const conv = all[0].id;
      const [schema] = await server.sql<{ id: string }[]>`
        insert into extraction_schemas (id, org_id, project_id, name, prompt, fields)
        values ('conv_extract_schema_00000000-0000-4000-8000-000000000001', ${server.orgId}, ${server.projectId},
          'order', 'Find the order', ${server.sql.json([{ name: 'order_id', type: 'string', description: null }])})
        returning id`;
      const [gone] = await server.sql<{ id: string }[]>`
        insert into extraction_schemas (id, org_id, project_id, name, prompt, fields, deleted_at)
        values ('conv_extract_schema_00000000-0000-4000-8000-000000000002', ${server.orgId}, ${server.projectId},
          'old', 'Old', '[]'::jsonb, now())
        returning id`;
      const e1 = await addExtraction(server.sql, conv, {
        schemaId: schema.id,
        schemaName: 'order',
        result: { order_id: 'A-1' },
        createdAt: new Date('2026-11-10T10:00:00Z'),
      });
      const e2 = await addExtraction(server.sql, conv, {
        schemaId: gone.id,
        schemaName: 'old',
        result: { x: [1, 2] },
        createdAt: new Date('2026-11-10T10:01:00Z'),
      });
      const r = await client.get(`/v1/conversations/${conv}/extractions`);
      t.equal(r.status, 200);
      t.same(r.body, {
        extractions: [
          {
            id: e1,
            schema: { id: schema.id, name: 'order', isDeleted: false },
            result: { order_id: 'A-1' },
            created_at: '2026-11-10T10:00:00.000Z',
          },
          {
            id: e2,
            schema: { id: gone.id, name: 'old', isDeleted: true },
            result: { x: [1, 2] },
            created_at: '2026-11-10T10:01:00.000Z',
          },
        ],
      });
      t.same((await client.get(`/v1/conversations/${all[1].id}/extractions`)).body, { extractions: [] });
      t.equal((await client.get('/v1/conversations/conv_nope/extractions')).status, 404);
    });

    t.test('cancel', async (t) => {
      const live = await createConversation(server.sql, {
        orgId: server.orgId,
        projectId: server.projectId,
        origin: 'web',
        state: 'active',
        started_at: new Date(),
      });
      const policy = { nodeId: 'node-test', ttlSec: 60, workspaceCap: 100 };
      t.equal((await admit(server.sql, policy, server.projectId, live)).admitted, true);
      t.equal(
        (await client.get('/v1/projects/main')).body.project.active_conversations,
        1,
        'the live conversation counts',
      );

      const r = await client.post(`/v1/conversations/${live}/cancel`);
      t.equal(r.status, 200);
      t.same(r.body, { success: true });
      const c = (await client.get(`/v1/conversations/${live}`)).body.conversation;
      t.equal(c.ended_by, 'user_canceled');
      t.ok(c.ended_at);
      t.equal((await client.get('/v1/projects/main')).body.project.active_conversations, 0, 'its lease is freed');

      const again = await client.post(`/v1/conversations/${live}/cancel`);
      t.equal(again.status, 409, 'a finished conversation cannot be canceled');
      t.equal(again.body.error.code, 'conversation_ended');
      t.equal((await client.post('/v1/conversations/conv_nope/cancel')).status, 404);
      const other = await createWorkspace(server.sql, 'other-ws-cancel');
      const theirs = await createConversation(server.sql, {
        orgId: other.orgId,
        projectId: other.projectId,
        origin: 'web',
        state: 'active',
      });
      t.equal((await client.post(`/v1/conversations/${theirs}/cancel`)).status, 403);
    });

    t.test('delete erases transcripts and audio, keeping the record with deletion_info', async (t) => {
      const id = all[2].id;
      const r = await client.delete(`/v1/conversations/${id}`);
      t.equal(r.status, 200);
      t.same(r.body, { success: true });
      const c = (await client.get(`/v1/conversations/${id}`)).body.conversation;
      t.equal(c.live_transcript, null);
      t.same(
        c.items.map((i: { live_transcript: string | null }) => i.live_transcript),
        [null, null],
      );
      t.ok(Date.parse(c.deletion_info.transcripts_deleted_at) > 0);
      t.ok(Date.parse(c.deletion_info.audio_recordings_deleted_at) > 0);
      t.equal(c.audio_url, null);
      t.equal((await client.delete(`/v1/conversations/${id}`)).status, 200, 'deleting again is harmless');

      const live = await createConversation(server.sql, {
        orgId: server.orgId,
        projectId: server.projectId,
        origin: 'web',
        state: 'active',
      });
      const busy = await client.delete(`/v1/conversations/${live}`);
      t.equal(busy.status, 409, 'a conversation in progress must be canceled first');
      t.equal((await client.delete('/v1/conversations/conv_nope')).status, 404);
      const other = await createWorkspace(server.sql, 'other-ws-delete');
      const theirs = await createConversation(server.sql, {
        orgId: other.orgId,
        projectId: other.projectId,
        origin: 'web',
      });
      t.equal((await client.delete(`/v1/conversations/${theirs}`)).status, 403);
    });

    t.test('session tokens cannot use the conversation endpoints (API keys only)', async (t) => {
      const scoped = await client.post('/v1/auth/session_token', { conversation_ids: [all[0].id] });
      t.equal(scoped.status, 200, 'minted a scoped token');
      const open = await client.post('/v1/auth/session_token', {});
      for (const key of [scoped.body.session_token, open.body.session_token]) {
        t.equal((await client.get(`/v1/conversations/${all[0].id}`, undefined, { key })).status, 403);
        t.equal((await client.get('/v1/conversations', undefined, { key })).status, 403);
        t.equal((await client.post(`/v1/conversations/${all[0].id}/cancel`, undefined, { key })).status, 403);
      }
    });
  });
}

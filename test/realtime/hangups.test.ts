// How a conversation ends with its client (docs/sts-protocol.md, "Closing", "Reconnect", "Limits"): a deliberate
// close ends it at once; a dropped connection waits the grace and is recorded as ending when the client left; a
// client gone with thousands of queued `say`s holds nothing once the grace ends; a cancel through the API closes the
// live socket at once; a reconnect too late or from another workspace is told so (4800, 4801); a shutdown closes
// with 1012 `restarting`; started_at is stored, so the started_at filters find conversations.
import t from 'tap';
import { api, createWorkspace } from '../helpers/server.js';
import { endedConversation, startRealtimeServer, TestClient, type RealtimeServer } from '../helpers/realtime.js';
import { CLIENT_LIMITS } from '../../src/conversation/conversation.js';
import { CLOSE_INVALID_STATE, CLOSE_RESTARTING, RESTARTING } from '../../src/realtime/live-host.js';

t.setTimeout(240_000);

const CONFIG = { type: 'config', input_format: 'pcm_16000', output_format: 'pcm_16000' } as const;
const GRACE_SEC = 3;
/** Says queued by the client that then drops (the queue takes CLIENT_LIMITS.queued_replies). */
const FLOOD = 2_000;

async function conversation(
  server: RealtimeServer,
  extra: Record<string, unknown> = {},
): Promise<{ client: TestClient; id: string }> {
  const client = await TestClient.open(`${server.wsUrl}/v1/sts/ws`, { authorization: `Bearer ${server.apiKey}` });
  client.send({ ...CONFIG, ...extra });
  await client.untilEvent('ready_to_start_conversation');
  return { client, id: String(client.events('conversation_created')[0]?.conversation_id) };
}

/** Polls until the worker reports no live conversation (its load notices travel on their own). */
async function idle(server: RealtimeServer): Promise<number[]> {
  for (let i = 0; i < 100 && server.pool.load().some((n) => n > 0); i++) await new Promise((r) => setTimeout(r, 100));
  return server.pool.load();
}

/** Resolves with the close, or null when the socket is still open after `ms`. */
function closedWithin(client: TestClient, ms: number): Promise<{ code: number; reason: string } | null> {
  let timer: NodeJS.Timeout;
  return Promise.race([client.closed, new Promise<null>((r) => (timer = setTimeout(() => r(null), ms)))]).finally(() =>
    clearTimeout(timer),
  );
}

t.test('hang-ups, cancels and close codes', async (t) => {
  const server = await startRealtimeServer({ env: { PARLEY_RECONNECT_GRACE_SEC: String(GRACE_SEC) } });
  t.teardown(() => server.close());
  const http = api(server);

  t.test("a client's close frame (1000) ends the conversation at once, ended_by user", async (t) => {
    const slow = await startRealtimeServer({ env: { PARLEY_RECONNECT_GRACE_SEC: '600' } });
    t.teardown(() => slow.close());
    const { client, id } = await conversation(slow);
    client.ws.close(1000, 'bye');
    const c = await endedConversation((p) => api(slow).get(p), id);
    t.equal(c.ended_by, 'user', 'ended well before a 600 s grace');
  });

  t.test('a dropped connection: recorded as ending when the client left, not when the grace ran out', async (t) => {
    const { client, id } = await conversation(server);
    await new Promise((r) => setTimeout(r, 500));
    const leftAt = Date.now();
    client.ws.terminate();
    const c = await endedConversation((p) => http.get(p), id);
    t.equal(c.ended_by, 'user');
    const endedAt = new Date(c.ended_at).getTime();
    t.ok(endedAt <= leftAt + 500, `ended_at (${c.ended_at}) is when the client left, not ${GRACE_SEC} s later`);
    t.ok(c.duration_ms < 1000 * GRACE_SEC, `the grace is not in its duration (${c.duration_ms} ms)`);
    t.ok(new Date(c.started_at).getTime() <= leftAt, 'started_at is stored');
    const day = new Date(c.started_at).toISOString().slice(0, 10);
    const listed = await http.get(`/v1/conversations?started_at_min=${day}&started_at_max=${day}`);
    t.ok(
      listed.body.conversations.some((x: { id: string }) => x.id === id),
      'the started_at filters find it',
    );
  });

  t.test('a client that queues thousands of say messages and drops: nothing speaks on after the grace', async (t) => {
    const { client, id } = await conversation(server);
    for (let i = 0; i < FLOOD; i++) client.send({ type: 'say', text: `Message number ${i} of many.` });
    await client.until(() => client.events('error').length >= FLOOD - CLIENT_LIMITS.queued_replies);
    const refused = client.events('error').filter((e) => (e.error as { code: string }).code === 'queue_full');
    t.equal(
      refused.length,
      FLOOD - CLIENT_LIMITS.queued_replies,
      `each say over ${CLIENT_LIMITS.queued_replies} queued is refused with queue_full`,
    );
    client.ws.terminate();
    const c = await endedConversation((p) => http.get(p), id);
    t.ok(
      c.items.length <= CLIENT_LIMITS.queued_replies,
      `at most what was queued is on the record (${c.items.length} items)`,
    );
    t.same(await idle(server), [0], 'nothing live on the worker');
    const project = await http.get('/v1/projects/main');
    t.equal(project.body.project.active_conversations, 0, 'its slot is free');
  });

  t.test('a cancel through the API closes the live socket at once', async (t) => {
    const { client, id } = await conversation(server);
    const res = await http.post(`/v1/conversations/${id}/cancel`);
    t.equal(res.status, 200);
    const closed = await closedWithin(client, 10_000);
    t.same(closed, { code: 1000, reason: 'user_canceled' }, 'closed by the conversation, user_canceled');
    const c = await endedConversation((p) => http.get(p), id);
    t.equal(c.ended_by, 'user_canceled');
    t.same(await idle(server), [0], 'nothing live on the worker');
  });

  t.test("a reconnect to another workspace's conversation is invalid: 4801", async (t) => {
    const { client, id } = await conversation(server);
    const other = await createWorkspace(server.sql, 'other');
    const intruder = await TestClient.open(`${server.wsUrl}/v1/sts/ws?reconnect_conv_id=${id}`, {
      authorization: `Bearer ${other.apiKey}`,
    });
    t.equal((await intruder.closed).code, CLOSE_INVALID_STATE);
    t.equal(await closedWithin(client, 200), null, 'the conversation goes on');
    client.close();
  });

  t.test('a shutdown closes live sockets with 1012 restarting, the records saved', async (t) => {
    const node = await startRealtimeServer();
    const { client, id } = await conversation(node);
    const closed = client.closed;
    await node.pool.close();
    t.same(await closed, { code: CLOSE_RESTARTING, reason: RESTARTING });
    const [row] = await node.sql<{ ended_by: string }[]>`select ended_by from conversations where id = ${id}`;
    t.equal(row.ended_by, 'error', 'ended and saved (the node stopped it)');
    await node.close();
  });
});

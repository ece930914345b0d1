// SIGTERM drains the node (docs/operations.md, "Drain"), on the real process: /readyz turns 503 at once; new STS
// sockets (and ones not configured yet) close with 1012 `restarting`, new INVITEs and OPTIONS get 503, new outbound
// calls 503; a live STS conversation and a live phone call go on and end on their own, and the process then exits 0.
// The drain timeout ends the rest saved (ended_by error); a second SIGTERM ends it at once.
import postgres from 'postgres';
import t, { type Test } from 'tap';
import { controlPlaneUrl, startMain, type MainProcess } from './helpers/main-process.js';
import { TestClient } from './helpers/realtime.js';
import { createTempDatabase } from './helpers/temp-database.js';
import { until } from './helpers/wait.js';
import { runSipp, sippCompleted } from './telephony/sipp-scenario.js';

t.setTimeout(600_000);

const KEY = 'bootstrap-key-for-drain-tests-0123456789';
const NUMBER = '+14155550100';
const STS_CONFIG = { type: 'config', input_format: 'pcm_16000', output_format: 'pcm_16000' };

interface Node {
  main: MainProcess;
  /** The node's database, read directly (the process may be gone). */
  sql: postgres.Sql;
  base: string;
  stsUrl: string;
  sipPort: number;
  get(path: string): Promise<{ status: number; body: any }>;
  post(path: string, body: unknown): Promise<{ status: number; body: any }>;
}

/** The JSON log line whose msg is `msg`. */
async function logged(main: MainProcess, msg: string): Promise<Record<string, unknown>> {
  const [line] = await main.waitFor(new RegExp(`^\\{.*"msg":"${msg}".*\\}$`, 'm'));
  return JSON.parse(line!) as Record<string, unknown>;
}

async function startNode(t: Test, env: Record<string, string>): Promise<Node> {
  const db = await createTempDatabase('parley_test_drain');
  const main = startMain({ DATABASE_URL: db.url, PARLEY_BOOTSTRAP_API_KEY: KEY, PARLEY_WS_PORT: '0', ...env });
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  t.teardown(async () => {
    main.kill('SIGKILL');
    await main.exited;
    await sql.end();
    await db.drop();
  });
  const base = await controlPlaneUrl(main);
  const ws = await logged(main, 'realtime workers listening');
  const sip = await logged(main, 'SIP listening');
  await main.waitFor(/"msg":"parley ready"/);
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${KEY}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return {
      status: res.status,
      body: text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text,
    };
  };
  return {
    main,
    sql,
    base,
    stsUrl: `ws://127.0.0.1:${ws.port}/v1/sts/ws`,
    sipPort: sip.port as number,
    get: (path) => call('GET', path),
    post: (path, body) => call('POST', path, body),
  };
}

async function conversation(node: Node): Promise<{ client: TestClient; id: string }> {
  const client = await TestClient.open(node.stsUrl, { authorization: `Bearer ${KEY}` });
  client.send(STS_CONFIG);
  await client.untilEvent('ready_to_start_conversation');
  const id = client.events('conversation_created')[0]?.conversation_id;
  if (typeof id !== 'string') throw new Error(`no conversation: ${JSON.stringify(client.got.events)}`);
  return { client, id };
}

async function endedBy(node: Node, id: string): Promise<string | null | undefined> {
  const [row] = await node.sql<{ ended_by: string | null }[]>`select ended_by from conversations where id = ${id}`;
  return row?.ended_by;
}

t.test('a drain lets the live conversation and call finish and refuses new ones', async (t) => {
  const node = await startNode(t, { PARLEY_DRAIN_TIMEOUT_SEC: '120', PARLEY_OUTBOUND_TRUNK: 'sip:127.0.0.1:9' });
  t.equal((await node.get('/readyz')).status, 200, 'ready before the drain');
  const upsert = await fetch(`${node.base}/v1/agents/upsert`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'sales', phone_number: 'custom', custom_phone_numbers: [NUMBER] }),
  });
  t.equal(upsert.status, 200);

  const live = await conversation(node);
  // A caller that stays 10 s in the call, then hangs up.
  const caller = runSipp({
    scenario: 'uac_talks.xml',
    target: `127.0.0.1:${node.sipPort}`,
    service: NUMBER,
    pauseMs: 10_000,
    timeoutMs: 60_000,
  });
  let callId = '';
  await until(
    async () => {
      const [row] = await node.sql<
        { id: string }[]
      >`select id from conversations where origin = 'telephony-inbound' and ended_by is null`;
      callId = row?.id ?? '';
      return callId !== '';
    },
    { timeoutMs: 20_000, what: 'the call in progress' },
  );
  const unconfigured = await TestClient.open(node.stsUrl, { authorization: `Bearer ${KEY}` });

  node.main.kill('SIGTERM');
  await node.main.waitFor(/"msg":"draining: admitting nothing new/);
  const ready = await node.get('/readyz');
  t.equal(ready.status, 503, '/readyz says 503 at once');
  t.same(ready.body.not_ready, ['drain']);
  t.equal((await node.get('/healthz')).status, 200, '/healthz still 200');

  t.same(
    await unconfigured.closed,
    { code: 1012, reason: 'restarting' },
    'a socket not configured yet is closed 1012 restarting',
  );
  const late = await TestClient.open(node.stsUrl, { authorization: `Bearer ${KEY}` });
  t.same(await late.closed, { code: 1012, reason: 'restarting' }, 'a new STS socket is closed 1012 restarting');
  const options = await runSipp({ scenario: 'options.xml', target: `127.0.0.1:${node.sipPort}` });
  t.same(options.statuses, [503], 'OPTIONS: 503 while draining');
  const invite = await runSipp({
    scenario: 'uac_refused.xml',
    target: `127.0.0.1:${node.sipPort}`,
    service: NUMBER,
    keys: { pt: '0', rtpmap: '0 PCMU/8000' },
  });
  t.same(
    invite.statuses.filter((s) => s >= 200),
    [503],
    'a new INVITE: 503 while draining',
  );
  const outbound = await node.post('/v1/conversations/outbound_call', {
    to_phone_number: '+14155550199',
    config: { agent: 'sales' },
  });
  t.equal(outbound.status, 503, 'a new outbound call: 503 while draining');
  t.equal(outbound.body.error?.code, 'unavailable');

  t.equal(await endedBy(node, live.id), null, 'the STS conversation goes on');
  t.equal(await endedBy(node, callId), null, 'the call goes on');
  live.client.close(); // the client ends it (1005: deliberate)
  sippCompleted(t, await caller, 'the caller stayed in its call and hung up itself');
  t.equal(await node.main.exited, 0, 'exits 0 once nothing runs', { output: node.main.output().slice(-3000) });
  t.match(node.main.output(), /drained: nothing runs any more/);
  t.equal(await endedBy(node, live.id), 'user', 'the STS conversation ended as its client ended it');
  t.equal(await endedBy(node, callId), 'user', 'the call ended as its caller hung up');
});

t.test('the drain timeout ends the rest saved (ended_by error)', async (t) => {
  const node = await startNode(t, { PARLEY_DRAIN_TIMEOUT_SEC: '1' });
  const live = await conversation(node);
  node.main.kill('SIGTERM');
  t.same(await live.client.closed, { code: 1012, reason: 'restarting' }, 'the client is told to reconnect elsewhere');
  t.equal(await node.main.exited, 0, 'exit 0', { output: node.main.output().slice(-3000) });
  t.match(node.main.output(), /"why":"timeout"/);
  t.equal(await endedBy(node, live.id), 'error', 'saved, ended_by error');
});

t.test('a second SIGTERM ends the drain at once', async (t) => {
  const node = await startNode(t, { PARLEY_DRAIN_TIMEOUT_SEC: '3600' });
  const live = await conversation(node);
  node.main.kill('SIGTERM');
  await until(async () => (await node.get('/readyz')).status === 503, { what: '/readyz 503 (draining)' });
  t.equal(await endedBy(node, live.id), null, 'the conversation goes on while draining');
  node.main.kill('SIGTERM');
  t.same(await live.client.closed, { code: 1012, reason: 'restarting' });
  t.equal(await node.main.exited, 0, 'exit 0', { output: node.main.output().slice(-3000) });
  t.match(node.main.output(), /"why":"signal"/);
  t.equal(await endedBy(node, live.id), 'error', 'saved, ended_by error');
});

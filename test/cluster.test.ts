// Two Parley nodes on one PostgreSQL database behind the balancers docs/operations.md describes: Kamailio's
// dispatcher for SIP (round robin, OPTIONS probing, failover) and HAProxy for the HTTP API and the realtime
// WebSocket (round robin, a cookie for reconnects). Calls and STS conversations spread over both nodes; a project's
// cap holds across them; a node killed with SIGKILL mid-call and mid-conversation leaves the survivor serving, its
// leases lapse within the lease TTL, and its conversations are ended and saved (ended_by error) by the survivor.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import postgres from 'postgres';
import t from 'tap';
import WebSocket from 'ws';
import { createTempDatabase } from './helpers/temp-database.js';
import { until } from './helpers/wait.js';
import {
  FIXTURES_DIR,
  fillTemplate,
  listening,
  Peer,
  runSipp as runSippStats,
  startKamailio,
  tempDir,
} from './sip/peers/peers.js';
import { freeUdpPort, runSipp } from './telephony/sipp-scenario.js';
import { spawnNode, type SpawnedNode } from './realtime/node-process.js';

t.setTimeout(600_000);

const KEY = 'bootstrap-key-for-cluster-tests-0123456789';
/** Short, so that a dead node's leases lapse and the survivor's sweep (every TTL) ends its conversations soon. */
const LEASE_TTL_SEC = 3;
const NUMBER = '+14155550100';
const CALLER = '+14155550123';
const NODE_IDS = ['node-a', 'node-b'] as const;
/** The long calls' length (SIPp -d): they outlast the kill and the recovery. */
const CALL_MS = 15_000;
const PCMU = { pt: '0', rtpmap: '0 PCMU/8000' };

interface ClusterNode extends SpawnedNode {
  id: string;
  httpPort: number;
  wsPort: number;
  sipPort: number;
}

function freeTcpPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** A node as `npm start` runs it, its ports (all 0: picked by the system) read from its log. */
async function startClusterNode(id: string, env: Record<string, string>, spawned: SpawnedNode[]): Promise<ClusterNode> {
  const node = spawnNode({ ...env, PARLEY_NODE_ID: id, PARLEY_SIP_PORT: '0' });
  spawned.push(node);
  const [, sipPort] = await node.waitFor(/"port":(\d+),"host":"127\.0\.0\.1"[^\n]*"msg":"SIP listening"/);
  const [, wsPort] = await node.waitFor(/"port":(\d+),"workers":\d+,"msg":"realtime workers listening"/);
  const [, httpPort] = await node.waitFor(/"url":"http:\/\/127\.0\.0\.1:(\d+)","msg":"control plane listening"/);
  await node.waitFor(/"msg":"parley ready"/);
  return { ...node, id, httpPort: Number(httpPort), wsPort: Number(wsPort), sipPort: Number(sipPort) };
}

/** HAProxy from test/fixtures/haproxy in front of the nodes' HTTP and realtime ports. */
async function startHaproxy(nodes: ClusterNode[]): Promise<{ peer: Peer; apiPort: number; wsPort: number }> {
  const dir = tempDir('haproxy');
  const apiPort = await freeTcpPort();
  const wsPort = await freeTcpPort();
  const cfg = fillTemplate('haproxy/haproxy.cfg', {
    API_PORT: `${apiPort}`,
    WS_PORT: `${wsPort}`,
    API_SERVERS: nodes.map((n) => `    server ${n.id} 127.0.0.1:${n.httpPort}`).join('\n'),
    WS_SERVERS: nodes.map((n) => `    server ${n.id} 127.0.0.1:${n.wsPort} cookie ${n.id}`).join('\n'),
  });
  writeFileSync(join(dir, 'haproxy.cfg'), cfg);
  const peer = new Peer(
    'haproxy',
    spawn('haproxy', ['-db', '-f', join(dir, 'haproxy.cfg')], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }),
  );
  try {
    await peer.waitUntil(
      () => listening(apiPort, 'tcp') && listening(wsPort, 'tcp'),
      5000,
      `listening on tcp ports ${apiPort} and ${wsPort}`,
    );
  } catch (err) {
    await peer.stop();
    throw err;
  }
  return { peer, apiPort, wsPort };
}

/** An STS client that keeps what it receives and the upgrade's Set-Cookie (the balancer's affinity). */
class StsClient {
  readonly events: Record<string, unknown>[] = [];
  cookie = '';
  readonly closed: Promise<{ code: number; reason: string }>;
  private changed: (() => void)[] = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('upgrade', (res) => {
      const set = res.headers['set-cookie'] ?? [];
      this.cookie = set.map((c) => c.split(';')[0]).join('; ');
    });
    ws.on('message', (data: Buffer, binary: boolean) => {
      if (!binary) this.events.push(JSON.parse(data.toString('utf8')) as Record<string, unknown>);
      for (const w of this.changed.splice(0)) w();
    });
    this.closed = new Promise((resolve) =>
      ws.on('close', (code, reason) => {
        resolve({ code, reason: reason.toString() });
        for (const w of this.changed.splice(0)) w();
      }),
    );
  }

  static open(url: string, headers: Record<string, string> = {}): Promise<StsClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { headers: { authorization: `Bearer ${KEY}`, ...headers } });
      const client = new StsClient(ws);
      ws.once('open', () => resolve(client));
      ws.once('error', reject);
    });
  }

  of(type: string): Record<string, unknown>[] {
    return this.events.filter((e) => e.type === type);
  }

  /** Resolves once `test` holds, or the socket closed. */
  async until(test: () => boolean): Promise<void> {
    while (!test() && this.ws.readyState !== WebSocket.CLOSED) await new Promise<void>((r) => this.changed.push(r));
  }

  /** Sends `config`; resolves with the conversation id, or null when it was refused (its error code in `refusal`). */
  async start(): Promise<string | null> {
    this.ws.send(JSON.stringify({ type: 'config', input_format: 'pcm_16000', output_format: 'pcm_16000' }));
    await this.until(() => this.of('conversation_created').length > 0 || this.of('error').length > 0);
    const id = this.of('conversation_created')[0]?.conversation_id;
    return typeof id === 'string' ? id : null;
  }

  get refusal(): string | undefined {
    return (this.of('error')[0]?.error as { code?: string } | undefined)?.code;
  }
}

interface ConversationRow {
  id: string;
  node_id: string | null;
  state: string;
  ended_by: string | null;
  origin: string;
}

t.test('two nodes behind Kamailio and HAProxy on one database', async (t) => {
  const db = await createTempDatabase('parley_test_cluster');
  const sql = postgres(db.url, { max: 2, onnotice: () => {} });
  t.teardown(async () => {
    await sql.end();
    await db.drop();
  });
  const rtpBase = 42_000 + (process.pid % 50) * 100;
  const env = (i: number) => ({
    DATABASE_URL: db.url,
    PARLEY_BOOTSTRAP_API_KEY: KEY,
    PARLEY_DATA_DIR: tempDir(`cluster-${NODE_IDS[i]}`),
    PARLEY_LEASE_TTL_SEC: `${LEASE_TTL_SEC}`,
    // The long calls send no RTP.
    PARLEY_RTP_TIMEOUT_SEC: '120',
    PARLEY_RTP_PORT_MIN: `${rtpBase + i * 50}`,
    PARLEY_RTP_PORT_MAX: `${rtpBase + i * 50 + 49}`,
  });
  // Started together: migrations and the first workspace are made once whichever node comes first.
  const spawned: SpawnedNode[] = [];
  t.teardown(() => {
    for (const n of spawned) n.kill('SIGKILL');
  });
  const nodes = await Promise.all(NODE_IDS.map((id, i) => startClusterNode(id, env(i), spawned)));
  const [a, b] = nodes as [ClusterNode, ClusterNode];
  const haproxy = await startHaproxy(nodes);
  t.teardown(() => haproxy.peer.stop());
  const kamailioPort = await freeUdpPort();
  const kamailio = await startKamailio(
    kamailioPort,
    nodes.map((n) => `sip:127.0.0.1:${n.sipPort}`),
    'kamailio/cluster.cfg',
  );
  t.teardown(() => kamailio.stop());
  const apiBase = `http://127.0.0.1:${haproxy.apiPort}`;
  const stsUrl = `ws://127.0.0.1:${haproxy.wsPort}/v1/sts/ws`;
  const apiCall = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(apiBase + path, {
      method,
      headers: { authorization: `Bearer ${KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, node: res.headers.get('x-parley-node'), body: (await res.json()) as any };
  };
  const conversations = () =>
    sql<ConversationRow[]>`select id, node_id, state, ended_by, origin from conversations order by created_at`;
  const [project] = await sql<{ id: string }[]>`select id from projects`;
  t.equal(
    (await sql`select 1 from organizations`).length,
    1,
    'one workspace, though both nodes started on the empty database',
  );

  t.test('the HTTP API through HAProxy is served by both nodes', async (t) => {
    const upsert = await apiCall('PUT', '/v1/agents/upsert', {
      name: 'phone',
      phone_number: 'custom',
      custom_phone_numbers: [NUMBER],
    });
    t.equal(upsert.status, 200, 'an agent with a number, through the balancer');
    const served = new Set<string | null>([upsert.node]);
    for (let i = 0; i < 3; i++) {
      const r = await apiCall('GET', '/v1/agents/phone');
      t.equal(r.status, 200);
      served.add(r.node);
    }
    t.same([...served].sort(), [...NODE_IDS], 'requests answered by node-a and node-b');
  });

  t.test('STS conversations through HAProxy spread over both nodes; the cap of 2 holds across them', async (t) => {
    await sql`update projects set max_active_conversations = 2 where id = ${project!.id}`;
    t.teardown(() => sql`update projects set max_active_conversations = null where id = ${project!.id}`);
    const clients = [await StsClient.open(stsUrl), await StsClient.open(stsUrl)];
    const ids = await Promise.all(clients.map((c) => c.start()));
    t.ok(
      ids.every((id) => id !== null),
      'two conversations admitted',
    );
    const rows = await sql<{ node_id: string; lease: string }[]>`
      select c.node_id, l.node_id as lease from conversations c join conversation_leases l on l.conversation_id = c.id
      where c.id in ${sql(ids as string[])} order by c.node_id`;
    t.same(
      rows.map((r) => r.node_id),
      [...NODE_IDS],
      'one conversation on each node (its record names its node)',
    );
    t.same(
      rows.map((r) => r.lease),
      [...NODE_IDS],
      'each held by a lease of its node',
    );

    // A third conversation is refused whichever node it reaches: each node asked directly.
    for (const node of nodes) {
      const third = await StsClient.open(`ws://127.0.0.1:${node.wsPort}/v1/sts/ws`);
      t.equal(await third.start(), null, `${node.id} refuses a third conversation`);
      t.equal(third.refusal, 'max_active_conversations_reached', 'naming the cap');
      await third.closed;
    }
    // And a call through Kamailio, whichever node it reaches.
    const call = await runSipp({
      scenario: 'uac_refused.xml',
      target: `127.0.0.1:${kamailioPort}`,
      service: NUMBER,
      keys: PCMU,
    });
    const final = call.statuses.filter((s) => s >= 200);
    t.same(final, [486], 'a call at the cap is refused with 486 Busy Here', { output: call.output.slice(-1500) });

    for (const c of clients) c.ws.close(1000);
    await until(async () => (await sql`select 1 from conversations where state <> 'ended'`).length === 0, {
      what: 'both conversations to end',
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from conversation_leases`;
    t.equal(n, 0, 'their leases are freed');
  });

  t.test('a reconnect through HAProxy with its cookie reaches the node that owns the conversation', async (t) => {
    for (let i = 0; i < 2; i++) {
      const first = await StsClient.open(stsUrl);
      const id = await first.start();
      t.ok(id && first.cookie.startsWith('PARLEY_NODE='), `the upgrade's answer names the node (${first.cookie})`);
      const [row] = await sql<{ node_id: string }[]>`select node_id from conversations where id = ${id}`;
      t.equal(first.cookie, `PARLEY_NODE=${row!.node_id}`, 'the node that holds it');
      first.ws.terminate(); // dropped, not closed: the conversation waits for a reconnect
      const again = await StsClient.open(`${stsUrl}?reconnect_conv_id=${id}`, { cookie: first.cookie });
      await again.until(() => again.of('conversation_created').length > 0);
      t.equal(again.of('conversation_created')[0]?.conversation_id, id, `resumed on ${row!.node_id}`);
      again.ws.close(1000);
      await again.closed;
    }
  });

  t.test('node-a killed mid-call and mid-conversation: node-b serves on and ends what node-a left', async (t) => {
    // Two long calls through Kamailio (round robin: one per node) and one STS conversation per node.
    const sippPort = await freeUdpPort();
    const calls = runSippStats(
      [
        '-sf',
        `${FIXTURES_DIR}sipp/uac_long_call.xml`,
        '-i',
        '127.0.0.1',
        '-p',
        `${sippPort}`,
        '-mp',
        `${await freeUdpPort()}`,
        '-s',
        NUMBER,
        '-key',
        'caller',
        CALLER,
        '-m',
        '2',
        '-l',
        '2',
        '-r',
        '10',
        '-d',
        `${CALL_MS}`,
        '-max_non_invite_retrans',
        '3',
        '-timeout',
        '60s',
        `127.0.0.1:${kamailioPort}`,
      ],
      { timeoutMs: 90_000 },
    );
    const sts = [await StsClient.open(stsUrl), await StsClient.open(stsUrl)];
    const stsIds = await Promise.all(sts.map((c) => c.start()));
    const live = async () => (await conversations()).filter((c) => c.state !== 'ended');
    await until(async () => (await live()).length === 4, {
      what: 'two calls and two STS conversations in progress',
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    const before = await live();
    const onA = before.filter((c) => c.node_id === a.id);
    const onB = before.filter((c) => c.node_id === b.id);
    t.same(
      onA.map((c) => c.origin).sort(),
      ['direct', 'telephony-inbound'],
      'node-a has a call and an STS conversation',
    );
    t.same(
      onB.map((c) => c.origin).sort(),
      ['direct', 'telephony-inbound'],
      'node-b has a call and an STS conversation',
    );

    const leases = await sql<
      { conversation_id: string; node_id: string }[]
    >`select conversation_id, node_id from conversation_leases`;
    t.same(
      Object.fromEntries(leases.map((l) => [l.conversation_id, l.node_id])),
      Object.fromEntries(before.map((c) => [c.id, c.node_id])),
      'each call and conversation is held by a lease of the node its record names',
    );

    const [{ latest, killed_at }] = await sql<{ latest: Date; killed_at: Date }[]>`
      select max(expires_at) as latest, now() as killed_at from conversation_leases where node_id = ${a.id}`;
    a.kill('SIGKILL');
    t.equal(await a.exited, 'SIGKILL', 'node-a was killed');
    t.ok(
      latest.getTime() <= killed_at.getTime() + LEASE_TTL_SEC * 1000,
      'its leases lapse within the lease TTL of its death',
    );

    // The survivor's sweep ends node-a's conversations, saved, as not finished on their own.
    const ids = onA.map((c) => c.id);
    await until(
      async () =>
        (await sql`select 1 from conversations where id in ${sql(ids)} and state = 'ended'`).length === ids.length,
      {
        what: "node-a's conversations to be ended by node-b",
        timeoutMs: 60_000,
        intervalMs: 200,
      },
    );
    const ended = await sql<
      ConversationRow[]
    >`select id, node_id, state, ended_by, origin from conversations where id in ${sql(ids)}`;
    t.same(
      ended.map((c) => c.ended_by),
      ['error', 'error'],
      'ended_by error',
    );
    const [{ n }] = await sql<
      { n: number }[]
    >`select count(*)::int as n from conversation_leases where node_id = ${a.id}`;
    t.equal(n, 0, "node-a's leases are gone");
    t.match(b.output(), /recovery: a conversation left in progress by a node that died was ended/, 'node-b did it');

    // node-b's conversations go on: its STS conversation is live, and a new conversation and a new call land on it.
    const bSts = sts[stsIds.indexOf(onB.find((c) => c.origin === 'direct')!.id)]!;
    t.equal(bSts.ws.readyState, WebSocket.OPEN, "node-b's STS conversation is still open");
    for (let i = 0; i < 2; i++) {
      const next = await StsClient.open(stsUrl);
      const id = await next.start();
      const [row] = await sql<{ node_id: string }[]>`select node_id from conversations where id = ${id}`;
      t.equal(row?.node_id, b.id, 'a new STS conversation through HAProxy is served by node-b');
      next.ws.close(1000);
      await next.closed;
    }
    const newCall = await runSippStats(
      [
        '-sf',
        `${FIXTURES_DIR}sipp/uac_long_call.xml`,
        '-i',
        '127.0.0.1',
        '-p',
        `${await freeUdpPort()}`,
        '-mp',
        `${await freeUdpPort()}`,
        '-s',
        NUMBER,
        '-key',
        'caller',
        CALLER,
        '-m',
        '2',
        '-l',
        '1',
        '-r',
        '1',
        '-d',
        '500',
        '-timeout',
        '30s',
        `127.0.0.1:${kamailioPort}`,
      ],
      { timeoutMs: 40_000 },
    );
    t.equal(Number(newCall.stats['SuccessfulCall(C)']), 2, 'new calls through Kamailio are answered', {
      errors: newCall.errors.slice(-1500),
      kamailio: kamailio.log.slice(-2000),
    });
    const newest = await sql<
      ConversationRow[]
    >`select id, node_id, state, ended_by, origin from conversations where origin = 'telephony-inbound' order by created_at desc limit 2`;
    t.same(
      newest.map((c) => c.node_id),
      [b.id, b.id],
      'by node-b',
    );

    // The long calls: node-b's completes (its BYE answered); node-a's BYE finds no one.
    const done = await calls;
    t.equal(Number(done.stats['SuccessfulCall(C)']), 1, "node-b's call completed", {
      errors: done.errors.slice(-1500),
    });
    t.equal(Number(done.stats['FailedCall(C)']), 1, "node-a's call could not be hung up");
    bSts.ws.close(1000);
    await until(async () => (await sql`select 1 from conversations where state <> 'ended'`).length === 0, {
      what: 'every conversation to end',
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    const survivors = await sql<
      ConversationRow[]
    >`select id, node_id, state, ended_by, origin from conversations where id in ${sql(onB.map((c) => c.id))}`;
    t.notOk(
      survivors.some((c) => c.ended_by === 'error'),
      `node-b's conversations ended on their own (${survivors.map((c) => c.ended_by).join(', ')})`,
    );
  });
});

// /metrics on the real process (docs/operations.md, "Metrics"): refused without its token and scraped with it, with
// values that move as the node works (an HTTP request shows its route, a conversation its start and end, a spoken
// turn its first audio, an OPTIONS its method and answer, the threads their event-loop delay); on its own listener
// when PARLEY_METRICS_PORT is set; off when nothing is configured. And /readyz naming the database while it cannot be
// reached.
import t, { type Test } from 'tap';
import { controlPlaneUrl, startMain, type MainProcess } from '../helpers/main-process.js';
import { readFileSync } from 'node:fs';
import { soundFile } from '../helpers/debian-packages.js';
import { streamAudio, TestClient, wavPcm } from '../helpers/realtime.js';
import { createTempDatabase, POSTGRES_ADMIN_URL, type TempDatabase } from '../helpers/temp-database.js';
import { startTcpProxy } from '../realtime/tcp-proxy.js';
import { until } from '../helpers/wait.js';
import { runSipp } from '../telephony/sipp-scenario.js';

t.setTimeout(600_000);

const KEY = 'bootstrap-key-for-metrics-tests-0123456789';
const TOKEN = 'metrics-token-for-tests-0123456789';

/** Prometheus text exposition: `name{labels} value` lines, keyed by the name and its labels sorted. */
class Exposition {
  readonly samples = new Map<string, number>();
  readonly types = new Map<string, string>();

  constructor(readonly text: string) {
    for (const line of text.split('\n')) {
      const type = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (type) this.types.set(type[1]!, type[2]!);
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!m) continue;
      const labels = m[2]
        ? [...m[2].matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1]!, l[2]!] as const)
        : [];
      this.samples.set(Exposition.key(m[1]!, Object.fromEntries(labels)), Number(m[3]));
    }
  }

  static key(name: string, labels: Record<string, string>): string {
    return `${name}{${Object.entries(labels)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k}="${v}"`)
      .join(',')}}`;
  }

  /** The sample's value; 0 when absent (a counter or gauge not yet set). */
  value(name: string, labels: Record<string, string> = {}): number {
    return this.samples.get(Exposition.key(name, labels)) ?? 0;
  }
}

interface Node {
  main: MainProcess;
  db: TempDatabase;
  base: string;
}

async function startNode(
  t: Test,
  env: Record<string, string>,
  databaseUrl?: (db: TempDatabase) => string,
): Promise<Node> {
  const db = await createTempDatabase('parley_test_metrics');
  const main = startMain({
    DATABASE_URL: databaseUrl?.(db) ?? db.url,
    PARLEY_BOOTSTRAP_API_KEY: KEY,
    PARLEY_WS_PORT: '0',
    ...env,
  });
  t.teardown(async () => {
    main.kill('SIGKILL');
    await main.exited;
    await db.drop();
  });
  const base = await controlPlaneUrl(main);
  await main.waitFor(/"msg":"parley ready"/);
  return { main, db, base };
}

async function logged(main: MainProcess, msg: string): Promise<Record<string, unknown>> {
  const [line] = await main.waitFor(new RegExp(`^\\{.*"msg":"${msg}".*\\}$`, 'm'));
  return JSON.parse(line!) as Record<string, unknown>;
}

t.test('the token guards /metrics on the control plane; values move as the node works', async (t) => {
  const node = await startNode(t, { PARLEY_METRICS_TOKEN: TOKEN });
  const scrape = async () => {
    const res = await fetch(`${node.base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    if (res.status !== 200 || !/^text\/plain; version=0\.0\.4/.test(res.headers.get('content-type') ?? '')) {
      throw new Error(`scrape: ${res.status} ${res.headers.get('content-type')}: ${await res.text()}`);
    }
    return new Exposition(await res.text());
  };
  t.equal((await fetch(`${node.base}/metrics`)).status, 401, 'no token: 401');
  t.equal(
    (await fetch(`${node.base}/metrics`, { headers: { authorization: 'Bearer not-the-token-at-all' } })).status,
    401,
    'a wrong token: 401',
  );
  t.equal(
    (await fetch(`${node.base}/metrics`, { headers: { authorization: `Bearer ${KEY}` } })).status,
    401,
    'an API key is not the token',
  );

  const projects = await fetch(`${node.base}/v1/projects`, { headers: { authorization: `Bearer ${KEY}` } });
  t.equal(projects.status, 200);
  const first = await scrape();
  t.equal(
    first.value('parley_http_request_duration_seconds_count', { method: 'GET', route: '/v1/projects', status: '200' }),
    1,
    'the request shows with its route',
  );
  t.equal(first.types.get('parley_jobs'), 'gauge');
  t.ok(first.value('parley_database_ping_seconds') > 0, 'the database answered the ping');
  t.equal(first.value('parley_ready'), 1);
  t.ok(first.value('parley_event_loop_delay_seconds_count', { thread: 'main' }) > 0, "main's event loop is sampled");

  // A conversation: live while it runs, counted by its ending when it ends.
  const ws = await logged(node.main, 'realtime workers listening');
  const live = { worker: '0', origin: 'direct' };
  await until(async () => (await scrape()).samples.get(Exposition.key('parley_live_conversations', live)) === 0, {
    timeoutMs: 15_000,
    what: "the worker's snapshot: no conversation live, shown as 0",
  });
  const client = await TestClient.open(`ws://127.0.0.1:${ws.port}/v1/sts/ws`, { authorization: `Bearer ${KEY}` });
  client.send({ type: 'config', input_format: 'pcm_8000', output_format: 'pcm_8000', binary_audio: true });
  await client.untilEvent('ready_to_start_conversation');
  await until(async () => (await scrape()).value('parley_live_conversations', live) === 1, {
    timeoutMs: 15_000,
    what: 'one live conversation',
  });
  const during = await scrape();
  t.equal(during.value('parley_conversations_ended_total', { ended_by: 'user' }), 0);
  t.ok(
    during.value('parley_event_loop_delay_seconds_count', { thread: 'worker-0' }) > 0,
    "the worker's event loop is sampled",
  );
  await until(async () => (await scrape()).value('parley_frame_duration_seconds_count', { worker: '0' }) > 0, {
    timeoutMs: 15_000,
    what: 'frames measured',
  });
  // A spoken turn the echo engine answers: its first audio is measured.
  const answered = () => {
    const end = client.got.order.indexOf('user_finished_speaking');
    return end >= 0 && client.got.order.indexOf('assistant_started_speaking', end) > end;
  };
  const stream = streamAudio(client, wavPcm(readFileSync(soundFile('tt-weasels'))), 8000, {
    binary: true,
    keepGoing: () => !answered(),
  });
  await client.until(() => answered() || client.ws.readyState !== client.ws.OPEN);
  await stream;
  await until(async () => (await scrape()).value('parley_first_audio_latency_seconds_count', { worker: '0' }) === 1, {
    timeoutMs: 15_000,
    what: "the answered turn's first audio measured",
  });
  client.close();
  await until(
    async () => {
      const s = await scrape();
      return (
        s.value('parley_conversations_ended_total', { ended_by: 'user' }) === 1 &&
        s.value('parley_live_conversations', live) === 0
      );
    },
    { timeoutMs: 15_000, what: 'the conversation counted as ended by its user, and no longer live' },
  );

  // A project at its cap refuses the next one: counted.
  const capped = await fetch(`${node.base}/v1/projects/main`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ max_active_conversations: 0 }),
  });
  t.equal(capped.status, 200);
  const refused = await TestClient.open(`ws://127.0.0.1:${ws.port}/v1/sts/ws`, { authorization: `Bearer ${KEY}` });
  refused.send({ type: 'config', input_format: 'pcm_16000', output_format: 'pcm_16000' });
  await refused.closed;
  t.equal((await scrape()).value('parley_admissions_refused_total'), 1, 'the refusal at the cap is counted');

  // SIP: an OPTIONS probe, in and answered.
  const sip = await logged(node.main, 'SIP listening');
  const probe = await runSipp({ scenario: 'options.xml', target: `127.0.0.1:${sip.port}` });
  t.same(probe.statuses, [200]);
  const after = await scrape();
  t.equal(after.value('parley_sip_requests_total', { direction: 'in', method: 'OPTIONS' }), 1);
  t.equal(after.value('parley_sip_responses_total', { direction: 'out', method: 'OPTIONS', code: '200' }), 1);
  t.equal(after.value('parley_sip_calls'), 0);
});

t.test('a separate metrics listener; /readyz names an unreachable database', async (t) => {
  const postgres = new URL(POSTGRES_ADMIN_URL);
  const relay = await startTcpProxy({ host: postgres.hostname, port: Number(postgres.port || 5432) });
  t.teardown(() => relay.close());
  const node = await startNode(t, { PARLEY_METRICS_PORT: '0', PARLEY_METRICS_HOST: '127.0.0.1' }, (db) => {
    const url = new URL(db.url);
    url.port = String(relay.port);
    return url.toString();
  });
  const [, metricsUrl] = await node.main.waitFor(
    /"url":"(http:\/\/127\.0\.0\.1:\d+\/metrics)","msg":"metrics listening"/,
  );
  const res = await fetch(metricsUrl!);
  t.equal(res.status, 200, 'no token set: the separate listener serves it as it is');
  t.match(await res.text(), /# TYPE parley_live_conversations gauge/);
  t.equal((await fetch(metricsUrl!.replace('/metrics', '/v1/projects'))).status, 404, 'and nothing else');
  t.equal((await fetch(`${node.base}/metrics`)).status, 404, 'not on the control plane');

  t.same(((await (await fetch(`${node.base}/readyz`)).json()) as { checks: unknown }).checks, {
    listeners: 'ok',
    drain: 'ok',
    database: 'ok',
  });
  relay.cut();
  const down = await fetch(`${node.base}/readyz`);
  t.equal(down.status, 503, 'the database unreachable: 503');
  t.same(await down.json(), {
    status: 'not_ready',
    checks: { listeners: 'ok', drain: 'ok', database: 'unreachable' },
    not_ready: ['database'],
  });
  t.equal((await fetch(`${node.base}/healthz`)).status, 200, 'alive all the same');
  relay.restore();
  await until(async () => (await fetch(`${node.base}/readyz`)).status === 200, {
    timeoutMs: 15_000,
    what: '/readyz 200 once the database is back',
  });
});

t.test('unconfigured: /metrics is off', async (t) => {
  const node = await startNode(t, {});
  t.equal((await fetch(`${node.base}/metrics`)).status, 404);
  t.equal((await fetch(`${node.base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).status, 404);
  t.equal((await fetch(`${node.base}/readyz`)).status, 200);
});

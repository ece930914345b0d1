// Soak: a real Parley node (child process, PostgreSQL) under CONCURRENCY clients for MINUTES, each running one
// conversation after another, mixed: whole conversations streaming real speech, early hang-ups (a close or a dropped
// connection right after config), drops with a reconnect, configs bearing NUL characters, cancels through the API,
// and floods of `say` before a drop. Then the load stops and the node is left to go idle.
// Reported: conversations per scenario and those that did not go as expected, leases held and records left open once
// idle (both must be 0), the node's RSS at start, peak and end, and how long it took to go idle.
// Results: bench/results/soak.json.
// Usage: node --import tsx bench/soak.ts [--minutes 10] [--concurrency 200]
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { createTempDatabase } from '../test/helpers/temp-database.js';
import { TestClient, wavPcm } from '../test/helpers/realtime.js';
import { startNode } from '../test/realtime/node-process.js';

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const MINUTES = option('minutes', 10);
const CONCURRENCY = option('concurrency', 200);
const RATE = 16_000;
const FRAME_MS = 20;
const FRAME_SAMPLES = (RATE * FRAME_MS) / 1000;
const GRACE_SEC = 30;
/** Polls (1 s apart) for the node to go idle once the load stops: the grace, then the finishes. */
const IDLE_POLLS = 180;
const KEY = `soak-${randomBytes(16).toString('hex')}`;
const PROMPT = '/usr/share/asterisk/sounds/en_US_f_Allison/tt-weasels.wav';
const CONFIG = { type: 'config', input_format: 'pcm_16000', output_format: 'pcm_16000' } as const;

type Scenario = 'whole' | 'early_close' | 'early_drop' | 'reconnect' | 'nul_config' | 'cancel' | 'say_flood';
/** How often each scenario is picked (relative weights). */
const WEIGHTS: Record<Scenario, number> = {
  whole: 30,
  early_close: 10,
  early_drop: 10,
  reconnect: 15,
  nul_config: 10,
  cancel: 15,
  say_flood: 10,
};
const SAY_FLOOD = 200;

/** 8 kHz prompt as 16 kHz frames (each sample twice: only its loudness matters here). */
const speech = (() => {
  const pcm8 = wavPcm(readFileSync(PROMPT));
  const out = new Int16Array(pcm8.length * 2);
  for (let i = 0; i < pcm8.length; i++) out[2 * i] = out[2 * i + 1] = pcm8[i]!;
  return out;
})();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pick = <T>(xs: readonly T[]) => xs[Math.floor(Math.random() * xs.length)]!;

function scenario(): Scenario {
  const total = Object.values(WEIGHTS).reduce((a, b) => a + b, 0);
  let r = Math.random() * total;
  for (const [s, w] of Object.entries(WEIGHTS) as [Scenario, number][]) if ((r -= w) < 0) return s;
  return 'whole';
}

/** Streams `ms` of audio at real time: speech from a random place in the prompt, then silence. */
async function stream(client: TestClient, ms: number): Promise<void> {
  const frames = ms / FRAME_MS;
  const from = Math.floor(Math.random() * (speech.length / FRAME_SAMPLES / 2)) * FRAME_SAMPLES;
  const start = performance.now();
  for (let i = 0; i < frames; i++) {
    if (client.ws.readyState !== client.ws.OPEN) return;
    const off = from + i * FRAME_SAMPLES;
    const frame =
      off + FRAME_SAMPLES <= speech.length ? speech.subarray(off, off + FRAME_SAMPLES) : new Int16Array(FRAME_SAMPLES);
    client.send({
      type: 'audio_chunk',
      audio: Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength).toString('base64'),
    });
    const wait = start + (i + 1) * FRAME_MS - performance.now();
    if (wait > 0) await sleep(wait);
  }
}

interface Tally {
  runs: number;
  unexpected: number;
  /** Error codes the server sent, by code. */
  errors: Record<string, number>;
}

const tallies = Object.fromEntries(
  Object.keys(WEIGHTS).map((s) => [s, { runs: 0, unexpected: 0, errors: {} }]),
) as Record<Scenario, Tally>;
const unexpectedSamples: string[] = [];

function note(s: Scenario, ok: boolean, why: string, client?: TestClient): void {
  const t = tallies[s];
  t.runs++;
  for (const e of client?.events('error') ?? []) {
    const code = String((e.error as { code?: string }).code);
    t.errors[code] = (t.errors[code] ?? 0) + 1;
  }
  if (!ok) {
    t.unexpected++;
    if (unexpectedSamples.length < 20) unexpectedSamples.push(`${s}: ${why}`);
  }
}

async function open(wsUrl: string, path = '/v1/sts/ws'): Promise<TestClient> {
  return TestClient.open(`${wsUrl}${path}`, { authorization: `Bearer ${KEY}` });
}

/** Config sent; resolves with the conversation id once ready (null when refused, with the error code). */
async function started(client: TestClient, extra: Record<string, unknown> = {}): Promise<string | null> {
  client.send({ ...CONFIG, ...extra });
  await client.until(
    () =>
      client.events('ready_to_start_conversation').length > 0 ||
      client.events('error').length > 0 ||
      client.ws.readyState > 1,
  );
  return client.events('ready_to_start_conversation').length > 0
    ? String(client.events('conversation_created')[0]?.conversation_id)
    : null;
}

async function run(node: { url: string; wsUrl: string }, s: Scenario): Promise<void> {
  const client = await open(node.wsUrl);
  try {
    switch (s) {
      case 'whole': {
        const id = await started(client, Math.random() < 0.5 ? { welcome_message: 'Hello, how can I help?' } : {});
        if (!id) return note(s, false, 'not started', client);
        await stream(client, 2000 + Math.random() * 4000);
        client.send({ type: 'say', text: 'Thank you, goodbye.' });
        await stream(client, 1500);
        client.ws.close(1000);
        const closed = await client.closed;
        return note(s, closed.code === 1000 || closed.code === 1005, `closed ${closed.code}`, client);
      }
      case 'early_close':
      case 'early_drop': {
        client.send({ ...CONFIG, external_id: `early-${randomBytes(4).toString('hex')}` });
        if (s === 'early_close') client.ws.close(1000);
        else client.ws.terminate();
        await client.closed;
        return note(s, true, '', client);
      }
      case 'reconnect': {
        const id = await started(client);
        if (!id) return note(s, false, 'not started', client);
        await stream(client, 1000 + Math.random() * 2000);
        client.ws.terminate();
        await client.closed;
        await sleep(300 + Math.random() * 1500);
        const again = await open(node.wsUrl, `/v1/sts/ws?reconnect_conv_id=${id}`);
        await again.until(() => again.events('conversation_created').length > 0 || again.ws.readyState > 1);
        const resumed = again.events('conversation_created')[0]?.conversation_id === id;
        await stream(again, 1000 + Math.random() * 2000);
        again.ws.close(1000);
        await again.closed;
        return note(s, resumed, 'not resumed', again);
      }
      case 'nul_config': {
        const field = pick(['external_id', 'welcome_message', 'system_prompt'] as const);
        client.send({ ...CONFIG, [field]: `bad \u0000 value` });
        const closed = await client.closed;
        const refused = client.events('error').length > 0 && client.events('conversation_created').length === 0;
        return note(
          s,
          refused && closed.code === 1008,
          `closed ${closed.code}, ${client.events('error').length} errors`,
          client,
        );
      }
      case 'cancel': {
        const id = await started(client);
        if (!id) return note(s, false, 'not started', client);
        const streaming = stream(client, 10_000);
        await sleep(500 + Math.random() * 2000);
        const res = await fetch(`${node.url}/v1/conversations/${id}/cancel`, {
          method: 'POST',
          headers: { authorization: `Bearer ${KEY}` },
        });
        const closed = await client.closed;
        await streaming;
        return note(
          s,
          res.status === 200 && closed.reason === 'user_canceled',
          `cancel ${res.status}, closed ${closed.code} ${closed.reason}`,
          client,
        );
      }
      case 'say_flood': {
        const id = await started(client);
        if (!id) return note(s, false, 'not started', client);
        for (let i = 0; i < SAY_FLOOD; i++) client.send({ type: 'say', text: `Flood message ${i}.` });
        await client.until(() => client.events('error').length > 0 || client.ws.readyState > 1);
        client.ws.terminate();
        await client.closed;
        return note(
          s,
          client.events('error').some((e) => (e.error as { code: string }).code === 'queue_full'),
          'no queue_full',
          client,
        );
      }
    }
  } catch (err) {
    note(s, false, (err as Error).message, client);
  } finally {
    if (client.ws.readyState === client.ws.OPEN) client.ws.terminate();
  }
}

/** The node's resident set (VmRSS), MB. */
function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : 0;
}

async function main(): Promise<void> {
  const db = await createTempDatabase('parley_soak');
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-soak-'));
  const sql = postgres(db.url, { max: 2, onnotice: () => {} });
  const node = await startNode({
    DATABASE_URL: db.url,
    PARLEY_BOOTSTRAP_API_KEY: KEY,
    PARLEY_DATA_DIR: dataDir,
    PARLEY_LOG_LEVEL: 'info',
    PARLEY_RECONNECT_GRACE_SEC: String(GRACE_SEC),
    PARLEY_WORKSPACE_MAX_ACTIVE_CONVERSATIONS: String(CONCURRENCY * 4),
  });
  try {
    await sleep(2000);
    const rss = { start: rssMb(node.pid), peak: 0, end: 0 };
    const sampler = setInterval(() => (rss.peak = Math.max(rss.peak, rssMb(node.pid))), 1000);
    const deadline = Date.now() + MINUTES * 60_000;
    let conversations = 0;
    const started = Date.now();
    const progress = setInterval(() => {
      const unexpected = Object.values(tallies).reduce((n, t) => n + t.unexpected, 0);
      process.stdout.write(
        `soak: ${Math.round((Date.now() - started) / 1000)} s, ${conversations} conversations, ${unexpected} unexpected, rss ${rssMb(node.pid)} MB\n`,
      );
    }, 30_000);
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async (_, slot) => {
        await sleep(((slot * 1000) / CONCURRENCY) * 5); // a 5 s ramp
        while (Date.now() < deadline) {
          conversations++;
          await run(node, scenario());
        }
      }),
    );
    clearInterval(progress);
    // Idle: every hang-up's grace runs out and every record is finished.
    const loadEndedAt = Date.now();
    let leases = -1;
    let open = -1;
    for (let i = 0; i < IDLE_POLLS; i++) {
      [{ leases }] = await sql<{ leases: number }[]>`select count(*)::int as leases from conversation_leases`;
      [{ open }] = await sql<
        { open: number }[]
      >`select count(*)::int as open from conversations where state <> 'ended'`;
      if (leases === 0 && open === 0) break;
      await sleep(1000);
    }
    const idleAfterSec = Math.round((Date.now() - loadEndedAt) / 1000);
    await sleep(5000);
    clearInterval(sampler);
    rss.end = rssMb(node.pid);
    rss.peak = Math.max(rss.peak, rss.end);
    const [{ total }] = await sql<{ total: number }[]>`select count(*)::int as total from conversations`;
    const byEnd = await sql<
      { ended_by: string; n: number }[]
    >`select ended_by, count(*)::int as n from conversations group by ended_by order by n desc`;
    const result = {
      bench: 'soak',
      date: new Date().toISOString(),
      setup: {
        minutes: MINUTES,
        concurrency: CONCURRENCY,
        node: 'one media worker, PostgreSQL, echo engine, pcm_16000 base64 audio_chunk at real time',
        reconnect_grace_sec: GRACE_SEC,
        scenario_weights: WEIGHTS,
        say_flood: SAY_FLOOD,
        cpus: 2,
        load_average_1m_at_end: Number(loadavg()[0]!.toFixed(2)),
      },
      conversations_attempted: conversations,
      records: { total, by_ended_by: Object.fromEntries(byEnd.map((r) => [r.ended_by ?? 'open', r.n])) },
      scenarios: tallies,
      unexpected_samples: unexpectedSamples,
      at_idle: { leases_held: leases, records_open: open, idle_after_sec: idleAfterSec },
      rss_mb: rss,
    };
    mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
    writeFileSync(new URL('./results/soak.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`);
    process.stdout.write(
      `${JSON.stringify({ conversations, at_idle: result.at_idle, rss_mb: rss, unexpected: Object.fromEntries(Object.entries(tallies).map(([k, v]) => [k, `${v.unexpected}/${v.runs}`])) })}\n`,
    );
  } finally {
    node.kill('SIGTERM');
    await node.exited;
    await sql.end();
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();

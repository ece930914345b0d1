// Control-plane throughput on real PostgreSQL: authenticated GET /v1/agents/{name} (GET /v1/projects/main when the
// agents route is missing) and PUT /v1/agents/upsert, against `src/main.ts` running as its own process.
// Parley is pinned to core 0 and this load generator to core 1 (taskset), so figures are per core.
// Run: node --import tsx bench/api.ts   (writes bench/results/api.json; BENCH_DURATION_SEC, default 5)
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { POSTGRES_ADMIN_URL } from '../test/helpers/server.js';

const DURATION_SEC = Number(process.env.BENCH_DURATION_SEC ?? 5);
const CONNECTIONS = 10;
const WARMUP_SEC = 1;
const PARLEY_CORE = '0';
const GENERATOR_CORE = '1';
const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The part of autocannon's API used here (the package ships no type declarations). */
interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; average: number };
  errors: number;
  non2xx: number;
}
type Autocannon = (opts: {
  url: string;
  connections: number;
  duration: number;
  method?: string;
  headers: Record<string, string>;
  body?: string;
}) => Promise<AutocannonResult>;
const AUTOCANNON = 'autocannon';
const autocannon = ((await import(AUTOCANNON)) as { default: Autocannon }).default;

interface Figures {
  path: string;
  method: string;
  requests_per_sec: number;
  latency_p50_ms: number;
  latency_p99_ms: number;
  latency_avg_ms: number;
  requests: number;
  errors: number;
  non2xx: number;
}

async function load(base: string, key: string, method: string, path: string, body?: unknown): Promise<Figures> {
  const opts = {
    url: base + path,
    connections: CONNECTIONS,
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  };
  await autocannon({ ...opts, duration: WARMUP_SEC });
  const r = await autocannon({ ...opts, duration: DURATION_SEC });
  return {
    path,
    method,
    requests_per_sec: r.requests.average,
    latency_p50_ms: r.latency.p50,
    latency_p99_ms: r.latency.p99,
    latency_avg_ms: r.latency.average,
    requests: r.requests.total,
    errors: r.errors,
    non2xx: r.non2xx,
  };
}

/**
 * PUT /v1/agents/upsert from CONNECTIONS loops, each updating its own agent: concurrent writes of ONE agent answer
 * 409 by design (spec, "States": the agent is being updated), which would measure the lock, not the write.
 * autocannon cannot give each connection a stable body of its own, so this loop measures it (fetch, keep-alive).
 */
async function upserts(base: string, key: string): Promise<Figures> {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const run = async (seconds: number, latencies: number[], statuses: Map<number, number>) => {
    const end = performance.now() + seconds * 1000;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async (_, c) => {
        for (let i = 0; performance.now() < end; i++) {
          const body = JSON.stringify({ name: `bench-upsert-${c}`, system_prompt: `You are assistant ${c}, revision ${i}.` });
          const t0 = performance.now();
          const res = await fetch(`${base}/v1/agents/upsert`, { method: 'PUT', headers, body });
          await res.arrayBuffer();
          latencies.push(performance.now() - t0);
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        }
      }),
    );
  };
  await run(WARMUP_SEC, [], new Map());
  const latencies: number[] = [];
  const statuses = new Map<number, number>();
  await run(DURATION_SEC, latencies, statuses);
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] * 100) / 100;
  const ok = statuses.get(200) ?? 0;
  return {
    path: '/v1/agents/upsert',
    method: 'PUT',
    requests_per_sec: latencies.length / DURATION_SEC,
    latency_p50_ms: pct(50),
    latency_p99_ms: pct(99),
    latency_avg_ms: Math.round((latencies.reduce((a, b) => a + b, 0) / latencies.length) * 100) / 100,
    requests: latencies.length,
    errors: 0,
    non2xx: latencies.length - ok,
  };
}

function pin(pid: number, core: string): boolean {
  try {
    execFileSync('taskset', ['-cp', core, String(pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const dbName = `parley_bench_${randomBytes(4).toString('hex')}`;
const admin = postgres(POSTGRES_ADMIN_URL, { max: 1, onnotice: () => {} });
await admin.unsafe(`create database ${dbName}`);
const dbUrl = new URL(POSTGRES_ADMIN_URL);
dbUrl.pathname = `/${dbName}`;
const key = `bench-${randomBytes(16).toString('hex')}`;

const pinnedSelf = pin(process.pid, GENERATOR_CORE);
const child = spawn('taskset', ['-c', PARLEY_CORE, process.execPath, '--import', 'tsx', 'src/main.ts'], {
  cwd: ROOT,
  env: { ...process.env, DATABASE_URL: dbUrl.toString(), PARLEY_BOOTSTRAP_API_KEY: key, PARLEY_HTTP_PORT: '0', PARLEY_LOG_LEVEL: 'info' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
try {
  const base = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /"url":"(http:\/\/[^"]+)","msg":"control plane listening"/.exec(out);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`parley exited with ${code}: ${out}`)));
  });

  const agent = { name: 'bench-agent', system_prompt: 'You are a helpful assistant.' };
  const probe = await fetch(`${base}/v1/agents/upsert`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(agent),
  });
  const agentsRoute = probe.status === 200;
  const results: Figures[] = [];
  results.push(await load(base, key, 'GET', agentsRoute ? `/v1/agents/${agent.name}` : '/v1/projects/main'));
  if (agentsRoute) results.push(await upserts(base, key));
  else process.stdout.write(`PUT /v1/agents/upsert answered ${probe.status}: not measured\n`);

  const report = {
    benchmark: 'api',
    date: new Date().toISOString(),
    database: 'postgresql 127.0.0.1:5432 (pool of 10)',
    parley_core: pinnedSelf ? PARLEY_CORE : 'unpinned',
    generator_core: pinnedSelf ? GENERATOR_CORE : 'unpinned',
    note: 'one Parley process on one core; PostgreSQL itself is not pinned and shares the machine',
    // Other work on the machine during the run (1-minute load average at the end; 2 cores).
    load_average_1m: loadavg()[0],
    connections: CONNECTIONS,
    duration_sec: DURATION_SEC,
    results,
  };
  mkdirSync(new URL('results/', import.meta.url), { recursive: true });
  writeFileSync(new URL('results/api.json', import.meta.url), `${JSON.stringify(report, null, 2)}\n`);
  for (const r of results) {
    process.stdout.write(
      `${r.method} ${r.path}: ${r.requests_per_sec.toFixed(0)} req/s, p50 ${r.latency_p50_ms} ms, p99 ${r.latency_p99_ms} ms, ` +
        `errors ${r.errors}, non-2xx ${r.non2xx}\n`,
    );
  }
} finally {
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  await admin.unsafe(`drop database if exists ${dbName} with (force)`);
  await admin.end();
}

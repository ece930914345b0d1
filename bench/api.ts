// Control-plane throughput on real PostgreSQL: authenticated GET /v1/agents/{name} (GET /v1/projects/main when the
// agents route is missing) and PUT /v1/agents/upsert, against `src/main.ts` running as its own process.
// Parley is pinned to core 0 and this load generator to core 1 (taskset), so figures are per core.
// Run: node --import tsx bench/api.ts   (writes bench/results/api.json; BENCH_DURATION_SEC, default 5; BENCH_RUNS,
// default 3: each load is measured that many times and the run of median throughput reported)
// Profiling: BENCH_CPU_PROF=<dir> writes the server's CPU profile there; BENCH_ONLY=get|upsert runs one load
// (a partial run does not write the results file).
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { POSTGRES_ADMIN_URL } from '../test/helpers/server.js';

const DURATION_SEC = Number(process.env.BENCH_DURATION_SEC ?? 5);
/** Measurements of each load; the one of median throughput is reported, with every run's figures beside it. */
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const CPU_PROF_DIR = process.env.BENCH_CPU_PROF;
const ONLY = process.env.BENCH_ONLY as 'get' | 'upsert' | undefined;
const CONNECTIONS = 10;
/**
 * Requests before each measured window, so the JIT has compiled the request path: counted, not timed, since a
 * starved server (a loaded machine) serves a timed warm-up with too few requests and its first window runs cold.
 */
const WARMUP_GET_REQUESTS = 3000;
const WARMUP_UPSERT_REQUESTS = 500;
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
  duration?: number;
  /** Requests to make instead of a duration. */
  amount?: number;
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
  /** Parley's CPU time (user + system, all threads) per request: what the goal of 5,000/s on one core needs below 200. */
  server_cpu_us_per_request: number;
  /** Parley's CPU time over the measured window's length: near 1 when the one core is the limit. */
  server_cpu_share: number;
  /** Share of the window Parley's main thread was runnable but waiting for the core (other work on the machine). */
  server_runqueue_wait_share: number;
}

interface Reported extends Figures {
  runs: Pick<Figures, 'requests_per_sec' | 'latency_p99_ms' | 'server_cpu_us_per_request' | 'server_runqueue_wait_share'>[];
}

/** Measures RUNS times; reports the run of median throughput and lists every run. */
async function medianOf(measure: () => Promise<Figures>): Promise<Reported> {
  const runs: Figures[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await measure());
  const byRate = [...runs].sort((a, b) => a.requests_per_sec - b.requests_per_sec);
  return {
    ...byRate[Math.floor((byRate.length - 1) / 2)],
    runs: runs.map((r) => ({
      requests_per_sec: r.requests_per_sec,
      latency_p99_ms: r.latency_p99_ms,
      server_cpu_us_per_request: r.server_cpu_us_per_request,
      server_runqueue_wait_share: r.server_runqueue_wait_share,
    })),
  };
}

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ, 100 on Linux). */
const USER_HZ = 100;

/** CPU time of a process so far (user + system of all its threads), in ms, from /proc/<pid>/stat. */
function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the parenthesised command name; utime and stime are fields 14 and 15 (proc(5)).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / USER_HZ;
}

/** Time the main thread of a process has waited on a run queue so far, in ms (/proc/<pid>/schedstat, field 2). */
function runQueueWaitMs(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e6;
}

type ServerFigures = 'server_cpu_us_per_request' | 'server_cpu_share' | 'server_runqueue_wait_share';

/** Runs `measure`, adding Parley's CPU time per request, its share of a core and its wait for one. */
async function withServerCpu(pid: number, measure: () => Promise<Omit<Figures, ServerFigures>>): Promise<Figures> {
  const cpu0 = processCpuMs(pid);
  const wait0 = runQueueWaitMs(pid);
  const t0 = performance.now();
  const f = await measure();
  const cpuMs = processCpuMs(pid) - cpu0;
  const waitMs = runQueueWaitMs(pid) - wait0;
  const wallMs = performance.now() - t0;
  return {
    ...f,
    server_cpu_us_per_request: Math.round((cpuMs * 1000) / Math.max(1, f.requests)),
    server_cpu_share: Math.round((cpuMs / wallMs) * 100) / 100,
    server_runqueue_wait_share: Math.round((waitMs / wallMs) * 100) / 100,
  };
}

async function load(pid: number, base: string, key: string, method: string, path: string, body?: unknown): Promise<Figures> {
  const opts = {
    url: base + path,
    connections: CONNECTIONS,
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  };
  await autocannon({ ...opts, amount: WARMUP_GET_REQUESTS });
  return withServerCpu(pid, async () => {
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
  });
}

/**
 * PUT /v1/agents/upsert from CONNECTIONS loops, each updating its own agent: concurrent writes of ONE agent answer
 * 409 by design (the agent is being updated), which would measure the lock, not the write.
 * autocannon cannot give each connection a stable body of its own, so this loop measures it (fetch, keep-alive).
 */
async function upserts(pid: number, base: string, key: string): Promise<Figures> {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  /** Upserts until `seconds` have passed or `requests` were made, whichever comes first. */
  const run = async (limit: { seconds: number; requests: number }, latencies: number[], statuses: Map<number, number>) => {
    const end = performance.now() + limit.seconds * 1000;
    let made = 0;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async (_, c) => {
        for (let i = 0; performance.now() < end && made < limit.requests; i++, made++) {
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
  await run({ seconds: Infinity, requests: WARMUP_UPSERT_REQUESTS }, [], new Map());
  const latencies: number[] = [];
  const statuses = new Map<number, number>();
  return withServerCpu(pid, async () => {
    await run({ seconds: DURATION_SEC, requests: Infinity }, latencies, statuses);
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
  });
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
const profile = CPU_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF_DIR}`] : [];
const child = spawn('taskset', ['-c', PARLEY_CORE, process.execPath, ...profile, '--import', 'tsx', 'src/main.ts'], {
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
  const results: Reported[] = [];
  const readPath = agentsRoute ? `/v1/agents/${agent.name}` : '/v1/projects/main';
  if (ONLY !== 'upsert') results.push(await medianOf(() => load(child.pid!, base, key, 'GET', readPath)));
  if (!agentsRoute) process.stdout.write(`PUT /v1/agents/upsert answered ${probe.status}: not measured\n`);
  else if (ONLY !== 'get') results.push(await medianOf(() => upserts(child.pid!, base, key)));

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
    runs: RUNS,
    results,
  };
  if (!ONLY) {
    mkdirSync(new URL('results/', import.meta.url), { recursive: true });
    writeFileSync(new URL('results/api.json', import.meta.url), `${JSON.stringify(report, null, 2)}\n`);
  }
  for (const r of results) {
    process.stdout.write(
      `${r.method} ${r.path}: ${r.requests_per_sec.toFixed(0)} req/s, p50 ${r.latency_p50_ms} ms, p99 ${r.latency_p99_ms} ms, ` +
        `errors ${r.errors}, non-2xx ${r.non2xx}, server CPU ${r.server_cpu_us_per_request} us/request (${r.server_cpu_share} of a core, ` +
        `waiting for it ${r.server_runqueue_wait_share}); ` +
        `runs: ${r.runs.map((x) => `${x.requests_per_sec.toFixed(0)}/s p99 ${x.latency_p99_ms} ms ${x.server_cpu_us_per_request} us`).join(', ')}\n`,
    );
  }
} finally {
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  await admin.unsafe(`drop database if exists ${dbName} with (force)`);
  await admin.end();
}

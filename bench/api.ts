// Control-plane throughput on real PostgreSQL: authenticated GET /v1/agents/{name} (GET /v1/projects/main when the
// agents route is missing) and PUT /v1/agents/upsert, against `src/main.ts` running as its own process, beside a
// floor: a bare Fastify 5 server (same Node, same loader, same core; no auth, no database, no validation, no
// logger) answering the bodies Parley answered, captured once at the start, from memory.
// Parley and the floor are pinned to core 0 and this load generator to core 1 (taskset), so figures are per core.
// Each load is measured BENCH_RUNS times, interleaved (floor, Parley, floor, Parley, ...) so the machine's other
// work hits both alike; every figure is reported as its median over the runs, and the ratio Parley/floor as the
// median of the ratios of the pairs measured side by side (the honest figure on a shared machine).
// Run: node --import tsx bench/api.ts   (writes bench/results/api.json; BENCH_DURATION_SEC, default 5; BENCH_RUNS,
// default 5)
// Profiling: BENCH_CPU_PROF=<dir> writes the CPU profiles of Parley and of the floor there; BENCH_ONLY=get|upsert runs one load
// (a partial run does not write the results file).
// `node --import tsx bench/api.ts --floor` is the floor server itself (started by the benchmark).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';

const DURATION_SEC = Number(process.env.BENCH_DURATION_SEC ?? 5);
/** Measurements of each load, per server. */
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
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
/** The floor's answers, handed to it by the benchmark: `{read, upsert}`, each a JSON body. */
const FLOOR_BODIES_ENV = 'BENCH_FLOOR_BODIES';
const FLOOR_ARG = '--floor';

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

interface Figures {
  requests_per_sec: number;
  latency_p50_ms: number;
  latency_p99_ms: number;
  latency_avg_ms: number;
  requests: number;
  errors: number;
  non2xx: number;
  /** The server's CPU time (user + system, all threads) per request: what 5,000/s on one core needs below 200. */
  server_cpu_us_per_request: number;
  /** The server's CPU time over the measured window's length: near 1 when the one core is the limit. */
  server_cpu_share: number;
  /** Share of the window the server's main thread was runnable but waiting for the core (other work on the machine). */
  server_runqueue_wait_share: number;
}

/** Medians over the runs, with every run's headline figures. */
interface Reported extends Figures {
  runs: Pick<
    Figures,
    'requests_per_sec' | 'latency_p99_ms' | 'server_cpu_us_per_request' | 'server_runqueue_wait_share'
  >[];
}

/** Parley/floor, per pair of runs measured side by side; the median over the pairs. */
interface Ratios {
  requests_per_sec: number;
  latency_p99_ms: number;
  server_cpu_us_per_request: number;
  runs: Omit<Ratios, 'runs'>[];
}

interface LoadResult extends Reported {
  path: string;
  method: string;
  floor: Reported;
  parley_over_floor: Ratios;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

const round2 = (x: number) => Math.round(x * 100) / 100;

function report(runs: Figures[]): Reported {
  const out = {} as Record<keyof Figures, number>;
  for (const k of Object.keys(runs[0]) as (keyof Figures)[]) out[k] = round2(median(runs.map((r) => r[k])));
  return {
    ...out,
    runs: runs.map((r) => ({
      requests_per_sec: r.requests_per_sec,
      latency_p99_ms: r.latency_p99_ms,
      server_cpu_us_per_request: r.server_cpu_us_per_request,
      server_runqueue_wait_share: r.server_runqueue_wait_share,
    })),
  };
}

function ratios(parley: Figures[], floor: Figures[]): Ratios {
  const runs = parley.map((p, i) => ({
    requests_per_sec: round2(p.requests_per_sec / floor[i].requests_per_sec),
    latency_p99_ms: round2(p.latency_p99_ms / Math.max(floor[i].latency_p99_ms, 0.01)),
    server_cpu_us_per_request: round2(p.server_cpu_us_per_request / Math.max(floor[i].server_cpu_us_per_request, 1)),
  }));
  return {
    requests_per_sec: round2(median(runs.map((r) => r.requests_per_sec))),
    latency_p99_ms: round2(median(runs.map((r) => r.latency_p99_ms))),
    server_cpu_us_per_request: round2(median(runs.map((r) => r.server_cpu_us_per_request))),
    runs,
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

/** Runs `measure`, adding the server's CPU time per request, its share of a core and its wait for one. */
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
    server_cpu_share: round2(cpuMs / wallMs),
    server_runqueue_wait_share: round2(waitMs / wallMs),
  };
}

/** A server under load: its process and base URL. */
interface Target {
  pid: number;
  base: string;
}

/** GET `path` from CONNECTIONS autocannon connections, after a counted warm-up. */
async function reads(autocannon: Autocannon, target: Target, key: string, path: string): Promise<Figures> {
  const opts = {
    url: target.base + path,
    connections: CONNECTIONS,
    method: 'GET',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  };
  await autocannon({ ...opts, amount: WARMUP_GET_REQUESTS });
  return withServerCpu(target.pid, async () => {
    const r = await autocannon({ ...opts, duration: DURATION_SEC });
    return {
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
 * autocannon cannot give each connection a stable body of its own, so this loop measures it, each loop on a
 * keep-alive socket of its own through node:http (fetch costs the generator several times more per request and
 * became the limit).
 */
async function upserts(target: Target, key: string): Promise<Figures> {
  const { hostname, port } = new URL(target.base);
  const agents = Array.from({ length: CONNECTIONS }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  const put = (c: number, body: string) =>
    new Promise<number>((resolve, reject) => {
      const req = http.request(
        {
          host: hostname,
          port,
          path: '/v1/agents/upsert',
          method: 'PUT',
          agent: agents[c],
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  /** Upserts until `seconds` have passed or `requests` were made, whichever comes first. */
  const run = async (
    limit: { seconds: number; requests: number },
    latencies: number[],
    statuses: Map<number, number>,
  ) => {
    const end = performance.now() + limit.seconds * 1000;
    let made = 0;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async (_, c) => {
        for (let i = 0; performance.now() < end && made < limit.requests; i++, made++) {
          const body = JSON.stringify({
            name: `bench-upsert-${c}`,
            system_prompt: `You are assistant ${c}, revision ${i}.`,
          });
          const t0 = performance.now();
          const status = await put(c, body);
          latencies.push(performance.now() - t0);
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
        }
      }),
    );
  };
  await run({ seconds: Infinity, requests: WARMUP_UPSERT_REQUESTS }, [], new Map());
  const latencies: number[] = [];
  const statuses = new Map<number, number>();
  const figures = await withServerCpu(target.pid, async () => {
    await run({ seconds: DURATION_SEC, requests: Infinity }, latencies, statuses);
    latencies.sort((a, b) => a - b);
    const pct = (p: number) =>
      round2(latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]);
    const ok = statuses.get(200) ?? 0;
    return {
      requests_per_sec: latencies.length / DURATION_SEC,
      latency_p50_ms: pct(50),
      latency_p99_ms: pct(99),
      latency_avg_ms: round2(latencies.reduce((a, b) => a + b, 0) / latencies.length),
      requests: latencies.length,
      errors: 0,
      non2xx: latencies.length - ok,
    };
  });
  for (const a of agents) a.destroy();
  return figures;
}

/** Measures a load RUNS times on each server, alternating floor and Parley. */
async function sideBySide(
  path: string,
  method: string,
  floor: Target,
  parley: Target,
  measure: (t: Target) => Promise<Figures>,
): Promise<LoadResult> {
  const f: Figures[] = [];
  const p: Figures[] = [];
  for (let i = 0; i < RUNS; i++) {
    f.push(await measure(floor));
    p.push(await measure(parley));
  }
  return { path, method, ...report(p), floor: report(f), parley_over_floor: ratios(p, f) };
}

function pin(pid: number, core: string): boolean {
  try {
    execFileSync('taskset', ['-cp', core, String(pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Starts a server on PARLEY_CORE and resolves with its base URL once its stdout matches `listening`. */
function startServer(
  args: string[],
  env: NodeJS.ProcessEnv,
  listening: RegExp,
): { child: ChildProcess; ready: Promise<string> } {
  const child = spawn('taskset', ['-c', PARLEY_CORE, process.execPath, ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ready = new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = listening.exec(out);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code, signal) => {
      // Said here too: an exit after start-up otherwise surfaces only as a missing /proc entry mid-run.
      process.stderr.write(`${args.join(' ')} exited (code ${code}, signal ${signal})\n`);
      reject(new Error(`${args.join(' ')} exited with ${code}: ${out}`));
    });
  });
  return { child, ready };
}

async function stop(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/** The floor: the bare Fastify route, answering the captured bodies from memory (Fastify's default serializer). */
async function serveFloor(): Promise<void> {
  const { default: Fastify } = await import('fastify');
  const bodies = JSON.parse(process.env[FLOOR_BODIES_ENV]!) as { read: object; upsert: object };
  const app = Fastify();
  app.get('/v1/agents/:name', async () => bodies.read);
  app.get('/v1/projects/:name', async () => bodies.read);
  app.put('/v1/agents/upsert', async () => bodies.upsert);
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
  process.stdout.write(`floor listening on ${url}\n`);
}

async function runBenchmark(): Promise<void> {
  const AUTOCANNON = 'autocannon';
  const autocannon = ((await import(AUTOCANNON)) as { default: Autocannon }).default;
  const { default: postgres } = await import('postgres');
  const { POSTGRES_ADMIN_URL } = await import('../test/helpers/server.js');

  const dbName = `parley_bench_${randomBytes(4).toString('hex')}`;
  const admin = postgres(POSTGRES_ADMIN_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${dbName}`);
  const dbUrl = new URL(POSTGRES_ADMIN_URL);
  dbUrl.pathname = `/${dbName}`;
  const key = `bench-${randomBytes(16).toString('hex')}`;

  const pinnedSelf = pin(process.pid, GENERATOR_CORE);
  const profile = CPU_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF_DIR}`] : [];
  const parleyServer = startServer(
    [...profile, '--import', 'tsx', 'src/main.ts'],
    {
      ...process.env,
      DATABASE_URL: dbUrl.toString(),
      PARLEY_BOOTSTRAP_API_KEY: key,
      PARLEY_HTTP_PORT: '0',
      PARLEY_LOG_LEVEL: 'info',
    },
    /"url":"(http:\/\/[^"]+)","msg":"control plane listening"/,
  );
  let floorChild: ChildProcess | undefined;
  try {
    const parley = { pid: parleyServer.child.pid!, base: await parleyServer.ready };
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

    const agent = { name: 'bench-agent', system_prompt: 'You are a helpful assistant.' };
    const probe = await fetch(`${parley.base}/v1/agents/upsert`, {
      method: 'PUT',
      headers,
      body: JSON.stringify(agent),
    });
    const upsertBody = await probe.text();
    const agentsRoute = probe.status === 200;
    const readPath = agentsRoute ? `/v1/agents/${agent.name}` : '/v1/projects/main';
    const read = await fetch(parley.base + readPath, { headers });
    if (read.status !== 200) throw new Error(`GET ${readPath} answered ${read.status}`);
    const readBody = await read.text();

    const floorServer = startServer(
      [...profile, '--import', 'tsx', fileURLToPath(import.meta.url), FLOOR_ARG],
      {
        ...process.env,
        [FLOOR_BODIES_ENV]: JSON.stringify({
          read: JSON.parse(readBody),
          upsert: agentsRoute ? JSON.parse(upsertBody) : {},
        }),
      },
      /floor listening on (http:\/\/\S+)/,
    );
    floorChild = floorServer.child;
    const floor = { pid: floorChild.pid!, base: await floorServer.ready };
    const floorRead = await (await fetch(floor.base + readPath)).text();
    if (floorRead !== readBody) throw new Error('the floor does not answer the body Parley answers');

    const results: LoadResult[] = [];
    if (ONLY !== 'upsert')
      results.push(await sideBySide(readPath, 'GET', floor, parley, (t) => reads(autocannon, t, key, readPath)));
    if (!agentsRoute) process.stdout.write(`PUT /v1/agents/upsert answered ${probe.status}: not measured\n`);
    else if (ONLY !== 'get')
      results.push(await sideBySide('/v1/agents/upsert', 'PUT', floor, parley, (t) => upserts(t, key)));

    const out = {
      benchmark: 'api',
      date: new Date().toISOString(),
      database: 'postgresql 127.0.0.1:5432 (pool of 10)',
      parley_core: pinnedSelf ? PARLEY_CORE : 'unpinned',
      floor_core: pinnedSelf ? PARLEY_CORE : 'unpinned',
      generator_core: pinnedSelf ? GENERATOR_CORE : 'unpinned',
      note:
        'one Parley process on one core; PostgreSQL itself is not pinned and shares the machine. floor: a bare Fastify 5 ' +
        'route on the same core answering the same body from memory, measured alternately with Parley; figures are ' +
        'medians over the runs, parley_over_floor the median of the side-by-side ratios',
      // Other work on the machine during the run (1-minute load average at the end; 2 cores).
      load_average_1m: loadavg()[0],
      connections: CONNECTIONS,
      duration_sec: DURATION_SEC,
      runs: RUNS,
      response_bytes: Buffer.byteLength(readBody),
      results,
    };
    if (!ONLY) {
      mkdirSync(new URL('results/', import.meta.url), { recursive: true });
      writeFileSync(new URL('results/api.json', import.meta.url), `${JSON.stringify(out, null, 2)}\n`);
    }
    const line = (r: Reported) =>
      `${r.requests_per_sec.toFixed(0)} req/s, p50 ${r.latency_p50_ms} ms, p99 ${r.latency_p99_ms} ms, ` +
      `errors ${r.errors}, non-2xx ${r.non2xx}, CPU ${r.server_cpu_us_per_request} us/request (${r.server_cpu_share} of a core, ` +
      `waiting for it ${r.server_runqueue_wait_share}); runs: ` +
      r.runs
        .map((x) => `${x.requests_per_sec.toFixed(0)}/s p99 ${x.latency_p99_ms} ms ${x.server_cpu_us_per_request} us`)
        .join(', ');
    for (const r of results) {
      const q = r.parley_over_floor;
      process.stdout.write(
        `${r.method} ${r.path}\n  parley: ${line(r)}\n  floor:  ${line(r.floor)}\n` +
          `  parley/floor: throughput ${q.requests_per_sec}, p99 ${q.latency_p99_ms}, CPU per request ${q.server_cpu_us_per_request}\n`,
      );
    }
  } finally {
    await stop(floorChild);
    await stop(parleyServer.child);
    await admin.unsafe(`drop database if exists ${dbName} with (force)`);
    await admin.end();
  }
}

if (process.argv[2] === FLOOR_ARG) await serveFloor();
else await runBenchmark();

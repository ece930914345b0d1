// Conversation item writes on the main thread: N conversations each append their turns' items, one at a time per
// conversation as src/conversation/record.ts chains them, from a worker thread through the real path: the worker's
// MainClient posts `append_items`, main answers it with createRequestHandler (as worker-pool.ts does) on PostgreSQL.
// Reported: main-thread CPU per appended item (from /proc/self/task/<pid>/schedstat, so the worker thread is not
// counted), the database backends' CPU per item, and the append latency the worker sees.
// Run: node --import tsx bench/items.ts     Env: ITEMS_N (250 conversations), ITEMS_RATE (100 items/s),
//   ITEMS_WINDOW_SEC (10), ITEMS_WARMUP_SEC (2), ITEMS_TOOL_SHARE (0.1 of assistant items carry a tool call),
//   ITEMS_BATCH_WINDOW_MS (main's append coalescing window; the handler's default when unset),
//   ITEMS_FLOOR ("" | "message": main replies at once, the worker protocol alone | "select": one `select 1` round
//   trip per request instead of the append), to tell the append's own cost from the floors under it.
// Prints one JSON line; the interleaved A/B runs behind the commit messages run this file against two trees.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import postgres from 'postgres';
import { median } from './measure.js';

const N = Number(process.env.ITEMS_N ?? 250);
const RATE = Number(process.env.ITEMS_RATE ?? 100);
const WINDOW_SEC = Number(process.env.ITEMS_WINDOW_SEC ?? 10);
const WARMUP_SEC = Number(process.env.ITEMS_WARMUP_SEC ?? 2);
const TOOL_SHARE = Number(process.env.ITEMS_TOOL_SHARE ?? 0.1);
const FLOOR = process.env.ITEMS_FLOOR ?? '';
const BATCH_WINDOW_MS = process.env.ITEMS_BATCH_WINDOW_MS;
const PG_ADMIN = process.env.PARLEY_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** The scheduler's tick: items due by then are sent together. */
const TICK_MS = 5;
const NS_PER_US = 1000;
/** More concurrent queries than the pool has connections (db.ts POSTGRES_POOL_SIZE), so each one opens. */
const POOL_WARMUP_QUERIES = 20;

interface GeneratorData {
  conversationIds: string[];
}
type GeneratorMessage =
  { type: 'window'; edge: 'start' | 'end'; sent: number } | { type: 'done'; latenciesMs: number[]; failed: number };

/** On-CPU time of one thread or process in ns (the first field of schedstat). */
function schedNs(path: string): number {
  return Number(readFileSync(path, 'utf8').split(' ')[0]);
}

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
}

// ---------------------------------------------------------------- the worker: the conversations' records

async function generate(): Promise<void> {
  const { MainClient, conversationStore } = await import('../src/workers/main-client.js');
  const { conversationIds } = workerData as GeneratorData;
  const port = parentPort!;
  const main = new MainClient(port as never);
  port.on('message', (m) => main.handleReply(m));
  const store = conversationStore(main);
  const chains = conversationIds.map(() => Promise.resolve());
  const turns = conversationIds.map(() => 0);
  const latenciesMs: number[] = [];
  let failed = 0;
  let sent = 0;
  let inWindow = false;
  const t0 = performance.now();
  const total = Math.round(RATE * (WARMUP_SEC + WINDOW_SEC));

  const appendNext = (c: number) => {
    const turn = turns[c]++;
    const user = turn % 2 === 0;
    const items = [
      user
        ? {
            role: 'user' as const,
            live_transcript: `turn ${turn}: where is my order?`,
            duration_ms: 1820,
            started_at: new Date(),
          }
        : {
            role: 'assistant' as const,
            live_transcript: `turn ${turn}: it shipped yesterday and arrives on Tuesday.`,
            duration_ms: 2410.5,
            started_at: new Date(),
            voice_id: 'sabrina',
            audio_speed: 1,
            tool_calls:
              Math.random() < TOOL_SHARE
                ? [
                    {
                      tool: { id: 'tool_lookup', name: 'lookup' },
                      request_body: { order: `A-${turn}` },
                      response_body: { status: 'shipped' },
                      timed_out: false,
                      error_message: null,
                      endpoint_method: 'POST',
                      endpoint_url: 'https://example.com/orders',
                      endpoint_called_at: new Date().toISOString(),
                      response_status_code: 200,
                    },
                  ]
                : [],
          },
    ];
    const counted = inWindow;
    chains[c] = chains[c].then(async () => {
      const start = performance.now();
      try {
        await store.appendItems(conversationIds[c], items);
        if (counted) latenciesMs.push(performance.now() - start);
      } catch {
        failed++;
      }
    });
  };

  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const elapsedSec = (performance.now() - t0) / 1000;
      if (!inWindow && elapsedSec >= WARMUP_SEC && sent < total) {
        inWindow = true;
        port.postMessage({ type: 'window', edge: 'start', sent } satisfies GeneratorMessage);
      }
      const due = Math.min(total, Math.floor(elapsedSec * RATE));
      for (; sent < due; sent++) appendNext(sent % conversationIds.length);
      if (sent >= total) {
        clearInterval(timer);
        resolve();
      }
    }, TICK_MS);
  });
  await Promise.all(chains);
  port.postMessage({ type: 'window', edge: 'end', sent } satisfies GeneratorMessage);
  port.postMessage({ type: 'done', latenciesMs, failed } satisfies GeneratorMessage);
}

// ---------------------------------------------------------------- main: the store and the handler

async function run(): Promise<void> {
  const { loadSettings } = await import('../src/config.js');
  const { createLogger } = await import('../src/log.js');
  const { openStore } = await import('../src/store/db.js');
  const { migrate } = await import('../src/store/migrate.js');
  const { bootstrap } = await import('../src/store/workspaces.js');
  const { leasePolicy } = await import('../src/store/leases.js');
  const { createConversation } = await import('../src/store/conversations.js');
  const { createRequestHandler } = await import('../src/workers/main-handlers.js');
  const { APPEND_BATCH_DEFAULTS } = await import('../src/store/append-batcher.js');

  const name = `parley_items_${randomBytes(4).toString('hex')}`;
  const admin = postgres(PG_ADMIN, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  const url = new URL(PG_ADMIN);
  url.pathname = `/${name}`;
  const settings = loadSettings({ DATABASE_URL: url.toString(), PARLEY_LOG_LEVEL: 'error' });
  const log = createLogger('error');
  const store = await openStore(settings, log);
  try {
    await migrate(store.sql, log);
    const ws = (await bootstrap(store.sql))!;
    const conversationIds: string[] = [];
    for (let i = 0; i < N; i++) {
      conversationIds.push(
        await createConversation(store.sql, {
          orgId: ws.orgId,
          projectId: ws.projectId,
          origin: 'direct',
          state: 'active',
        }),
      );
    }
    // Every connection of the pool open before the window, so the backends counted are all that serve it.
    await Promise.all(Array.from({ length: POOL_WARMUP_QUERIES }, () => store.sql`select pg_sleep(0.05)`));
    const real = createRequestHandler({
      sql: store.sql,
      policy: leasePolicy(settings),
      log,
      now: () => new Date(),
      ...(BATCH_WINDOW_MS === undefined
        ? {}
        : { appendBatch: { ...APPEND_BATCH_DEFAULTS, window_ms: Number(BATCH_WINDOW_MS) } }),
    });
    const handle: typeof real =
      FLOOR === 'message'
        ? async (req) => ({ type: 'reply', id: req.id, ok: true, value: { itemIds: [] } })
        : FLOOR === 'select'
          ? async (req) => {
              await store.sql`select 1`;
              return { type: 'reply', id: req.id, ok: true, value: { itemIds: [] } };
            }
          : real;

    const tsx = import.meta.resolve('tsx/esm/api');
    const boot = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(import.meta.url)}); });`;
    const worker = new Worker(boot, { eval: true, workerData: { conversationIds } satisfies GeneratorData });
    const mainThread = `/proc/self/task/${process.pid}/schedstat`;
    let replies = 0;
    let atStart = { replies: 0, mainNs: 0, dbNs: 0 };
    let backends: number[] = [];
    const dbNs = () => backends.reduce((s, pid) => s + schedNs(`/proc/${pid}/schedstat`), 0);

    const figures: { window?: Record<string, number> } = {};
    const done = await new Promise<{ latenciesMs: number[]; failed: number }>((resolve, reject) => {
      worker.on('error', reject);
      worker.on('message', (msg: GeneratorMessage | { type: 'append_items'; id: number }) => {
        switch (msg.type) {
          case 'append_items':
            // As worker-pool.ts's onNotice does for every request.
            handle(msg as never).then(
              (reply) => {
                replies++;
                worker.postMessage(reply);
              },
              (err: Error) => reject(err),
            );
            return;
          case 'window':
            if (msg.edge === 'start') {
              admin<{ pid: number }[]>`select pid from pg_stat_activity
                where datname = ${name} and backend_type = 'client backend'`.then((rows) => {
                backends = rows.map((r) => r.pid);
                atStart = { replies, mainNs: schedNs(mainThread), dbNs: dbNs() };
              }, reject);
            } else {
              const items = replies - atStart.replies;
              const mainUs = (schedNs(mainThread) - atStart.mainNs) / NS_PER_US;
              const dbUs = (dbNs() - atStart.dbNs) / NS_PER_US;
              figures.window = {
                items,
                main_us_per_item: mainUs / items,
                db_us_per_item: dbUs / items,
                backends: backends.length,
              };
            }
            return;
          case 'done':
            resolve(msg);
        }
      });
    });
    await worker.terminate();
    if (done.failed > 0) throw new Error(`${done.failed} appends failed`);
    process.stdout.write(
      JSON.stringify({
        ...figures.window,
        n: N,
        rate: RATE,
        floor: FLOOR || undefined,
        batch_window_ms: BATCH_WINDOW_MS === undefined ? undefined : Number(BATCH_WINDOW_MS),
        append_p50_ms: median(done.latenciesMs),
        append_p99_ms: percentile(done.latenciesMs, 99),
      }) + '\n',
    );
  } finally {
    await store.close();
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
}

if (isMainThread) await run();
else await generate();

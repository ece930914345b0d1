// Conversation reads on real PostgreSQL: list (first page, a deep page by cursor, a date range), get by id, and
// lease admissions per second. Seeds SEED_CONVERSATIONS conversations with ITEMS_PER_CONVERSATION items each.
// Run: node --import tsx bench/conversations.ts   (writes bench/results/conversations.json)
import { mkdirSync, writeFileSync } from 'node:fs';
import { startTestServer } from '../test/helpers/server.js';
import { admit, leasePolicy, release } from '../src/store/leases.js';

const SEED_CONVERSATIONS = 20_000;
const ITEMS_PER_CONVERSATION = 6;
const DURATION_SEC = Number(process.env.BENCH_DURATION_SEC ?? 5);
const CONNECTIONS = 10;
const ADMISSIONS = 2_000;

/** The part of autocannon's API used here (the package ships no type declarations). */
interface AutocannonResult {
  requests: { average: number };
  latency: { p50: number; p99: number };
  errors: number;
  non2xx: number;
}
type Autocannon = (opts: {
  url: string;
  connections: number;
  duration: number;
  headers: Record<string, string>;
}) => Promise<AutocannonResult>;
const AUTOCANNON = 'autocannon';
const autocannon = ((await import(AUTOCANNON)) as { default: Autocannon }).default;

interface Figures {
  requests_per_sec: number;
  latency_p50_ms: number;
  latency_p99_ms: number;
  errors: number;
  non2xx: number;
}

async function load(url: string, apiKey: string): Promise<Figures> {
  const r = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: DURATION_SEC,
    headers: { authorization: `Bearer ${apiKey}` },
  });
  return {
    requests_per_sec: r.requests.average,
    latency_p50_ms: r.latency.p50,
    latency_p99_ms: r.latency.p99,
    errors: r.errors,
    non2xx: r.non2xx,
  };
}

const server = await startTestServer({ db: 'postgres' });
try {
  const { sql, orgId, projectId } = server;
  const seedStart = performance.now();
  await sql`
    insert into conversations (id, org_id, project_id, origin, state, model, input_format, output_format, analysis_id,
      started_at, ended_at, ended_by, duration_ms, live_transcript)
    select 'conv_' || lpad(g::text, 8, '0'), ${orgId}, ${projectId}, 'web', 'ended', 'merritt', 'pcm_16000', 'pcm_16000',
      'conv_analysis_' || g, timestamptz '2026-01-01' + g * interval '7 minutes',
      timestamptz '2026-01-01' + g * interval '7 minutes' + interval '90 seconds', 'user', 90000 + g % 600 * 1000,
      'user: hello ' || g
    from generate_series(1, ${SEED_CONVERSATIONS}) g`;
  // The item counter the store keeps on each conversation (migration 20261122000400) matches the seeded items.
  await sql`update conversations set next_item_idx = ${ITEMS_PER_CONVERSATION} where project_id = ${projectId}`;
  await sql`
    insert into conversation_items (id, conversation_id, item_idx, role, live_transcript, duration_ms, started_at)
    select 'conv_item_' || g || '_' || i, 'conv_' || lpad(g::text, 8, '0'), i,
      case when i % 2 = 0 then 'user' else 'assistant' end, 'turn ' || i, 1500,
      timestamptz '2026-01-01' + g * interval '7 minutes' + i * interval '2 seconds'
    from generate_series(1, ${SEED_CONVERSATIONS}) g, generate_series(0, ${ITEMS_PER_CONVERSATION - 1}) i`;
  await sql`analyze`;
  const seedMs = performance.now() - seedStart;

  const deepCursor = `conv_${String(Math.floor(SEED_CONVERSATIONS / 10)).padStart(8, '0')}`;
  const one = `conv_${String(Math.floor(SEED_CONVERSATIONS / 2)).padStart(8, '0')}`;
  const base = `${server.url}/v1/conversations`;
  const figures = {
    list_first_page: await load(`${base}?limit=20`, server.apiKey),
    list_deep_page_after_cursor: await load(`${base}?limit=20&after=${deepCursor}`, server.apiKey),
    list_date_range: await load(`${base}?limit=20&started_at_min=2026-01-20&started_at_max=2026-01-25`, server.apiKey),
    get_by_id: await load(`${base}/${one}`, server.apiKey),
  };

  // Lease admissions: sequential admit + release pairs against the project's row lock.
  const policy = leasePolicy({
    PARLEY_NODE_ID: 'bench',
    PARLEY_LEASE_TTL_SEC: 30,
    PARLEY_WORKSPACE_MAX_ACTIVE_CONVERSATIONS: 100,
  });
  const admStart = performance.now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async (_, w) => {
      for (let i = w; i < ADMISSIONS; i += CONNECTIONS) {
        const a = await admit(sql, policy, projectId, `conv_adm_${i}`);
        if (!a.admitted) throw new Error(`admission ${i} refused: ${JSON.stringify(a)}`);
        await release(sql, `conv_adm_${i}`);
      }
    }),
  );
  const admissionsPerSec = ADMISSIONS / ((performance.now() - admStart) / 1000);

  const result = {
    name: 'conversations',
    database: 'postgresql 127.0.0.1:5432 (pool of 10)',
    note: 'server and load generator share this 2-core machine (not pinned); other engineers ran tests meanwhile',
    seeded: {
      conversations: SEED_CONVERSATIONS,
      items_per_conversation: ITEMS_PER_CONVERSATION,
      seed_ms: Math.round(seedMs),
    },
    connections: CONNECTIONS,
    duration_sec: DURATION_SEC,
    ...figures,
    lease_admit_release_pairs_per_sec: Math.round(admissionsPerSec),
  };
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(new URL('./results/conversations.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`);
  console.log(JSON.stringify(result, null, 2));
} finally {
  await server.close();
}

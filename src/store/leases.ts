// The per-project concurrency cap (`max_active_conversations`, else the workspace limit), counted in the database
// so it holds across nodes (docs/ARCHITECTURE.md, "Process shape"). A live conversation holds a lease that its node renews by
// heartbeat; a lease not renewed expires and stops counting, so a node that dies frees its share.
// Admission is atomic: it locks the project's row, so concurrent admissions for one project take turns.
// Each of these writes costs one round trip (main's CPU goes to round trips, not rows: bench/items.ts).
import { hostname } from 'node:os';
import type { Settings } from '../config.js';
import type { Logger } from '../log.js';
import type { Sql } from './db.js';
import { pipelinedTransaction } from './transaction.js';

export interface LeasePolicy {
  /** This node's identity (leases and heartbeats are kept per node). */
  nodeId: string;
  /** How long a lease lives without renewal. */
  ttlSec: number;
  /** The cap of a project whose `max_active_conversations` is null (PARLEY_WORKSPACE_MAX_ACTIVE_CONVERSATIONS). */
  workspaceCap: number;
}

/** Heartbeats per lease lifetime: a node may miss all but one and keep its leases. */
export const HEARTBEATS_PER_TTL = 3;

/** This node's lease policy from the settings (PARLEY_NODE_ID, PARLEY_LEASE_TTL_SEC, the workspace cap). */
export function leasePolicy(
  settings: Pick<Settings, 'PARLEY_NODE_ID' | 'PARLEY_LEASE_TTL_SEC' | 'PARLEY_WORKSPACE_MAX_ACTIVE_CONVERSATIONS'>,
): LeasePolicy {
  return {
    nodeId: settings.PARLEY_NODE_ID ?? `${hostname()}-${process.pid}`,
    ttlSec: settings.PARLEY_LEASE_TTL_SEC,
    workspaceCap: settings.PARLEY_WORKSPACE_MAX_ACTIVE_CONVERSATIONS,
  };
}

export type Admission =
  | { admitted: true; active: number; cap: number }
  | { admitted: false; reason: 'at_capacity'; active: number; cap: number }
  | { admitted: false; reason: 'no_project' };

/** The cap that applies to a project: its own, else the workspace limit. */
export function effectiveCap(maxActive: number | null, workspaceCap: number): number {
  return maxActive ?? workspaceCap;
}

/**
 * Takes a lease for `conversationId` in `projectId` if the project is under its cap. Expired leases of the project
 * are dropped first. Re-admitting a conversation that already holds a lease renews it (a reconnect) and counts once.
 * One round trip: the project's row is locked by the first statement and the second, which sees every lease
 * committed before the lock was granted (READ COMMITTED takes a snapshot per statement), counts and takes the lease
 * in one go; both go out together (pipelinedTransaction). A lease of this conversation that has expired is left to
 * the upsert (a row must not be both deleted and inserted by one statement).
 */
export async function admit(
  sql: Sql,
  policy: LeasePolicy,
  projectId: string,
  conversationId: string,
): Promise<Admission> {
  const [, [row]] = await pipelinedTransaction<{ cap: number; n: number; held: boolean }[]>(sql, (tx) => [
    tx`select 1 from projects where id = ${projectId} for update`,
    tx`with project as (
        -- effectiveCap()
        select coalesce(max_active_conversations, ${policy.workspaceCap}::int) as cap from projects where id = ${projectId}
      ), expired as (
        delete from conversation_leases
        where project_id = ${projectId} and expires_at <= now() and conversation_id <> ${conversationId}
      ), counted as (
        select
          (select count(*)::int from conversation_leases where project_id = ${projectId} and expires_at > now()) as n,
          exists (select 1 from conversation_leases where conversation_id = ${conversationId}
            and (project_id <> ${projectId} or expires_at > now())) as held
      ), taken as (
        insert into conversation_leases (conversation_id, project_id, node_id, expires_at)
        select ${conversationId}, ${projectId}, ${policy.nodeId}, now() + make_interval(secs => ${policy.ttlSec})
        from project, counted where counted.held or counted.n < project.cap
        on conflict (conversation_id) do update set node_id = excluded.node_id, expires_at = excluded.expires_at
      )
      select project.cap, counted.n, counted.held from project, counted`,
  ]);
  if (!row) return { admitted: false, reason: 'no_project' };
  const { cap, n, held } = row;
  if (held) return { admitted: true, active: n, cap };
  if (n >= cap) return { admitted: false, reason: 'at_capacity', active: n, cap };
  return { admitted: true, active: n + 1, cap };
}

/** Whether one more conversation would be admitted now (outbound dry run); takes no lease. */
export async function checkCapacity(
  sql: Sql,
  policy: Pick<LeasePolicy, 'workspaceCap'>,
  projectId: string,
): Promise<{ ok: boolean; active: number; cap: number }> {
  const [row] = await sql<{ max_active_conversations: number | null; n: number }[]>`
    select p.max_active_conversations,
      (select count(*)::int from conversation_leases l where l.project_id = p.id and l.expires_at > now()) as n
    from projects p where p.id = ${projectId}`;
  if (!row) return { ok: false, active: 0, cap: 0 };
  const cap = effectiveCap(row.max_active_conversations, policy.workspaceCap);
  return { ok: row.n < cap, active: row.n, cap };
}

/** Frees the lease of a conversation that ended; true when there was one. */
export async function release(sql: Sql, conversationId: string): Promise<boolean> {
  const rows = await sql`delete from conversation_leases where conversation_id = ${conversationId} returning 1`;
  return rows.length > 0;
}

/** The node's heartbeat: extends every lease it holds and records that it is alive. Returns the leases renewed. */
export async function renew(sql: Sql, policy: Pick<LeasePolicy, 'nodeId' | 'ttlSec'>): Promise<number> {
  // One statement (atomic, one round trip): the heartbeat row upserted in a CTE beside the renewal.
  const [{ n }] = await sql<{ n: number }[]>`
    with beat as (
      insert into node_heartbeats (node_id) values (${policy.nodeId})
      on conflict (node_id) do update set heartbeat_at = now()
    ), renewed as (
      update conversation_leases set expires_at = now() + make_interval(secs => ${policy.ttlSec})
      where node_id = ${policy.nodeId} returning 1
    )
    select count(*)::int as n from renewed`;
  return n;
}

/** Conversations in progress now (unexpired leases), per project; projects without any are absent. */
export async function activeCounts(sql: Sql, projectIds: readonly string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (projectIds.length === 0) return out;
  const rows = await sql<{ project_id: string; n: number }[]>`
    select project_id, count(*)::int as n from conversation_leases
    where project_id in ${sql(projectIds as string[])} and expires_at > now()
    group by project_id`;
  for (const r of rows) out.set(r.project_id, r.n);
  return out;
}

/** Conversations in progress now in one project. */
export async function activeCount(sql: Sql, projectId: string): Promise<number> {
  return (await activeCounts(sql, [projectId])).get(projectId) ?? 0;
}

/** Schedules a repeating callback; injected so tests drive the heartbeat without waiting. */
export interface HeartbeatTimer {
  every(ms: number, fn: () => void): { cancel(): void };
}

const realTimer: HeartbeatTimer = {
  every(ms, fn) {
    const handle = setInterval(fn, ms);
    handle.unref();
    return { cancel: () => clearInterval(handle) };
  },
};

/**
 * The node's heartbeat: renews its leases every ttl / HEARTBEATS_PER_TTL. One beat at a time (a slow database
 * skips a tick rather than piling up); a failed beat is logged and the next one tries again. `stop` waits for a
 * beat in flight.
 */
export function startHeartbeat(
  sql: Sql,
  policy: Pick<LeasePolicy, 'nodeId' | 'ttlSec'>,
  log: Logger,
  timer: HeartbeatTimer = realTimer,
): { beat(): Promise<void>; stop(): Promise<void> } {
  let inFlight: Promise<void> | null = null;
  const beat = (): Promise<void> => {
    if (inFlight) return inFlight;
    inFlight = renew(sql, policy)
      .then(
        (n) => log.debug({ nodeId: policy.nodeId, leases: n }, 'leases: heartbeat'),
        (err: Error) =>
          log.error(
            { err, nodeId: policy.nodeId },
            'leases: heartbeat failed; leases expire unless a later beat succeeds',
          ),
      )
      .finally(() => {
        inFlight = null;
      });
    return inFlight;
  };
  const handle = timer.every((policy.ttlSec * 1000) / HEARTBEATS_PER_TTL, () => void beat());
  return {
    beat,
    async stop() {
      handle.cancel();
      await inFlight;
    },
  };
}

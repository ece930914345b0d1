// Jobs repository: every statement of the durable queue (src/jobs/queue.ts). A job is a row of `jobs`
// (migration 20261127100000): enqueued (idempotently, by key), claimed by one node at a time (`for update skip
// locked`), heartbeated while it runs, settled with its outcome, retried or parked, and claimed again when the
// node running it stopped heartbeating. Times are the caller's clock when it gives one (tests), else the
// database's `now()`, which every node sharing the database agrees on.
import type postgres from 'postgres';
import type { Sql } from './db.js';
import type { Tx } from './transaction.js';

type Json = Parameters<Sql['json']>[0];
/** The pool or a transaction of it. */
type Db = Sql | Tx;

/** The kinds of the post-call work built here (handlers: src/jobs/). */
export const JOB_KINDS = {
  postCallTranscript: 'post_call_transcript',
  extraction: 'extraction',
  evaluation: 'evaluation',
  redact: 'redact',
  conversationAnalyzed: 'conversation_analyzed',
  webhookDelivery: 'webhook_delivery',
  retentionSweep: 'retention_sweep',
  recordingFilesRemoval: 'recording_files_removal',
} as const;

/** A job finished conversations get. */
export interface PlannedJob {
  kind: string;
  /** Kinds of the same conversation that settle first (their outcome, whatever it is, is what this one reads). */
  after: string[];
  /** Runs on the node that recorded the conversation (it reads files in that node's data directory). */
  pinned: boolean;
  /** Only for conversations whose boolean column of this name is true (null: every conversation). */
  onlyIf: 'enable_redaction' | null;
}

/** The analysis of a conversation: what `conversation_analyzed` waits for and reports. */
export const ANALYSIS_KINDS = [
  JOB_KINDS.postCallTranscript,
  JOB_KINDS.extraction,
  JOB_KINDS.evaluation,
  JOB_KINDS.redact,
] as const;

/**
 * The post-call pipeline: the jobs enqueued with a conversation's finish (postCallJobsEnqueued), in the order they
 * run: the transcript first (its words feed the rest), extraction and evaluations on it, then redaction (it drops
 * the unredacted text the others read, so it waits for them), then the `conversation.analyzed` webhook event once
 * all of them have settled. Each kind must have a handler registered in the queue (src/jobs/handlers.ts; the
 * queue refuses to start otherwise).
 */
export const POST_CALL_JOBS: readonly PlannedJob[] = [
  { kind: JOB_KINDS.postCallTranscript, after: [], pinned: true, onlyIf: null },
  { kind: JOB_KINDS.extraction, after: [JOB_KINDS.postCallTranscript], pinned: false, onlyIf: null },
  { kind: JOB_KINDS.evaluation, after: [JOB_KINDS.postCallTranscript], pinned: false, onlyIf: null },
  {
    kind: JOB_KINDS.redact,
    after: [JOB_KINDS.postCallTranscript, JOB_KINDS.extraction, JOB_KINDS.evaluation],
    // It rewrites the recording file, in the data directory of the node that recorded it.
    pinned: true,
    onlyIf: 'enable_redaction',
  },
  { kind: JOB_KINDS.conversationAnalyzed, after: [...ANALYSIS_KINDS], pinned: false, onlyIf: null },
];

/** The planned job of a kind (its `after` kinds, for a rerun). */
export function plannedJob(kind: string): PlannedJob {
  const p = POST_CALL_JOBS.find((j) => j.kind === kind);
  if (!p) throw new Error(`${kind} is not a post-call job`);
  return p;
}

export type JobStatus = 'pending' | 'running' | 'done' | 'failed' | 'skipped';

/** The key of a conversation's job of `kind` (one per conversation and kind). */
export function conversationJobKey(kind: string, conversationId: string): string {
  return `${kind}:${conversationId}`;
}

/** The caller's time, or the database's. */
function at(sql: Db, now: Date | null) {
  return sql`coalesce(${now}::timestamptz, now())`;
}

/**
 * A statement's `insert` (for a data-modifying CTE of the finish, src/store/conversations.ts finishConversation):
 * the POST_CALL_JOBS of each conversation the relation `ended` (its `id` column) lists, payload
 * `{conversation_id}`, pinned jobs to the conversation's node, a job with `onlyIf` where the conversation's column
 * says so. A job of that conversation and kind that exists already (an earlier finish) is left as it is, so
 * finishing twice enqueues once. Returns the kinds inserted (none on a later finish).
 */
export function postCallJobsEnqueued(sql: Db, ended: string) {
  const rel = sql(ended);
  return sql`insert into jobs (kind, key, conversation_id, payload, after_kinds, node_id)
    select p.kind, p.kind || ':' || c.id, c.id, jsonb_build_object('conversation_id', c.id),
      array(select jsonb_array_elements_text(p.after)), case when p.pinned then c.node_id end
    from ${rel} e join conversations c on c.id = e.id,
      jsonb_to_recordset(${sql.json(POST_CALL_JOBS as unknown as Json)}) as p(kind text, after jsonb, pinned boolean, "onlyIf" text)
    where p."onlyIf" is null or (p."onlyIf" = 'enable_redaction' and c.enable_redaction)
    on conflict (key) do nothing
    returning kind`;
}

export interface NewJob {
  kind: string;
  /** At most one job per key: enqueuing a key that exists does nothing. */
  key?: string | null;
  conversationId?: string | null;
  payload?: Record<string, unknown>;
  /** Kinds of the same conversation's jobs to wait for. */
  afterKinds?: string[];
  /** Only the node of this name runs it (null: any). */
  nodeId?: string | null;
  /** Not before (default: now). */
  runAt?: Date | null;
}

/** Enqueues a job; false when its key existed already (nothing written). */
export async function enqueueJob(sql: Db, job: NewJob): Promise<boolean> {
  const rows = await sql`insert into jobs (kind, key, conversation_id, payload, after_kinds, node_id, run_at)
    values (${job.kind}, ${job.key ?? null}, ${job.conversationId ?? null}, ${sql.json((job.payload ?? {}) as Json)},
      ${sql.array(job.afterKinds ?? [])}::text[], ${job.nodeId ?? null}, ${at(sql, job.runAt ?? null)})
    on conflict (key) do nothing returning 1`;
  return rows.length > 0;
}

/**
 * Runs a conversation's job of `kind` again: enqueued if it never was, else put back to pending, due now, its
 * attempts and last outcome cleared. A run in progress is not stopped; what it settles is discarded (its claim is
 * gone) and the job runs again.
 */
export async function rerunConversationJob(
  sql: Db,
  job: { kind: string; conversationId: string; afterKinds?: string[]; nodeId?: string | null },
  now: Date | null = null,
): Promise<void> {
  const t = at(sql, now);
  await sql`insert into jobs (kind, key, conversation_id, payload, after_kinds, node_id, run_at)
    values (${job.kind}, ${conversationJobKey(job.kind, job.conversationId)}, ${job.conversationId},
      ${sql.json({ conversation_id: job.conversationId })}, ${sql.array(job.afterKinds ?? [])}::text[],
      ${job.nodeId ?? null}, ${t})
    on conflict (key) do update set status = 'pending', attempts = 0, run_at = ${t}, reason = null, error = null,
      detail = null, lock_token = null, locked_by = null, locked_at = null, updated_at = ${t}`;
}

/**
 * A recurring job (one row for every node, keyed by its kind): created pending and due now, or, when it exists,
 * given the new interval. It runs again `everyMs` after each outcome.
 */
export async function ensureRecurringJob(
  sql: Db,
  kind: string,
  everyMs: number,
  now: Date | null = null,
): Promise<void> {
  await sql`insert into jobs (kind, key, every_ms, run_at) values (${kind}, ${kind}, ${everyMs}, ${at(sql, now)})
    on conflict (key) do update set every_ms = excluded.every_ms`;
}

/** A job this node claimed. */
export interface ClaimedJob {
  id: string;
  kind: string;
  payload: unknown;
  /** Attempts started, this one included. */
  attempts: number;
  /** This claim's token: settling and heartbeats name it, so a claim taken back makes them no-ops. */
  token: string;
  conversationId: string | null;
}

export interface ClaimRequest {
  /** Kinds this node has handlers for. */
  kinds: readonly string[];
  /** This node's name on its claims. */
  claimant: string;
  /** The pinned jobs this node runs (its PARLEY_NODE_ID); null: none but unpinned ones. */
  pin: string | null;
  limit: number;
  now?: Date | null;
}

/**
 * Claims up to `limit` due jobs of `kinds`, oldest due first, that no other claim holds (`for update skip locked`:
 * concurrent claimants never take the same row and never wait on each other) and whose `after_kinds` of the same
 * conversation have all settled. Each is marked running with a new token and one more attempt.
 */
export async function claimJobs(sql: Db, c: ClaimRequest): Promise<ClaimedJob[]> {
  if (c.kinds.length === 0 || c.limit <= 0) return [];
  const t = at(sql, c.now ?? null);
  const rows = await sql<
    {
      id: string;
      kind: string;
      payload: unknown;
      attempts: number;
      lock_token: string;
      conversation_id: string | null;
    }[]
  >`
    with due as (
      select j.id from jobs j
      where j.status = 'pending' and j.run_at <= ${t} and j.kind in ${sql(c.kinds as string[])}
        and (j.node_id is null or j.node_id = ${c.pin}::text)
        and (cardinality(j.after_kinds) = 0 or not exists (
          select 1 from jobs d where d.conversation_id = j.conversation_id and d.kind = any(j.after_kinds)
            and d.status in ('pending', 'running')))
      order by j.run_at, j.id
      limit ${c.limit}
      for update skip locked
    )
    update jobs j set status = 'running', attempts = j.attempts + 1, lock_token = gen_random_uuid()::text,
      locked_by = ${c.claimant}, locked_at = ${t}, updated_at = ${t}
    from due where j.id = due.id
    returning j.id::text as id, j.kind, j.payload, j.attempts, j.lock_token, j.conversation_id`;
  return rows.map((r) => ({
    id: r.id,
    kind: r.kind,
    payload: r.payload,
    attempts: r.attempts,
    token: r.lock_token,
    conversationId: r.conversation_id,
  }));
}

/** Heartbeat: the claims still held renew their time. */
export async function renewClaims(sql: Db, tokens: readonly string[], now: Date | null = null): Promise<void> {
  if (tokens.length === 0) return;
  await sql`update jobs set locked_at = ${at(sql, now)} where lock_token in ${sql(tokens as string[])}`;
}

/**
 * Claims not renewed for `leaseMs` (their node stopped, or lost the database) are given up: the jobs are pending
 * again, due at once, their attempt counted (a job that kills its node each time is parked in the end). Returns them.
 */
export async function reclaimStaleJobs(
  sql: Db,
  leaseMs: number,
  now: Date | null = null,
): Promise<{ id: string; kind: string; locked_by: string }[]> {
  const t = at(sql, now);
  return sql<{ id: string; kind: string; locked_by: string }[]>`
    with stale as (
      select id, locked_by from jobs where status = 'running' and locked_at < ${t} - ${leaseMs} * interval '1 millisecond'
      for update skip locked
    )
    update jobs j set status = 'pending', lock_token = null, locked_by = null, locked_at = null, updated_at = ${t},
      error = 'the node running it (' || stale.locked_by || ') stopped heartbeating before it finished'
    from stale where j.id = stale.id
    returning j.id::text as id, j.kind, stale.locked_by`;
}

/** How a claimed job is settled. */
export type Settlement =
  | { status: 'done'; detail: Record<string, unknown> | null }
  | { status: 'skipped'; reason: string }
  /** Failed, tried again `delayMs` from now. */
  | { status: 'retry'; error: string; delayMs: number }
  /** Failed for good (its last attempt, or a payload that cannot run). */
  | { status: 'failed'; error: string }
  /** Not run to its end (the node is stopping): pending again, the attempt given back. */
  | { status: 'released' };

/**
 * Settles the claim `token`; false when the claim is no longer held (taken back as stale, or the job was rerun),
 * and then nothing is written. A recurring job's outcome is kept on its row, which is pending again, due
 * `every_ms` after now, with its attempts reset.
 */
export async function settleJob(sql: Db, token: string, s: Settlement, now: Date | null = null): Promise<boolean> {
  const t = at(sql, now);
  const unlock = sql`lock_token = null, locked_by = null, locked_at = null, updated_at = ${t}`;
  let rows: postgres.RowList<postgres.Row[]>;
  switch (s.status) {
    case 'retry':
      rows = await sql`update jobs set status = 'pending', run_at = ${t} + ${s.delayMs} * interval '1 millisecond',
          error = ${s.error}, ${unlock}
        where lock_token = ${token} returning 1`;
      break;
    case 'released':
      rows = await sql`update jobs set status = 'pending', attempts = greatest(0, attempts - 1), ${unlock}
        where lock_token = ${token} returning 1`;
      break;
    default: {
      const reason = s.status === 'skipped' ? s.reason : null;
      const error = s.status === 'failed' ? s.error : null;
      const detail = s.status === 'done' && s.detail ? sql.json(s.detail as Json) : null;
      rows = await sql`update jobs set
          status = case when every_ms is null then ${s.status} else 'pending' end,
          run_at = case when every_ms is null then run_at else ${t} + every_ms * interval '1 millisecond' end,
          attempts = case when every_ms is null then attempts else 0 end,
          reason = ${reason}, error = ${error}, detail = ${detail}::jsonb, ${unlock}
        where lock_token = ${token} returning 1`;
    }
  }
  return rows.length > 0;
}

/**
 * Deletes settled one-off jobs of no conversation (file removals and the like) last updated before `before`: done
 * or skipped only; a failed one stays to be looked at. A conversation's jobs stay with it (its record shows them).
 */
export async function pruneSettledJobs(sql: Db, before: Date): Promise<number> {
  const rows = await sql`delete from jobs where conversation_id is null and every_ms is null
    and status in ('done', 'skipped') and updated_at < ${before} returning 1`;
  return rows.length;
}

/** A job as the conversation record shows it. */
export interface ConversationJobRow {
  conversation_id: string;
  kind: string;
  status: JobStatus;
  reason: string | null;
  error: string | null;
  attempts: number;
  updated_at: Date;
}

/** The jobs of these conversations, in the order they were enqueued. */
export async function jobsOfConversations(sql: Db, conversationIds: readonly string[]): Promise<ConversationJobRow[]> {
  if (conversationIds.length === 0) return [];
  return sql<ConversationJobRow[]>`select conversation_id, kind, status, reason, error, attempts, updated_at
    from jobs where conversation_id in ${sql(conversationIds as string[])} order by conversation_id, id`;
}

/** One job, as stored (tests and tools). */
export interface JobRow {
  id: string;
  kind: string;
  key: string | null;
  conversation_id: string | null;
  payload: unknown;
  status: JobStatus;
  after_kinds: string[];
  node_id: string | null;
  attempts: number;
  run_at: Date;
  every_ms: number | null;
  locked_by: string | null;
  locked_at: Date | null;
  reason: string | null;
  error: string | null;
  detail: Record<string, unknown> | null;
}

/** Jobs of a kind (all kinds when null), in the order they were enqueued. */
export async function listJobs(sql: Db, kind: string | null = null): Promise<JobRow[]> {
  return sql<
    JobRow[]
  >`select id::text as id, kind, key, conversation_id, payload, status, after_kinds, node_id, attempts,
      run_at, every_ms::float8 as every_ms, locked_by, locked_at, reason, error, detail
    from jobs ${kind === null ? sql`` : sql`where kind = ${kind}`} order by id`;
}

/** Jobs waiting (pending, due or not) or running, counted by kind and status (metrics: the queue's depth). */
export async function queueDepth(sql: Db): Promise<{ kind: string; state: string; count: number }[]> {
  return sql<{ kind: string; state: string; count: number }[]>`
    select kind, status as state, count(*)::int as count from jobs
    where status in ('pending', 'running') group by kind, status order by kind, status`;
}

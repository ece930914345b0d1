// The statements of recovery (src/domain/recovery.ts): conversations left in progress by a node that died (a crash,
// kill -9, a lost machine), their leases, and the recording files no row points at. A conversation in progress
// always holds a lease (admission takes it before the record exists; the finish and a cancel free it in the same
// statement that ends the record), and its node renews it by heartbeat: one without a lease in force was abandoned.
import type { Sql } from './db.js';
import { postCallJobsEnqueued } from './jobs.js';

/** An abandoned conversation as recovery sees it. */
export interface AbandonedConversation {
  id: string;
  /** conversations.node_id: the node that ran it (null: an unnamed node). */
  node_id: string | null;
}

/**
 * Conversations in progress that this node left from a run before this one: run by it (`conversations.node_id` is
 * its PARLEY_NODE_ID, when it has one) or holding a lease under its lease name. Asked at start-up, before anything
 * of this run is live, so every one of them is a leftover, whether or not its lease has expired.
 */
export async function leftoverConversations(
  sql: Sql,
  leaseNodeId: string,
  nodeId: string | null,
): Promise<AbandonedConversation[]> {
  return sql<AbandonedConversation[]>`
    select c.id, c.node_id from conversations c
    where c.state <> 'ended' and (c.node_id = ${nodeId}::text
      or exists (select 1 from conversation_leases l where l.conversation_id = c.id and l.node_id = ${leaseNodeId}))
    order by c.created_at`;
}

/**
 * Conversations in progress that hold no lease in force (their node stopped renewing it: it died), created more than
 * `minAgeSec` ago (a conversation is admitted before its record exists, so a young one without a lease is not
 * expected; the margin only keeps recovery off rows that clocks disagree about). At most `limit`, oldest first.
 */
export async function abandonedConversations(
  sql: Sql,
  minAgeSec: number,
  limit: number,
): Promise<AbandonedConversation[]> {
  return sql<AbandonedConversation[]>`
    select c.id, c.node_id from conversations c
    where c.state <> 'ended' and c.created_at < now() - make_interval(secs => ${minAgeSec})
      and not exists (select 1 from conversation_leases l where l.conversation_id = c.id and l.expires_at > now())
    order by c.created_at limit ${limit}`;
}

/** How a recovered conversation was ended. */
export interface RecoveredEnding {
  ended_at: Date;
  duration_ms: number;
}

/**
 * Ends an abandoned conversation, exactly once whichever nodes try: only while it is still in progress and holds no
 * lease in force except under `ownLeaseNodeId` (this node's lease name at start-up, whose leases are all leftovers;
 * null: any lease in force keeps it), in one statement (the update locks the row and re-reads its state). It ends
 * with `ended_by: error` at what was recorded of it: its duration is the longer of `recordedMs` (the length of its
 * recording, when this node has the file) and the end of its last item, counted from its start; `ended_at` is the
 * start plus that duration. Its lease is freed and its post-call jobs enqueued, as a finish does. null when another
 * node (or the conversation itself) ended it first, or it holds a lease in force again.
 */
export async function endAbandonedConversation(
  sql: Sql,
  conversationId: string,
  recordedMs: number,
  ownLeaseNodeId: string | null,
): Promise<RecoveredEnding | null> {
  const rows = await sql<{ ended_at: Date; duration_ms: number }[]>`
    with last_item as (
      select max(extract(epoch from (i.started_at - coalesce(c.started_at, c.created_at))) * 1000 + i.duration_ms) as ms
      from conversation_items i join conversations c on c.id = i.conversation_id
      where i.conversation_id = ${conversationId}
    ), ended as (
      update conversations c set state = 'ended', ended_by = 'error',
        duration_ms = greatest(0, ${recordedMs}::float8, coalesce((select ms from last_item), 0)),
        ended_at = coalesce(c.started_at, c.created_at)
          + make_interval(secs => greatest(0, ${recordedMs}::float8, coalesce((select ms from last_item), 0)) / 1000)
      where c.id = ${conversationId} and c.state <> 'ended'
        and not exists (select 1 from conversation_leases l where l.conversation_id = c.id and l.expires_at > now()
          and l.node_id is distinct from ${ownLeaseNodeId}::text)
      returning c.id, c.ended_at, c.duration_ms
    ), freed as (
      delete from conversation_leases where conversation_id in (select id from ended)
    ), post_call_jobs as (
      ${postCallJobsEnqueued(sql, 'ended')}
    )
    select ended_at, duration_ms from ended`;
  return rows[0] ?? null;
}

/** Frees every lease under `leaseNodeId` (at start-up: none of them belongs to anything live). Returns how many. */
export async function releaseLeasesOfNode(sql: Sql, leaseNodeId: string): Promise<number> {
  const rows = await sql`delete from conversation_leases where node_id = ${leaseNodeId} returning 1`;
  return rows.length;
}

/** What a recording file found on disk belongs to, for recovery to attach or remove it. */
export interface RecordingFileOwner {
  /** The file's conversation id (from its name). */
  id: string;
  /** Whether such a conversation exists. */
  exists: boolean;
  ended: boolean;
  node_id: string | null;
  /** A recording row points at this path already (a finished recording: not recovery's business). */
  referenced: boolean;
}

/**
 * For recording files named `<conversation id>.wav` (paths relative to the recordings directory): their
 * conversation, and whether a row points at the path already.
 */
export async function recordingFileOwners(
  sql: Sql,
  files: { id: string; path: string }[],
): Promise<RecordingFileOwner[]> {
  if (files.length === 0) return [];
  return sql<RecordingFileOwner[]>`
    select f.id, c.id is not null as exists, coalesce(c.state = 'ended', false) as ended, c.node_id,
      exists (select 1 from conversation_recordings r where r.conversation_id = f.id and r.path = f.path) as referenced
    from jsonb_to_recordset(${sql.json(files)}) as f(id text, path text)
      left join conversations c on c.id = f.id`;
}

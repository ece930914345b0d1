// Conversations repository: the live engine (through main) creates a conversation, appends its items and finishes
// it; the API cancels and deletes content. Reads (the API's Conversation record, listings with cursors) are in
// conversation-reads.ts and re-exported here, so this file is the repository's one entry.
import type { Sql } from './db.js';
import { newId } from './ids.js';
import type {
  CallInfo,
  Conversation,
  EndedBy,
  RecordingSide,
  RtpAnalysis,
  ToolCallEntry,
} from '../schemas/conversations.js';

export {
  getConversation,
  getRecording,
  listConversations,
  listExtractions,
  type ListFilter,
  type ListPage,
  type StoredConversation,
} from './conversation-reads.js';
export type { ConversationState, NewRecording, RecordingRow } from './conversation-types.js';
import type { ConversationState, NewRecording, RecordingRow, SettingsField } from './conversation-types.js';
import { pipelinedTransaction, transaction, type Tx } from './transaction.js';
import { postCallJobsEnqueued } from './jobs.js';

type Json = Parameters<Sql['json']>[0];
/** The pool or a transaction of it. */
type Db = Sql | Tx;
/** A row for postgres.js's insert/update helpers (values already wrapped where they are jsonb). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type HelperRow = Record<string, any>;
/** The finished conversation's row read back as JSON (to_jsonb): timestamps as strings. */
interface EndedRow {
  id: string;
  org_id: string;
  project_id: string;
  agent_id: string | null;
  agent_name: string | null;
  origin: Conversation['origin'];
  external_id: string | null;
  ended_by: EndedBy;
  started_at: string | null;
  ended_at: string;
  duration_ms: number;
}

/** The record's configuration fields, as the API names them (what the agent and overrides resolved to). */
export type ConversationSettings = Partial<Pick<Conversation, SettingsField>> & {
  voice_id?: string | null;
  audio_speed?: number;
  vendor_model?: string | null;
  intelligence_level?: string | null;
  enable_redaction?: boolean;
  /** Names of the tools the conversation may call. */
  tools?: string[];
  /** The agent's tasks, judged after the conversation ends (src/jobs/evaluation.ts). */
  tasks?: { name: string; description: string }[];
  /** Everything else the live engine runs with (opaque here). */
  config?: Record<string, unknown>;
};

export interface NewToolCall extends Omit<ToolCallEntry, 'id'> {
  id?: string;
}

export interface NewItem {
  id?: string;
  role: 'user' | 'assistant';
  live_transcript: string | null;
  post_call_transcript?: string | null;
  redacted_transcript?: string | null;
  duration_ms: number;
  started_at: Date;
  voice_id?: string | null;
  audio_speed?: number | null;
  system_prompt?: string | null;
  tool_calls?: NewToolCall[];
}

/** What ends a conversation (the live engine's final numbers). */
export interface Finish {
  ended_by: EndedBy;
  ended_at: Date;
  duration_ms?: number;
  live_transcript?: string | null;
  post_call_transcript?: string | null;
  redacted_transcript?: string | null;
  latencies_ms?: number[];
  interruptions_count?: number;
  task_results?: Record<string, unknown>;
  /** A phone call's RTP statistics (analysis.rtp); absent for other conversations. */
  rtp?: RtpAnalysis | null;
}

export interface NewConversation {
  id?: string;
  orgId: string;
  projectId: string;
  agent?: { id: string; name: string } | null;
  external_id?: string | null;
  origin: Conversation['origin'];
  state?: ConversationState;
  nodeId?: string | null;
  settings?: ConversationSettings;
  call_info?: CallInfo | null;
  started_at?: Date | null;
  created_at?: Date;
  items?: NewItem[];
  /** Set when the conversation is stored already finished (imports, tests of the read side). */
  finish?: Finish;
}

/** An append named a conversation that does not exist (nothing was written). */
export class ConversationNotFoundError extends Error {
  constructor(readonly conversationId: string) {
    super(`no conversation ${conversationId} to append items to`);
    this.name = 'ConversationNotFoundError';
  }
}

const DEFAULT_MODEL = 'merritt';
const DEFAULT_FORMAT = 'pcm_16000';

/**
 * Zero data retention: the `conversations` row's data_retention_policy is form A, "retains nothing" (the
 * DataRetentionPolicy record). Unqualified: for a statement in which only `conversations` has that column. Also used
 * by the post-call jobs (src/store/post-call.ts).
 */
export function retainsNothing(sql: Db) {
  return sql`coalesce((data_retention_policy ->> 'zero_data_retention')::boolean, false)`;
}

// The content of a conversation is the text said in it: the three transcripts of its record and of each of its items,
// the post-call transcript's words, and its tool calls' request and response bodies (its recordings are files,
// dropped apart). It goes on deleteConversationContent and, under zero data retention, at the marking
// (updateConversation), at every append (appendItemsBatch stores items without it) and at every finish
// (finishConversation). Defined once, here.

/**
 * A `set` list: the three transcripts, which a conversation's row and its items' rows both have, dropped. Also used
 * by the retention sweep (src/store/post-call.ts).
 */
export function transcriptsDropped(sql: Db) {
  return sql`live_transcript = null, post_call_transcript = null, redacted_transcript = null`;
}

/**
 * Data-modifying CTEs, for a statement's `with`: the content that the items, tool calls and post-call words of the
 * conversations listed by the relation `of` (its `id` column) hold is dropped; rows already without it are not
 * rewritten. Also used by the retention sweep (src/store/post-call.ts). The record's own transcripts are left to the
 * caller, whose statement may update that row already (a row is updated at most once per statement).
 */
export function itemsContentDropped(sql: Db, of: string) {
  const conv = sql(of);
  return sql`items_content_dropped as (
      update conversation_items i set ${transcriptsDropped(sql)}
      from ${conv} where i.conversation_id = ${conv}.id
        and (i.live_transcript is not null or i.post_call_transcript is not null or i.redacted_transcript is not null)
    ), calls_content_dropped as (
      update conversation_tool_calls tc set request_body = null, response_body = null
      from ${conv} where tc.conversation_id = ${conv}.id and (tc.request_body is not null or tc.response_body is not null)
    ), words_dropped as (
      -- The post-call transcript's words (src/store/post-call.ts).
      delete from conversation_post_call_words w using ${conv} where w.conversation_id = ${conv}.id
    )`;
}

/**
 * One statement: drops the content a conversation holds when it retains nothing (its record's transcripts, its
 * items' and tool calls'), and does nothing otherwise.
 */
function contentDroppedIfRetainsNothing(sql: Db, conversationId: string) {
  return sql`
    with zdr as (
      select id from conversations where id = ${conversationId} and ${retainsNothing(sql)}
    ), record_content_dropped as (
      update conversations c set ${transcriptsDropped(sql)} from zdr where c.id = zdr.id
        and (c.live_transcript is not null or c.post_call_transcript is not null or c.redacted_transcript is not null)
    ), ${itemsContentDropped(sql, 'zdr')}
    select 1`;
}

/** A tool call's row for appendItemsBatch's jsonb_to_recordset, where an absent (undefined) field reads as NULL. */
function toolCallRow(conversationId: string, itemId: string, idx: number, c: NewToolCall) {
  return {
    id: c.id ?? newId('tool_call'),
    conversation_id: conversationId,
    item_id: itemId,
    call_idx: idx,
    tool_id: c.tool.id,
    tool_name: c.tool.name,
    request_body: c.request_body,
    response_body: c.response_body,
    timed_out: c.timed_out,
    error_message: c.error_message,
    integration: c.integration,
    endpoint_method: c.endpoint_method,
    endpoint_url: c.endpoint_url,
    endpoint_headers: c.endpoint_headers,
    endpoint_timeout_ms: c.endpoint_timeout_ms,
    // toISOString throws on an unparseable time (JSON.stringify would quietly store null).
    endpoint_called_at: c.endpoint_called_at ? new Date(c.endpoint_called_at).toISOString() : null,
    query_params: c.query_params,
    response_status_code: c.response_status_code,
    tool_call_output_timeout_ms: c.tool_call_output_timeout_ms,
  };
}

const JSON_COLUMNS = new Set([
  'template_variables',
  'boosted_keywords',
  'pronunciation_dictionary',
  'additional_languages',
  'task_results',
  'metadata',
  'data_retention_policy',
  'languages',
  'tools',
  'config',
  'latencies_ms',
  'tasks',
]);

/** postgres.js sends arrays as SQL arrays: wrap the jsonb columns' values explicitly. */
function withJson(sql: Db, row: Record<string, unknown>): HelperRow {
  const out: HelperRow = {};
  for (const [k, v] of Object.entries(row)) {
    if (v === undefined) continue;
    out[k] = JSON_COLUMNS.has(k) && v !== null ? sql.json(v as Json) : v;
  }
  return out;
}

/** Items to append to one conversation. */
export interface Append {
  conversationId: string;
  items: NewItem[];
}

/**
 * Appends the items (and their tool calls) of several appends, to any conversations, in ONE statement, so one
 * round trip: a statement is atomic (all its rows land or none do), and its UPDATE of each conversation's
 * `next_item_idx` reserves the indexes under the row's lock, so concurrent appends to one conversation take turns
 * (migration 20261122000400). Appends to one conversation get its indexes in the order given. The rows travel as
 * two jsonb arrays, so the statement's text is the same for any number of items and postgres.js prepares it once
 * per connection. Items join their conversation's reservation and tool calls their item as inserted, so an append
 * to a conversation that does not exist writes nothing and answers ConversationNotFoundError, without failing the
 * others. Answers each append's item ids (or that error), in order; rejects when the statement fails (then
 * nothing was written).
 *
 * An append to a conversation that retains nothing (zero data retention) stores its items and tool calls without
 * their content (transcripts, request and response bodies), whatever it was handed. That is read off the row the
 * reservation locked, in its latest version, so an append waiting on a marking (updateConversation) sees it.
 *
 * Sending an append again is safe when its items carry their ids: an item whose id is stored already is skipped
 * (with its tool calls) and its id answered as written, and the others are numbered after the conversation's last
 * item. So an append whose statement was lost with its connection (it may have committed) is sent again as it was,
 * never written twice (src/store/append-batcher.ts holds appends through a database outage).
 */
export async function appendItemsBatch(
  sql: Db,
  appends: readonly Append[],
): Promise<(string[] | ConversationNotFoundError)[]> {
  const itemRows: Record<string, unknown>[] = [];
  const callRows: Record<string, unknown>[] = [];
  /** Items of the batch so far per conversation: the next item's offset from the conversation's first index. */
  const counts = new Map<string, number>();
  const ids = appends.map(({ conversationId, items }) => {
    let k = counts.get(conversationId) ?? 0;
    const out: string[] = [];
    for (const item of items) {
      const id = item.id ?? newId('conv_item');
      out.push(id);
      // As toolCallRow: an absent field reads as NULL.
      itemRows.push({
        k: k++,
        conversation_id: conversationId,
        id,
        role: item.role,
        live_transcript: item.live_transcript,
        post_call_transcript: item.post_call_transcript,
        redacted_transcript: item.redacted_transcript,
        duration_ms: item.duration_ms,
        started_at: item.started_at,
        voice_id: item.voice_id,
        audio_speed: item.audio_speed,
        system_prompt: item.system_prompt,
      });
      for (const [j, call] of (item.tool_calls ?? []).entries())
        callRows.push(toolCallRow(conversationId, id, j, call));
    }
    counts.set(conversationId, k);
    return out;
  });
  if (itemRows.length === 0) return ids;
  const stored = await sql<{ conversation_id: string }[]>`
    with given as (
      select * from jsonb_to_recordset(${sql.json(itemRows as Json)}) as i(k int, conversation_id text, id text,
        role text, live_transcript text, post_call_transcript text, redacted_transcript text, duration_ms float8,
        started_at timestamptz, voice_id text, audio_speed float8, system_prompt text)
    ), stored_before as (
      -- Items of an append sent again (their statement was lost with its connection after it committed).
      select g.id, g.conversation_id from given g join conversation_items x on x.id = g.id
    ), input as (
      select g.*, (row_number() over (partition by g.conversation_id order by g.k) - 1)::int as n
      from given g where not exists (select 1 from stored_before b where b.id = g.id)
    ), wanted as (
      select conversation_id, count(*)::int as n from input group by conversation_id
    ), reserved as (
      update conversations c set next_item_idx = c.next_item_idx + wanted.n
      from wanted where c.id = wanted.conversation_id
      returning c.id, c.next_item_idx - wanted.n as first, ${retainsNothing(sql)} as retains_nothing
    ), items as (
      insert into conversation_items (id, conversation_id, item_idx, role, live_transcript, post_call_transcript,
        redacted_transcript, duration_ms, started_at, voice_id, audio_speed, system_prompt)
      select i.id, i.conversation_id, r.first + i.n, i.role,
        case when r.retains_nothing then null else i.live_transcript end,
        case when r.retains_nothing then null else i.post_call_transcript end,
        case when r.retains_nothing then null else i.redacted_transcript end,
        i.duration_ms, i.started_at, i.voice_id, i.audio_speed, i.system_prompt
      from input i join reserved r on r.id = i.conversation_id
      returning id, conversation_id
    ), calls as (
      insert into conversation_tool_calls (id, conversation_id, item_id, call_idx, tool_id, tool_name, request_body,
        response_body, timed_out, error_message, integration, endpoint_method, endpoint_url, endpoint_headers,
        endpoint_timeout_ms, endpoint_called_at, query_params, response_status_code, tool_call_output_timeout_ms)
      select c.id, c.conversation_id, c.item_id, c.call_idx, c.tool_id, c.tool_name,
        case when r.retains_nothing then null else c.request_body end,
        case when r.retains_nothing then null else c.response_body end,
        c.timed_out, c.error_message, c.integration, c.endpoint_method, c.endpoint_url, c.endpoint_headers, c.endpoint_timeout_ms, c.endpoint_called_at, c.query_params, c.response_status_code,
        c.tool_call_output_timeout_ms
      from jsonb_to_recordset(${sql.json(callRows as Json)}) as c(id text, conversation_id text, item_id text,
        call_idx int, tool_id text, tool_name text, request_body jsonb, response_body jsonb, timed_out boolean,
        error_message text, integration text, endpoint_method text, endpoint_url text, endpoint_headers jsonb,
        endpoint_timeout_ms int, endpoint_called_at timestamptz, query_params jsonb, response_status_code int,
        tool_call_output_timeout_ms int)
      join items on items.id = c.item_id join reserved r on r.id = items.conversation_id
    )
    select conversation_id from items union select conversation_id from stored_before`;
  // A conversation that exists took all of its items (they join its reservation); one that does not, none.
  const found = new Set(stored.map((r) => r.conversation_id));
  return appends.map((a, i) =>
    a.items.length === 0 || found.has(a.conversationId) ? ids[i] : new ConversationNotFoundError(a.conversationId),
  );
}

/** Stores a new conversation (and any items); returns its id. */
export async function createConversation(sql: Sql, c: NewConversation): Promise<string> {
  const id = c.id ?? newId('conv');
  const s = c.settings ?? {};
  const f = c.finish;
  // Created already ended under zero data retention (an import): its transcripts are content, not kept, as a
  // finish would not keep them; its items go through appendItemsBatch, which keeps none of their text either.
  const keepsContent = s.data_retention_policy?.zero_data_retention !== true;
  const row = withJson(sql, {
    id,
    org_id: c.orgId,
    project_id: c.projectId,
    agent_id: c.agent?.id ?? null,
    agent_name: c.agent?.name ?? null,
    external_id: c.external_id ?? null,
    origin: c.origin,
    state: f ? 'ended' : (c.state ?? 'created'),
    node_id: c.nodeId ?? null,
    ...s,
    model: s.model ?? DEFAULT_MODEL,
    input_format: s.input_format ?? DEFAULT_FORMAT,
    output_format: s.output_format ?? DEFAULT_FORMAT,
    from_phone_number: c.call_info?.from_phone_number ?? null,
    to_phone_number: c.call_info?.to_phone_number ?? null,
    telephony_call_sid: c.call_info?.telephony_call_sid ?? null,
    analysis_id: newId('conv_analysis'),
    created_at: c.created_at ?? new Date(),
    started_at: c.started_at ?? null,
    ended_by: f?.ended_by ?? null,
    ended_at: f?.ended_at ?? null,
    duration_ms: f?.duration_ms ?? 0,
    live_transcript: keepsContent ? (f?.live_transcript ?? null) : null,
    post_call_transcript: keepsContent ? (f?.post_call_transcript ?? null) : null,
    redacted_transcript: keepsContent ? (f?.redacted_transcript ?? null) : null,
    latencies_ms: f?.latencies_ms ?? [],
    interruptions_count: f?.interruptions_count ?? 0,
    task_results: f?.task_results ?? {},
  });
  const items = c.items ?? [];
  if (items.length === 0) {
    await sql`insert into conversations ${sql(row)}`;
    return id;
  }
  await transaction(sql, async (tx) => {
    await tx`insert into conversations ${tx(row)}`;
    const [ids] = await appendItemsBatch(tx, [{ conversationId: id, items }]);
    if (ids instanceof Error) throw ids;
  });
  return id;
}

/** Whether the conversation's record exists (created, in any state). */
export async function conversationExists(sql: Sql, conversationId: string): Promise<boolean> {
  const rows = await sql`select 1 from conversations where id = ${conversationId}`;
  return rows.length > 0;
}

/**
 * Appends turns after the last one, with their tool calls, all or nothing (one statement); returns their ids.
 * Rejects with ConversationNotFoundError when there is no such conversation.
 */
export async function appendItems(sql: Sql, conversationId: string, items: NewItem[]): Promise<string[]> {
  const [ids] = await appendItemsBatch(sql, [{ conversationId, items }]);
  if (ids instanceof Error) throw ids;
  return ids;
}

/** What a live conversation may change while in progress (`set_external_id`, prompt updates, lifecycle). */
export interface ConversationUpdate {
  state?: Exclude<ConversationState, 'ended'>;
  external_id?: string | null;
  started_at?: Date;
  settings?: ConversationSettings;
  /**
   * Keys merged into the record's `metadata` (jsonb `||`: a key given replaces that key alone, the others stay), so
   * the live call and main's SIP side may each write their own keys (docs/telephony.md, "What a call records").
   */
  metadata?: Record<string, unknown>;
}

/**
 * Changes a conversation in progress; false when it has ended (finished, or canceled through the API: the live
 * engine takes that as its signal to stop) or does not exist. `started_at` is set once.
 *
 * An update that sets the data retention policy is one transaction with the drop of the content the conversation
 * holds when it now retains nothing (zero data retention; a transfer to such an agent marks it mid-call:
 * src/conversation/record.ts keepNothing): the text stored before the marking is gone once it answers, not only at
 * the finish, which may never come. The drop is a statement of its own after the update, so it sees every append
 * that committed before the update took the row's lock; appends after it wait on that lock and then store no text
 * (appendItemsBatch).
 */
export async function updateConversation(sql: Sql, conversationId: string, u: ConversationUpdate): Promise<boolean> {
  const set = withJson(sql, { ...(u.settings ?? {}), state: u.state, external_id: u.external_id });
  if (u.metadata !== undefined && u.settings?.metadata !== undefined)
    throw new Error('an update sets metadata or merges keys into it, not both');
  const startedAt = u.started_at ?? null;
  // null: no keys to merge (jsonb `||` with '{}' leaves the metadata as it is, null included).
  const merge = u.metadata === undefined ? null : sql.json(u.metadata as Json);
  // postgres.js recognises its update helper only right after `set`: one statement per shape.
  const update = (db: Db) =>
    Object.keys(set).length > 0
      ? db`update conversations set ${db(set)},
          started_at = coalesce(started_at, ${startedAt}::timestamptz),
          metadata = case when ${merge}::jsonb is null then metadata else coalesce(metadata, '{}'::jsonb) || ${merge}::jsonb end
        where id = ${conversationId} and state <> 'ended' returning 1`
      : db`update conversations set started_at = coalesce(started_at, ${startedAt}::timestamptz),
          metadata = case when ${merge}::jsonb is null then metadata else coalesce(metadata, '{}'::jsonb) || ${merge}::jsonb end
        where id = ${conversationId} and state <> 'ended' returning 1`;
  if (u.settings?.data_retention_policy === undefined) return (await update(sql)).length > 0;
  const [rows] = await pipelinedTransaction(sql, (tx) => [
    update(tx),
    contentDroppedIfRetainsNothing(tx, conversationId),
  ]);
  return rows.length > 0;
}

/**
 * What a finish did: `ended` (this call ended it) and `recordingsStored` (its recording rows were written, or point
 * at its files already: a finish made again after its first attempt committed unseen).
 */
export interface FinishOutcome {
  ended: boolean;
  recordingsStored: boolean;
}

/**
 * Ends a conversation, stores its recordings and frees its lease (freed in every case). One statement, so one
 * round trip and atomic: it first locks the conversation's row (`for update`, which waits for a cancel or a content
 * deletion in flight and then sees its outcome), and the update and the recordings join that locked row.
 *
 * A conversation that is not yet ended is ended with everything given (`ended: true`), except its content when it
 * retains nothing (below).
 *
 * One that has ended already (canceled through the API, whose `POST .../cancel` ends the row before the live side
 * hears of it; or finished before) keeps what that ending set and is only filled in with what the live side alone
 * knows, so nothing the call produced is lost (`ended: false`). Per field:
 * - ended_by, ended_at, duration_ms: kept; the earlier ending's word stands (a cancel's user_canceled and its time).
 * - live/post_call/redacted transcripts: filled only where still null, and never when the transcripts were deleted
 *   (`transcripts_deleted_at`, deleteConversationContent after the cancel) or the conversation retains nothing
 *   (zero data retention). null, not '', is "never set": a cancel sets no transcript.
 * - latencies_ms: filled only while the stored list is empty (the default; a cancel sets none). An earlier finish's
 *   list is the whole call's, so the two are never concatenated.
 * - interruptions_count: filled only while 0 (the default; "none counted" cannot be told from "not set", and a count
 *   filled in from 0 loses nothing).
 * - task_results: filled only while `{}` (the default).
 * - rtp_stats (analysis.rtp): filled only while null (the default).
 * - recordings: a side that has no row yet is stored, unless the recordings were deleted (`audio_recordings_deleted_at`)
 *   or the conversation retains nothing; a side that has one keeps it. A row that points at the very file given
 *   counts as stored: the same finish made again (its first attempt lost with its connection after it committed)
 *   must not have the caller remove a file the record keeps.
 * Latencies and interruptions are stored under zero data retention as on a first finish (numbers, nothing said;
 * src/conversation/record.ts passes them there too).
 *
 * The post-call jobs (src/store/jobs.ts POST_CALL_JOBS: transcript, extraction, evaluations, redaction where
 * enabled, the analysis event) are enqueued by the same statement, on every finish, once per conversation: a finish
 * that commits has its jobs, durably. The finish that enqueued them runs `opts.onFirstFinish` in its transaction
 * (the webhook events of the end: src/workers/main-handlers.ts).
 *
 * Zero data retention (the conversation's data_retention_policy, form A: "retains nothing"), on
 * any finish, first or later: no recording is stored (`recordingsStored: false`: the worker removes the files), no
 * transcript is kept (given or stored: all three are null afterwards), and the content its items hold is dropped
 * (their transcripts and their tool calls' request and response bodies, as deleteConversationContent drops them). A
 * conversation can become zero data retention mid-call (a transfer to such an agent marks it through
 * updateConversation, which drops that content already), after items with text were appended: none of it is kept.
 */
export async function finishConversation(
  sql: Sql,
  conversationId: string,
  f: Finish,
  recordings: NewRecording[] = [],
  opts: FinishOptions = {},
): Promise<FinishOutcome> {
  // Post-call wiring: with `onFirstFinish` the statement runs in a transaction with what the hook writes.
  const hook = opts.onFirstFinish;
  if (!hook) return (await finishStatement(sql, conversationId, f, recordings)).outcome;
  return transaction(sql, async (tx) => {
    const { outcome, first } = await finishStatement(tx, conversationId, f, recordings);
    if (first) await hook(tx, first);
    return outcome;
  });
}

/** A conversation as its first finish left it: what the events of its end say (src/jobs/webhooks/). */
export interface FinishedConversation {
  id: string;
  orgId: string;
  projectId: string;
  agent: { id: string; name: string } | null;
  origin: Conversation['origin'];
  externalId: string | null;
  endedBy: EndedBy;
  startedAt: Date | null;
  endedAt: Date;
  durationMs: number;
}

export interface FinishOptions {
  /**
   * Runs in the finish's transaction after the finish that enqueued the conversation's post-call jobs (its first
   * finish by the live side; once per conversation), with the conversation as it ended. Its writes commit with the
   * finish or not at all.
   */
  onFirstFinish?: (tx: Tx, c: FinishedConversation) => Promise<void>;
}

async function finishStatement(
  sql: Db,
  conversationId: string,
  f: Finish,
  recordings: NewRecording[],
): Promise<{ outcome: FinishOutcome; first: FinishedConversation | null }> {
  // One row per side: a later recording of a side replaces an earlier one, as when stored one after another.
  const bySide = new Map(recordings.map((r) => [r.side, r]));
  const json = (v: unknown) => (v === undefined || v === null ? null : sql.json(v as Json));
  // An omitted field (undefined) leaves the column as it is; an in-progress row has nothing in these columns but
  // the defaults, so `coalesce(given, column)` is what the update helper did before for a first finish.
  const [out] = await sql<{ ended: boolean; recordings_stored: boolean; first: EndedRow | null }[]>`
    with prev as materialized (
      select id, state = 'ended' as was_ended,
        ${retainsNothing(sql)} as retains_nothing,
        -- Under zero data retention neither is read: retains_nothing decides first, below.
        transcripts_deleted_at is null as keeps_transcripts,
        audio_recordings_deleted_at is null as keeps_recordings
      from conversations where id = ${conversationId} for update
    ), ended as (
      update conversations c set
        state = 'ended',
        ended_by = case when prev.was_ended then c.ended_by else coalesce(${f.ended_by ?? null}::text, c.ended_by) end,
        ended_at = case when prev.was_ended then c.ended_at else coalesce(${f.ended_at ?? null}::timestamptz, c.ended_at) end,
        duration_ms = case when prev.was_ended then c.duration_ms
          else coalesce(${f.duration_ms ?? null}::float8, c.duration_ms) end,
        live_transcript = case when prev.retains_nothing then null
          when not prev.was_ended then coalesce(${f.live_transcript ?? null}::text, c.live_transcript)
          when prev.keeps_transcripts then coalesce(c.live_transcript, ${f.live_transcript ?? null}::text)
          else c.live_transcript end,
        post_call_transcript = case when prev.retains_nothing then null
          when not prev.was_ended then coalesce(${f.post_call_transcript ?? null}::text, c.post_call_transcript)
          when prev.keeps_transcripts then coalesce(c.post_call_transcript, ${f.post_call_transcript ?? null}::text)
          else c.post_call_transcript end,
        redacted_transcript = case when prev.retains_nothing then null
          when not prev.was_ended then coalesce(${f.redacted_transcript ?? null}::text, c.redacted_transcript)
          when prev.keeps_transcripts then coalesce(c.redacted_transcript, ${f.redacted_transcript ?? null}::text)
          else c.redacted_transcript end,
        latencies_ms = case when not prev.was_ended or jsonb_array_length(c.latencies_ms) = 0
          then coalesce(${json(f.latencies_ms)}::jsonb, c.latencies_ms) else c.latencies_ms end,
        interruptions_count = case when not prev.was_ended or c.interruptions_count = 0
          then coalesce(${f.interruptions_count ?? null}::int, c.interruptions_count) else c.interruptions_count end,
        task_results = case when not prev.was_ended or c.task_results = '{}'::jsonb
          then coalesce(${json(f.task_results)}::jsonb, c.task_results) else c.task_results end,
        rtp_stats = coalesce(c.rtp_stats, ${json(f.rtp)}::jsonb)
      from prev where c.id = prev.id
      returning c.id, prev.was_ended, prev.retains_nothing, prev.keeps_recordings,
        c.org_id, c.project_id, c.agent_id, c.agent_name, c.origin, c.external_id, c.ended_by, c.started_at, c.ended_at,
        c.duration_ms
    ), zdr as (
      select id from prev where retains_nothing
    ), ${itemsContentDropped(sql, 'zdr')}, freed as (
      delete from conversation_leases where conversation_id = ${conversationId}
    ), stored as (
      insert into conversation_recordings (conversation_id, side, path, format, sample_rate, channels, bytes, compress_to)
      select ended.id, r.side, r.path, r.format, r.sample_rate, r.channels, r.bytes, r.compress_to
      from ended, jsonb_to_recordset(${sql.json([...bySide.values()] as unknown as Json)}) as r(side text, path text,
        format text, sample_rate int, channels int, bytes bigint, compress_to text)
      where not ended.retains_nothing and (not ended.was_ended
        or (ended.keeps_recordings and not exists (select 1 from conversation_recordings x
          where x.conversation_id = ended.id and x.side = r.side)))
      on conflict (conversation_id, side) do update set path = excluded.path, format = excluded.format,
        sample_rate = excluded.sample_rate, channels = excluded.channels, bytes = excluded.bytes,
        compress_to = excluded.compress_to, created_at = now()
      returning 1
    ), post_call_jobs as (
      -- The post-call jobs (src/store/jobs.ts), enqueued in this statement: no finish without them.
      ${postCallJobsEnqueued(sql, 'ended')}
    )
    select exists (select 1 from ended where not was_ended) as ended,
      exists (select 1 from stored) or exists (select 1 from conversation_recordings x
        join jsonb_to_recordset(${sql.json([...bySide.values()] as unknown as Json)}) as r(side text, path text)
          on x.side = r.side and x.path = r.path
        where x.conversation_id = ${conversationId} and not exists (select 1 from prev where retains_nothing)) as recordings_stored,
      -- The finish that enqueued the post-call jobs is the conversation's first (FinishOptions.onFirstFinish).
      case when exists (select 1 from post_call_jobs) then (select to_jsonb(ended) from ended) end as first`;
  const r = out.first;
  const first: FinishedConversation | null = r && {
    id: r.id,
    orgId: r.org_id,
    projectId: r.project_id,
    // agent_id and agent_name are written together.
    agent: r.agent_id === null || r.agent_name === null ? null : { id: r.agent_id, name: r.agent_name },
    origin: r.origin,
    externalId: r.external_id,
    endedBy: r.ended_by,
    startedAt: r.started_at === null ? null : new Date(r.started_at),
    endedAt: new Date(r.ended_at),
    durationMs: r.duration_ms,
  };
  return { outcome: { ended: out.ended, recordingsStored: out.recordings_stored }, first };
}

export type CancelOutcome = 'canceled' | 'already_ended' | 'not_found';

/** The channel (LISTEN/NOTIFY) on which a cancel is announced to every node; the payload is the conversation id. */
export const CANCELED_CHANNEL = 'parley_conversation_canceled';

type CanceledListener = (conversationId: string) => void;
const canceledListeners = new Set<CanceledListener>();

/**
 * Calls `listener` with the id of every conversation canceled through this process, once its cancel committed (the
 * node that owns the conversation stops it at once). Other nodes hear of a cancel on CANCELED_CHANNEL (PostgreSQL).
 * Returns the unsubscribe.
 */
export function onConversationCanceled(listener: CanceledListener): () => void {
  canceledListeners.add(listener);
  return () => canceledListeners.delete(listener);
}

/**
 * Cancels a conversation in progress: it ends with `ended_by: user_canceled`, its duration counted up to now,
 * and its lease is freed. The live engine learns of it at once (onConversationCanceled, CANCELED_CHANNEL) and
 * stops: it owns the audio, not the row.
 */
export async function cancelConversation(sql: Sql, conversationId: string): Promise<CancelOutcome> {
  const outcome = await transaction(sql, async (tx) => {
    const [row] = await tx<{ state: ConversationState }[]>`
      select state from conversations where id = ${conversationId} for update`;
    if (!row) return 'not_found' as const;
    if (row.state === 'ended') return 'already_ended' as const;
    await tx`update conversations set state = 'ended', ended_by = 'user_canceled', ended_at = now(),
        duration_ms = case when started_at is null then 0
          else greatest(0, extract(epoch from (now() - started_at)) * 1000) end
      where id = ${conversationId}`;
    await tx`delete from conversation_leases where conversation_id = ${conversationId}`;
    // Delivered at commit, to the nodes listening (this one included, on PostgreSQL).
    await tx`select pg_notify(${CANCELED_CHANNEL}, ${conversationId})`;
    return 'canceled' as const;
  });
  if (outcome === 'canceled') for (const listener of canceledListeners) listener(conversationId);
  return outcome;
}

export type DeleteOutcome =
  { kind: 'deleted'; recordings: RecordingRow[] } | { kind: 'in_progress' } | { kind: 'not_found' };

/**
 * Deletes a finished conversation's content: transcripts (of the record, its items and tool-call bodies) and its
 * recordings (returned, so the caller removes the files). The record stays, with `deletion_info` saying when.
 */
export async function deleteConversationContent(sql: Sql, conversationId: string): Promise<DeleteOutcome> {
  return transaction(sql, async (tx) => {
    const [row] = await tx<{ state: ConversationState }[]>`
      select state from conversations where id = ${conversationId} for update`;
    if (!row) return { kind: 'not_found' } as const;
    if (row.state !== 'ended') return { kind: 'in_progress' } as const;
    await tx`
      with conv as (
        update conversations set ${transcriptsDropped(tx)},
          transcripts_deleted_at = coalesce(transcripts_deleted_at, now()),
          audio_recordings_deleted_at = coalesce(audio_recordings_deleted_at, now())
        where id = ${conversationId} returning id
      ), ${itemsContentDropped(tx, 'conv')}
      select 1`;
    const recordings = await tx<RecordingRow[]>`delete from conversation_recordings
      where conversation_id = ${conversationId}
      returning conversation_id, side, path, format, sample_rate, channels, bytes::float8 as bytes`;
    return { kind: 'deleted', recordings: [...recordings] } as const;
  });
}

/** Records an audio file of a conversation (replacing an earlier one of the same side). */
export async function addRecording(sql: Sql, conversationId: string, r: NewRecording): Promise<void> {
  await upsertRecording(sql, conversationId, r);
}

async function upsertRecording(sql: Db, conversationId: string, r: NewRecording): Promise<void> {
  await sql`insert into conversation_recordings ${sql({ conversation_id: conversationId, ...r, compress_to: r.compress_to ?? null })}
    on conflict (conversation_id, side) do update set path = excluded.path, format = excluded.format,
      sample_rate = excluded.sample_rate, channels = excluded.channels, bytes = excluded.bytes,
      compress_to = excluded.compress_to, created_at = now()`;
}

/** Stores an extraction made from a conversation; returns its id. */
export async function addExtraction(
  sql: Sql,
  conversationId: string,
  e: { schemaId: string; schemaName: string; result: Record<string, unknown>; createdAt?: Date },
): Promise<string> {
  const id = newId('conv_extract');
  await sql`insert into conversation_extractions (id, conversation_id, schema_id, schema_name, result, created_at)
    values (${id}, ${conversationId}, ${e.schemaId}, ${e.schemaName}, ${sql.json(e.result as Json)},
      ${e.createdAt ?? new Date()})`;
  return id;
}

/**
 * A recording was compressed (src/media/recording-compressor.ts): moves its row from the `.wav` at `from` to the
 * compressed file, compare-and-set: only while the row still points at that `.wav`. false when the recording was
 * deleted (deleteConversationContent) or replaced meanwhile: nothing is written, so no row comes back.
 */
export async function moveRecordingToCompressed(
  sql: Sql,
  conversationId: string,
  side: RecordingSide,
  from: string,
  to: { path: string; format: 'wav.gz'; bytes: number },
): Promise<boolean> {
  const rows =
    await sql`update conversation_recordings set path = ${to.path}, format = ${to.format}, bytes = ${to.bytes},
      compress_to = null
    where conversation_id = ${conversationId} and side = ${side} and path = ${from} and format = 'wav'
    returning 1`;
  return rows.length > 0;
}

/** A recording still stored as its `.wav` whose gzip was wanted but never landed (shutdown, crash). */
export interface PendingCompression {
  conversation_id: string;
  side: RecordingSide;
  path: string;
}

/**
 * Recordings left as `.wav` with a gzip pending whose conversation ran on `nodeId` (PARLEY_NODE_ID; null, the
 * default, is the unnamed node and matches the rows it wrote, whose node_id is null), oldest first: resumed at that
 * node's start. Only the node that recorded a WAV compresses it, so no node touches a `.gz` another may be writing.
 */
export async function pendingCompressions(sql: Sql, nodeId: string | null = null): Promise<PendingCompression[]> {
  return sql<PendingCompression[]>`select r.conversation_id, r.side, r.path
    from conversation_recordings r join conversations c on c.id = r.conversation_id
    where r.format = 'wav' and r.compress_to is not null and c.node_id is not distinct from ${nodeId}::text
    order by r.created_at, r.conversation_id, r.side`;
}

/** The pending compressions of one other node (`pendingCompressionsOfOtherNodes`). */
export interface OtherNodePending {
  /** null: the unnamed node's. */
  node_id: string | null;
  recordings: number;
  /** Its last heartbeat (`node_heartbeats`); null when it has none (an unnamed node beats under another id). */
  heartbeat_at: Date | null;
}

/** Pending compressions that `pendingCompressions(sql, nodeId)` leaves to other nodes, counted per node. */
export async function pendingCompressionsOfOtherNodes(sql: Sql, nodeId: string | null): Promise<OtherNodePending[]> {
  return sql<OtherNodePending[]>`select c.node_id, count(*)::int as recordings, h.heartbeat_at
    from conversation_recordings r join conversations c on c.id = r.conversation_id
      left join node_heartbeats h on h.node_id = c.node_id
    where r.format = 'wav' and r.compress_to is not null and c.node_id is distinct from ${nodeId}::text
    group by c.node_id, h.heartbeat_at order by c.node_id nulls first`;
}

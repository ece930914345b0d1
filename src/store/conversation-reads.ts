// Conversations repository, the reading side: rows of a conversation and its items, tool calls and recording mapped
// to the API's Conversation record (`audio_url` left null for the API to sign), one conversation, a listing page with cursors,
// extractions. Re-exported by conversations.ts, the repository's entry.
import type { Sql } from './db.js';
import type {
  Conversation,
  ConversationExtraction,
  ConversationItem,
  ExternalStorageDelivery,
  PostCallJob,
  RecordingSide,
  TimeBound,
  ToolCallEntry,
} from '../schemas/conversations.js';
import type { ConversationState, RecordingRow, SettingsField } from './conversation-types.js';
import { storageOutcomesOf } from './external-storage.js';
import { jobsOfConversations } from './jobs.js';

/** A conversation as read: the API's record (audio_url null) plus what the API needs around it. */
export interface StoredConversation {
  orgId: string;
  projectId: string;
  state: ConversationState;
  record: Conversation;
  /** The recording `audio_url` serves, if any. */
  recording: RecordingRow | null;
}

function iso(d: Date | string | null): string | null {
  if (d === null) return null;
  return (d instanceof Date ? d : new Date(d)).toISOString();
}

/** The recording of one side, if stored. */
export async function getRecording(
  sql: Sql,
  conversationId: string,
  side: RecordingSide,
): Promise<RecordingRow | null> {
  const [row] = await sql<RecordingRow[]>`select conversation_id, side, path, format, sample_rate, channels,
      bytes::float8 as bytes from conversation_recordings where conversation_id = ${conversationId} and side = ${side}`;
  return row ?? null;
}

/** Extractions of a conversation, oldest first; `schema.isDeleted` when the schema was deleted since. */
export async function listExtractions(sql: Sql, conversationId: string): Promise<ConversationExtraction[]> {
  const rows = await sql<
    {
      id: string;
      schema_id: string;
      schema_name: string;
      result: Record<string, unknown>;
      created_at: Date;
      deleted: boolean;
    }[]
  >`select e.id, e.schema_id, e.schema_name, e.result, e.created_at,
      (s.id is null or s.deleted_at is not null) as deleted
    from conversation_extractions e left join extraction_schemas s on s.id = e.schema_id
    where e.conversation_id = ${conversationId} order by e.created_at, e.id`;
  return rows.map((r) => ({
    id: r.id,
    schema: { id: r.schema_id, name: r.schema_name, isDeleted: r.deleted },
    result: r.result,
    created_at: iso(r.created_at)!,
  }));
}

// ---- records ----

// Rows as postgres.js returns them: columns of the migration, jsonb parsed, timestamps as Date. Columns named
// as the record's fields keep the record's types.

/** A row of `conversation_items`. */
type ItemRow = Pick<
  ConversationItem,
  'id' | 'item_idx' | 'role' | 'live_transcript' | 'post_call_transcript' | 'duration_ms' | 'redacted_transcript'
> & {
  conversation_id: string;
  started_at: Date;
  voice_id: string | null;
  audio_speed: number | null;
  system_prompt: string | null;
};

/** A row of `conversation_tool_calls`. */
type ToolCallRow = Omit<ToolCallEntry, 'tool' | 'endpoint_called_at'> & {
  item_id: string;
  tool_id: string;
  tool_name: string;
  endpoint_called_at: Date | null;
};

/** The record's fields stored under their own names in `conversations` (two nullable settings are typed below). */
type SameNamed =
  | Exclude<SettingsField, 'websocket_timeout_sec' | 'languages'>
  | 'id'
  | 'external_id'
  | 'origin'
  | 'live_transcript'
  | 'post_call_transcript'
  | 'duration_ms'
  | 'ended_by'
  | 'task_results'
  | 'is_redacted'
  | 'redacted_transcript';

type Analysis = Conversation['analysis'];

/** A row of `conversations` joined with the names the record shows (selectRows). */
type ConversationRow = Pick<Conversation, SameNamed> & {
  org_id: string;
  project_id: string;
  state: ConversationState;
  agent_id: string | null;
  agent_name: string | null;
  agent_deleted: boolean;
  workspace_name: string;
  project_name: string;
  started_at: Date | null;
  ended_at: Date | null;
  from_phone_number: string | null;
  to_phone_number: string | null;
  telephony_call_sid: string | null;
  analysis_id: string;
  latencies_ms: Analysis['latencies_ms'];
  interruptions_count: Analysis['interruptions_count'];
  rtp_stats: NonNullable<Analysis['rtp']> | null;
  websocket_timeout_sec: number | null;
  transcripts_deleted_at: Date | null;
  audio_recordings_deleted_at: Date | null;
  languages: Conversation['languages'] | null;
};

function itemOf(r: ItemRow, calls: ToolCallEntry[]): ConversationItem {
  const item: ConversationItem = {
    id: r.id,
    item_idx: r.item_idx,
    role: r.role,
    live_transcript: r.live_transcript,
    post_call_transcript: r.post_call_transcript,
    duration_ms: r.duration_ms,
    started_at: iso(r.started_at)!,
    redacted_transcript: r.redacted_transcript,
  };
  if (r.voice_id !== null) item.voice_id = r.voice_id;
  if (r.role === 'assistant' && r.audio_speed !== null) item.audio_speed = r.audio_speed;
  if (r.role === 'assistant') item.tool_calls = calls;
  if (r.system_prompt !== null) item.system_prompt = r.system_prompt;
  return item;
}

function toolCallOf(r: ToolCallRow): ToolCallEntry {
  return {
    id: r.id,
    tool: { id: r.tool_id, name: r.tool_name },
    request_body: r.request_body,
    response_body: r.response_body,
    timed_out: r.timed_out,
    error_message: r.error_message,
    integration: r.integration,
    endpoint_method: r.endpoint_method,
    endpoint_url: r.endpoint_url,
    endpoint_headers: r.endpoint_headers,
    endpoint_timeout_ms: r.endpoint_timeout_ms,
    endpoint_called_at: iso(r.endpoint_called_at),
    query_params: r.query_params,
    response_status_code: r.response_status_code,
    tool_call_output_timeout_ms: r.tool_call_output_timeout_ms,
  };
}

function recordOf(r: ConversationRow, items: ConversationItem[]): Conversation {
  return {
    id: r.id,
    // agent_id and agent_name are written together.
    agent:
      r.agent_id === null || r.agent_name === null
        ? null
        : { id: r.agent_id, name: r.agent_name, is_deleted: r.agent_deleted },
    workspace: r.workspace_name,
    project: { id: r.project_id, name: r.project_name },
    external_id: r.external_id,
    origin: r.origin,
    model: r.model,
    generate_welcome_message: r.generate_welcome_message,
    is_welcome_message_interruptible: r.is_welcome_message_interruptible,
    listen_only: r.listen_only,
    welcome_message: r.welcome_message,
    template_variables: r.template_variables,
    input_format: r.input_format,
    output_format: r.output_format,
    background_noise_level: r.background_noise_level,
    background_noise: r.background_noise,
    live_transcript: r.live_transcript,
    post_call_transcript: r.post_call_transcript,
    duration_ms: r.duration_ms,
    audio_url: null,
    started_at: iso(r.started_at),
    ended_at: iso(r.ended_at),
    ended_by: r.ended_by,
    boosted_keywords: r.boosted_keywords,
    pronunciation_dictionary: r.pronunciation_dictionary,
    min_words_to_interrupt: r.min_words_to_interrupt,
    default_language: r.default_language,
    additional_languages: r.additional_languages,
    multilingual_mode: r.multilingual_mode,
    push_to_talk: r.push_to_talk,
    no_input_poke_sec: r.no_input_poke_sec,
    no_input_end_conversation_sec: r.no_input_end_conversation_sec,
    no_input_poke_text: r.no_input_poke_text,
    task_results: r.task_results,
    items,
    call_info:
      // The table checks that both numbers are set or neither is.
      r.from_phone_number === null || r.to_phone_number === null
        ? null
        : {
            from_phone_number: r.from_phone_number,
            to_phone_number: r.to_phone_number,
            ...(r.telephony_call_sid === null ? {} : { telephony_call_sid: r.telephony_call_sid }),
          },
    analysis: {
      id: r.analysis_id,
      latencies_ms: r.latencies_ms,
      interruptions_count: r.interruptions_count,
      ...(r.rtp_stats === null ? {} : { rtp: r.rtp_stats }),
    },
    system_prompt: r.system_prompt,
    generate_no_input_poke_text: r.generate_no_input_poke_text,
    ...(r.websocket_timeout_sec === null ? {} : { websocket_timeout_sec: r.websocket_timeout_sec }),
    vad_prebuffer_duration_ms: r.vad_prebuffer_duration_ms,
    vad_min_speech_duration_ms: r.vad_min_speech_duration_ms,
    vad_min_silence_duration_ms: r.vad_min_silence_duration_ms,
    vad_threshold: r.vad_threshold,
    is_redacted: r.is_redacted,
    redacted_transcript: r.redacted_transcript,
    metadata: r.metadata,
    enable_watermarking: r.enable_watermarking,
    data_retention_policy: r.data_retention_policy,
    deletion_info: {
      transcripts_deleted_at: iso(r.transcripts_deleted_at),
      audio_recordings_deleted_at: iso(r.audio_recordings_deleted_at),
    },
    enable_assistant_backchannel: r.enable_assistant_backchannel,
    assistant_backchannel_aggressiveness: r.assistant_backchannel_aggressiveness,
    ...(r.languages === null ? {} : { languages: r.languages }),
  };
}

/** Reads full records (with items, tool calls and the `both` recording) for conversation rows, in row order. */
async function hydrate(sql: Sql, rows: ConversationRow[]): Promise<StoredConversation[]> {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const [items, calls, recordings, jobs, deliveries] = await Promise.all([
    sql<
      ItemRow[]
    >`select * from conversation_items where conversation_id in ${sql(ids)} order by conversation_id, item_idx`,
    sql<
      ToolCallRow[]
    >`select * from conversation_tool_calls where conversation_id in ${sql(ids)} order by item_id, call_idx`,
    sql<RecordingRow[]>`select conversation_id, side, path, format, sample_rate, channels, bytes::float8 as bytes
      from conversation_recordings where conversation_id in ${sql(ids)} and side = 'both'`,
    // The post-call jobs (src/store/jobs.ts), shown as the record's `post_call`.
    jobsOfConversations(sql, ids),
    // The external storage deliveries (src/store/external-storage.ts), shown as the record's `external_storage`.
    storageOutcomesOf(sql, ids),
  ]);
  const callsByItem = new Map<string, ToolCallEntry[]>();
  for (const c of calls) {
    const list = callsByItem.get(c.item_id) ?? [];
    list.push(toolCallOf(c));
    callsByItem.set(c.item_id, list);
  }
  const itemsByConv = new Map<string, ConversationItem[]>();
  for (const i of items) {
    const list = itemsByConv.get(i.conversation_id) ?? [];
    list.push(itemOf(i, callsByItem.get(i.id) ?? []));
    itemsByConv.set(i.conversation_id, list);
  }
  const recByConv = new Map(recordings.map((r) => [r.conversation_id, r]));
  const jobsByConv = new Map<string, PostCallJob[]>();
  for (const j of jobs) {
    const list = jobsByConv.get(j.conversation_id) ?? [];
    list.push({
      kind: j.kind,
      status: j.status,
      ...(j.reason === null ? {} : { reason: j.reason }),
      ...(j.error === null ? {} : { error: j.error }),
      attempts: j.attempts,
      updated_at: iso(j.updated_at)!,
    });
    jobsByConv.set(j.conversation_id, list);
  }
  const deliveriesByConv = new Map<string, ExternalStorageDelivery[]>();
  for (const d of deliveries) {
    const list = deliveriesByConv.get(d.conversation_id) ?? [];
    list.push({
      artifact: d.artifact,
      status: d.status,
      bucket: d.bucket,
      key: d.object_key,
      bytes: d.bytes,
      ...(d.error === null ? {} : { error: d.error }),
      finished_at: iso(d.finished_at)!,
    });
    deliveriesByConv.set(d.conversation_id, list);
  }
  return rows.map((r) => {
    const record = recordOf(r, itemsByConv.get(r.id) ?? []);
    record.post_call = { jobs: jobsByConv.get(r.id) ?? [] };
    const stored = deliveriesByConv.get(r.id);
    if (stored) record.external_storage = { deliveries: stored };
    return { orgId: r.org_id, projectId: r.project_id, state: r.state, record, recording: recByConv.get(r.id) ?? null };
  });
}

/** Columns of a conversation row joined with what the record shows of its workspace, project and agent. */
function selectRows(sql: Sql) {
  return sql`select c.*, o.name as workspace_name, p.name as project_name,
      (c.agent_id is not null and not exists (select 1 from agents a where a.id = c.agent_id)) as agent_deleted
    from conversations c
    join organizations o on o.id = c.org_id
    join projects p on p.id = c.project_id`;
}

/** One conversation, or null. The caller checks `orgId` (403 for another organization). */
export async function getConversation(sql: Sql, conversationId: string): Promise<StoredConversation | null> {
  const rows = await sql<ConversationRow[]>`${selectRows(sql)} where c.id = ${conversationId}`;
  const [out] = await hydrate(sql, rows);
  return out ?? null;
}

export interface ListFilter {
  projectId: string;
  external_id?: string;
  duration_min?: number;
  duration_max?: number;
  started_at_min?: TimeBound;
  started_at_max?: TimeBound;
  /** A conversation id: the page just newer than it. */
  before?: string;
  /** A conversation id: the page just older than it. */
  after?: string;
  limit: number;
}

export type ListPage =
  | { kind: 'page'; conversations: StoredConversation[]; prev_cursor: string | null; next_cursor: string | null }
  | { kind: 'cursor_not_found'; cursor: string };

const MS_PER_SEC = 1000;

/**
 * A page of a project's conversations, newest first (started_at, else creation time; then id), with cursors:
 * `prev_cursor` (for `before`) when a newer page exists, `next_cursor` (for `after`) when an older one does.
 */
export async function listConversations(sql: Sql, f: ListFilter): Promise<ListPage> {
  const cursor = f.before ?? f.after;
  if (cursor !== undefined) {
    const [hit] = await sql`select 1 from conversations where id = ${cursor} and project_id = ${f.projectId}`;
    if (!hit) return { kind: 'cursor_not_found', cursor };
  }
  let where = sql`c.project_id = ${f.projectId}`;
  const and = (cond: ReturnType<Sql>) => {
    where = sql`${where} and ${cond}`;
  };
  if (f.external_id !== undefined) and(sql`c.external_id = ${f.external_id}`);
  if (f.duration_min !== undefined) and(sql`c.duration_ms >= ${f.duration_min * MS_PER_SEC}`);
  if (f.duration_max !== undefined) and(sql`c.duration_ms <= ${f.duration_max * MS_PER_SEC}`);
  // sort_at equals started_at wherever started_at is set: the repeated bound lets the (project, sort_at) index
  // serve the range.
  if (f.started_at_min) and(sql`c.started_at >= ${f.started_at_min.at} and c.sort_at >= ${f.started_at_min.at}`);
  if (f.started_at_max) {
    const at = f.started_at_max.at;
    and(
      f.started_at_max.exclusive
        ? sql`c.started_at < ${at} and c.sort_at < ${at}`
        : sql`c.started_at <= ${at} and c.sort_at <= ${at}`,
    );
  }
  const key = (id: string) => sql`(select k.sort_at, k.id from conversations k where k.id = ${id})`;
  const exists = async (cond: ReturnType<Sql>) =>
    (await sql`select 1 from conversations c where ${where} and ${cond} limit 1`).length > 0;

  let rows: ConversationRow[];
  let hasNewer: boolean;
  let hasOlder: boolean;
  if (f.before !== undefined) {
    rows = await sql<ConversationRow[]>`${selectRows(sql)} where ${where} and (c.sort_at, c.id) > ${key(f.before)}
      order by c.sort_at asc, c.id asc limit ${f.limit + 1}`;
    hasNewer = rows.length > f.limit;
    rows = rows.slice(0, f.limit).reverse();
    hasOlder = rows.length > 0 && (await exists(sql`(c.sort_at, c.id) < ${key(rows[rows.length - 1].id)}`));
  } else {
    rows = await sql<ConversationRow[]>`${selectRows(sql)} where ${where}
      ${f.after !== undefined ? sql`and (c.sort_at, c.id) < ${key(f.after)}` : sql``}
      order by c.sort_at desc, c.id desc limit ${f.limit + 1}`;
    hasOlder = rows.length > f.limit;
    rows = rows.slice(0, f.limit);
    hasNewer = f.after !== undefined && rows.length > 0 && (await exists(sql`(c.sort_at, c.id) > ${key(rows[0].id)}`));
  }
  return {
    kind: 'page',
    conversations: await hydrate(sql, rows),
    prev_cursor: hasNewer ? rows[0].id : null,
    next_cursor: hasOlder ? rows[rows.length - 1].id : null,
  };
}

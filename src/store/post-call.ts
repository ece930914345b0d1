// Post-call repository: what the post-call jobs (src/jobs/) read of an ended conversation and write back: the
// post-call transcript and its words, extractions, the evaluations' task_results, and the retention sweep that
// deletes transcripts and recordings once the conversation's data_retention_policy says so.
import type { Sql } from './db.js';
import { newId } from './ids.js';
import { itemsContentDropped, retainsNothing, transcriptsDropped } from './conversations.js';
import { JOB_KINDS } from './jobs.js';
import { transaction } from './transaction.js';
import type { EndedBy } from '../schemas/conversations.js';
import type { ExtractionSchema } from '../schemas/extraction-schemas.js';

type Json = Parameters<Sql['json']>[0];

/** An ended conversation as the post-call jobs read it. */
export interface PostCallConversation {
  id: string;
  orgId: string;
  projectId: string;
  state: 'created' | 'configuring' | 'ready' | 'active' | 'ended';
  endedAt: Date | null;
  endedBy: EndedBy | null;
  defaultLanguage: string;
  additionalLanguages: string[] | null;
  boostedKeywords: string[] | null;
  liveTranscript: string | null;
  postCallTranscript: string | null;
  /** Redacted (the `redact` job): the unredacted transcripts are gone, `redactedTranscript` is what is left. */
  isRedacted: boolean;
  redactedTranscript: string | null;
  /** Zero data retention: nothing said is kept. */
  retainsNothing: boolean;
  transcriptsDeletedAt: Date | null;
  audioRecordingsDeletedAt: Date | null;
  /** The agent's tasks as the conversation started with them. */
  tasks: { name: string; description: string }[];
  /** The node that ran it (PARLEY_NODE_ID; null: the unnamed node). */
  nodeId: string | null;
}

/** One conversation, or null. */
export async function postCallConversation(sql: Sql, conversationId: string): Promise<PostCallConversation | null> {
  const [r] = await sql<
    {
      id: string;
      org_id: string;
      project_id: string;
      state: PostCallConversation['state'];
      ended_at: Date | null;
      ended_by: EndedBy | null;
      default_language: string;
      additional_languages: string[] | null;
      boosted_keywords: string[] | null;
      live_transcript: string | null;
      post_call_transcript: string | null;
      is_redacted: boolean;
      redacted_transcript: string | null;
      retains_nothing: boolean;
      transcripts_deleted_at: Date | null;
      audio_recordings_deleted_at: Date | null;
      tasks: { name: string; description: string }[];
      node_id: string | null;
    }[]
  >`select id, org_id, project_id, state, ended_at, ended_by, default_language, additional_languages,
      boosted_keywords, live_transcript, post_call_transcript, is_redacted, redacted_transcript,
      ${retainsNothing(sql)} as retains_nothing,
      transcripts_deleted_at, audio_recordings_deleted_at, tasks, node_id
    from conversations where id = ${conversationId}`;
  if (!r) return null;
  return {
    id: r.id,
    orgId: r.org_id,
    projectId: r.project_id,
    state: r.state,
    endedAt: r.ended_at,
    endedBy: r.ended_by,
    defaultLanguage: r.default_language,
    additionalLanguages: r.additional_languages,
    boostedKeywords: r.boosted_keywords,
    liveTranscript: r.live_transcript,
    postCallTranscript: r.post_call_transcript,
    isRedacted: r.is_redacted,
    redactedTranscript: r.redacted_transcript,
    retainsNothing: r.retains_nothing,
    transcriptsDeletedAt: r.transcripts_deleted_at,
    audioRecordingsDeletedAt: r.audio_recordings_deleted_at,
    tasks: r.tasks,
    nodeId: r.node_id,
  };
}

/** An item's place in time (the post-call transcript splits the words by these). */
export interface ItemSpan {
  id: string;
  role: 'user' | 'assistant';
  started_at: Date;
  duration_ms: number;
}

/** The items of a conversation, in order. */
export async function itemSpans(sql: Sql, conversationId: string): Promise<ItemSpan[]> {
  return sql<ItemSpan[]>`select id, role, started_at, duration_ms from conversation_items
    where conversation_id = ${conversationId} order by item_idx`;
}

/** The stored recording of both sides (`side` both), with when its row was written (the end of its finish). */
export interface PostCallRecording {
  path: string;
  format: 'wav' | 'wav.gz';
  sample_rate: number;
  channels: number;
  created_at: Date;
}

export async function bothSidesRecording(sql: Sql, conversationId: string): Promise<PostCallRecording | null> {
  const [row] = await sql<PostCallRecording[]>`select path, format, sample_rate, channels, created_at
    from conversation_recordings where conversation_id = ${conversationId} and side = 'both'`;
  return row ?? null;
}

/** One word of the post-call transcript: its side, its time in ms from the start of the recording, its item. */
export interface PostCallWord {
  role: 'user' | 'assistant';
  word: string;
  start_ms: number;
  end_ms: number;
  item_id: string | null;
}

export interface PostCallTranscript {
  /** The record's transcript (null: nothing was heard). */
  text: string | null;
  /** Every item of the conversation with its text (null: nothing heard in its time). */
  items: { id: string; text: string | null }[];
  words: PostCallWord[];
}

/**
 * Stores a conversation's post-call transcript: on its record, on each of its items, and its words. One transaction
 * that first locks the conversation's row (as deleteConversationContent, the retention sweep and the redaction do),
 * so it never lands after the transcripts were deleted or redacted: `not_kept` when the conversation retains
 * nothing, its transcripts were deleted or it is redacted (nothing written), `not_found` when it is gone. A later
 * call replaces an earlier one.
 */
export async function savePostCallTranscript(
  sql: Sql,
  conversationId: string,
  t: PostCallTranscript,
): Promise<'saved' | 'not_kept' | 'not_found'> {
  return transaction(sql, async (tx) => {
    const [row] = await tx<{ keeps: boolean }[]>`select not ${retainsNothing(tx)} and transcripts_deleted_at is null
        and not is_redacted as keeps
      from conversations where id = ${conversationId} for update`;
    if (!row) return 'not_found' as const;
    if (!row.keeps) return 'not_kept' as const;
    await tx`update conversations set post_call_transcript = ${t.text} where id = ${conversationId}`;
    await tx`update conversation_items i set post_call_transcript = x.text
      from jsonb_to_recordset(${tx.json(t.items)}) as x(id text, text text)
      where i.id = x.id and i.conversation_id = ${conversationId}`;
    await tx`insert into conversation_post_call_words (conversation_id, words)
      values (${conversationId}, ${tx.json(t.words as unknown as Json)})
      on conflict (conversation_id) do update set words = excluded.words, created_at = now()`;
    return 'saved' as const;
  });
}

/** The post-call transcript's words of a conversation (null: none stored, or deleted). */
export async function postCallWords(sql: Sql, conversationId: string): Promise<PostCallWord[] | null> {
  const [row] = await sql<{ words: PostCallWord[] }[]>`select words from conversation_post_call_words
    where conversation_id = ${conversationId}`;
  return row?.words ?? null;
}

/** The extraction schemas of a project that are not deleted, oldest first. */
export async function liveExtractionSchemas(sql: Sql, projectId: string): Promise<ExtractionSchema[]> {
  return sql<ExtractionSchema[]>`select id, name, prompt, fields from extraction_schemas
    where project_id = ${projectId} and deleted_at is null order by created_at, id`;
}

/**
 * Stores what a schema extracted from a conversation, replacing that schema's earlier extraction of it (a rerun);
 * extractions of other schemas, deleted ones included, stay. Returns the new extraction's id.
 */
export async function replaceExtraction(
  sql: Sql,
  conversationId: string,
  e: { schemaId: string; schemaName: string; result: Record<string, unknown>; createdAt: Date },
): Promise<string> {
  const id = newId('conv_extract');
  await sql`with replaced as (
      delete from conversation_extractions where conversation_id = ${conversationId} and schema_id = ${e.schemaId}
    )
    insert into conversation_extractions (id, conversation_id, schema_id, schema_name, result, created_at)
    values (${id}, ${conversationId}, ${e.schemaId}, ${e.schemaName}, ${sql.json(e.result as Json)}, ${e.createdAt})`;
  return id;
}

/** The eval prompts of a project, oldest first. */
export async function projectEvalPrompts(
  sql: Sql,
  projectId: string,
): Promise<{ id: string; name: string; prompt: string }[]> {
  return sql<{ id: string; name: string; prompt: string }[]>`select id, name, prompt from eval_prompts
    where project_id = ${projectId} order by created_at, id`;
}

/** Adds results to a conversation's task_results (a key given replaces the one stored); false when it is gone. */
export async function mergeTaskResults(
  sql: Sql,
  conversationId: string,
  results: Record<string, unknown>,
): Promise<boolean> {
  const rows = await sql`update conversations set task_results = task_results || ${sql.json(results as Json)}
    where id = ${conversationId} returning 1`;
  return rows.length > 0;
}

// ---- retention ----

/** When a period of the policy (`transcripts` or `audio_recordings`) has passed for an ended conversation. */
function periodPassed(sql: Sql, artifact: 'transcripts' | 'audio_recordings', now: Date) {
  // Literal keys: the partial indexes of migration 20261127100100 serve only a predicate they can see.
  const hours =
    artifact === 'transcripts'
      ? sql`(data_retention_policy -> 'transcripts' ->> 'delete_after_hours')`
      : sql`(data_retention_policy -> 'audio_recordings' ->> 'delete_after_hours')`;
  // In numeric seconds: any number of hours the policy allows compares without an interval overflowing.
  return sql`ended_at is not null and ${hours} is not null
    and extract(epoch from ${now}::timestamptz) - extract(epoch from ended_at) >= ${hours}::numeric * 3600`;
}

/**
 * Deletes the transcripts of up to `batch` ended conversations whose `transcripts.delete_after_hours` have passed
 * since they ended (oldest end first): the record's and its items' transcripts, the post-call words and the tool
 * calls' bodies (the content deleteConversationContent drops), and sets `transcripts_deleted_at`. A conversation
 * whose row is locked (being finished or deleted) is left to the next sweep. Returns how many were swept; once
 * swept a conversation is never selected again. Zero data retention conversations keep nothing and are not swept.
 */
export async function sweepTranscripts(sql: Sql, now: Date, batch: number): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    with due as (
      select id from conversations
      where transcripts_deleted_at is null and ${periodPassed(sql, 'transcripts', now)}
      order by ended_at limit ${batch}
      for update skip locked
    ), swept as (
      update conversations c set ${transcriptsDropped(sql)}, transcripts_deleted_at = ${now}
      from due where c.id = due.id returning c.id
    ), ${itemsContentDropped(sql, 'swept')}
    select count(*)::int as n from swept`;
  return row.n;
}

/**
 * Deletes the recordings of up to `batch` ended conversations whose `audio_recordings.delete_after_hours` have
 * passed since they ended: their rows go and `audio_recordings_deleted_at` is set, and in the same statement a
 * `recording_files_removal` job per node is enqueued with the files' paths (pinned to the node that recorded them,
 * whose data directory holds them), so the files go even if this node stops right after. A conversation without a
 * recording is marked as well (its period has passed; a late finish then stores none). Returns the conversations
 * swept and the recording rows deleted.
 */
export async function sweepRecordings(
  sql: Sql,
  now: Date,
  batch: number,
): Promise<{ conversations: number; recordings: number }> {
  const [row] = await sql<{ conversations: number; recordings: number }[]>`
    with due as (
      select id, node_id from conversations
      where audio_recordings_deleted_at is null and ${periodPassed(sql, 'audio_recordings', now)}
      order by ended_at limit ${batch}
      for update skip locked
    ), swept as (
      update conversations c set audio_recordings_deleted_at = ${now} from due where c.id = due.id returning c.id
    ), gone as (
      delete from conversation_recordings r using due where r.conversation_id = due.id returning r.path, due.node_id
    ), removal as (
      insert into jobs (kind, payload, node_id, run_at)
      select ${JOB_KINDS.recordingFilesRemoval}, jsonb_build_object('paths', jsonb_agg(path order by path)), node_id, ${now}
      from gone group by node_id
    )
    select (select count(*) from swept)::int as conversations, (select count(*) from gone)::int as recordings`;
  return row;
}

// Redaction's reads and writes: what a finished conversation holds to redact (its turns, the post-call transcript's
// word timings when it stored them, its recording), and the redacted result written in one transaction.
import type { Sql } from './db.js';
import { postCallWords, type PostCallWord } from './post-call.js';
import { transaction } from './transaction.js';

export interface RedactionItemRow {
  id: string;
  role: 'user' | 'assistant';
  live_transcript: string | null;
  post_call_transcript: string | null;
  started_at: Date;
  duration_ms: number;
}

export interface RedactionRecordingRow {
  path: string;
  format: 'wav' | 'wav.gz';
  compress_to: 'wav.gz' | null;
  sample_rate: number;
  channels: number;
}

export interface RedactionSource {
  id: string;
  state: string;
  enable_redaction: boolean;
  is_redacted: boolean;
  retains_nothing: boolean;
  transcripts_deleted: boolean;
  audio_deleted: boolean;
  started_at: Date | null;
  ended_at: Date | null;
  created_at: Date;
  items: RedactionItemRow[];
  /** The post-call transcript's words (ms from the recording's start, each with its item), or null: none stored. */
  words: PostCallWord[] | null;
  /** The stereo recording (`both`), when there is one. */
  recording: RedactionRecordingRow | null;
}

export async function loadRedactionSource(sql: Sql, conversationId: string): Promise<RedactionSource | null> {
  const [c] = await sql<Omit<RedactionSource, 'items' | 'words' | 'recording'>[]>`
    select id, state, enable_redaction, is_redacted,
      coalesce((data_retention_policy ->> 'zero_data_retention')::boolean, false) as retains_nothing,
      transcripts_deleted_at is not null as transcripts_deleted,
      audio_recordings_deleted_at is not null as audio_deleted,
      started_at, ended_at, created_at
    from conversations where id = ${conversationId}`;
  if (!c) return null;
  const items = await sql<RedactionItemRow[]>`
    select i.id, i.role, i.live_transcript, i.post_call_transcript, i.started_at, i.duration_ms
    from conversation_items i where i.conversation_id = ${conversationId} order by i.item_idx`;
  const words = await postCallWords(sql, conversationId);
  const [recording] = await sql<RedactionRecordingRow[]>`
    select path, format, compress_to, sample_rate, channels from conversation_recordings
    where conversation_id = ${conversationId} and side = 'both'`;
  return { ...c, items: [...items], words, recording: recording ?? null };
}

export interface RedactionResult {
  conversationId: string;
  redactedTranscript: string | null;
  items: { id: string; redacted_transcript: string | null }[];
  /** The bleeped recording replacing the one at `from` (compare-and-set on the row's path). */
  recording?: { from: string; to: string; format: 'wav' | 'wav.gz'; bytes: number };
}

/**
 * `saved`; `recording_moved` when the recording row no longer points at `from` (compressed or replaced meanwhile:
 * nothing was written); `not_kept` when the conversation is gone, retains nothing, or had its transcripts deleted
 * meanwhile (nothing was written).
 */
export type RedactionSaveOutcome = 'saved' | 'recording_moved' | 'not_kept';

/**
 * Writes a redaction in one transaction: the record's and items' redacted transcripts, `is_redacted`, the
 * unredacted transcripts dropped (items' `live_transcript` is null once redacted, and the others go with it, the
 * post-call transcript's words too), and the recording row moved to the bleeped file.
 */
export async function saveRedaction(sql: Sql, r: RedactionResult): Promise<RedactionSaveOutcome> {
  try {
    return await writeRedaction(sql, r);
  } catch (err) {
    if (err instanceof RecordingMoved) return 'recording_moved';
    throw err;
  }
}

/** Rolls the redaction's transaction back: the recording row moved on. */
class RecordingMoved extends Error {}

function writeRedaction(sql: Sql, r: RedactionResult): Promise<RedactionSaveOutcome> {
  return transaction(sql, async (tx): Promise<RedactionSaveOutcome> => {
    const [c] = await tx<{ keeps: boolean }[]>`
      select not coalesce((data_retention_policy ->> 'zero_data_retention')::boolean, false) and transcripts_deleted_at is null as keeps
      from conversations where id = ${r.conversationId} for update`;
    if (!c || !c.keeps) return 'not_kept';
    if (r.recording) {
      const moved =
        await tx`update conversation_recordings set path = ${r.recording.to}, format = ${r.recording.format},
          bytes = ${r.recording.bytes}, compress_to = null
        where conversation_id = ${r.conversationId} and side = 'both' and path = ${r.recording.from} returning 1`;
      if (moved.length === 0) throw new RecordingMoved();
    }
    await tx`update conversations set redacted_transcript = ${r.redactedTranscript}, is_redacted = true,
        live_transcript = null, post_call_transcript = null
      where id = ${r.conversationId}`;
    // The post-call transcript's words are unredacted text too (src/store/post-call.ts).
    await tx`delete from conversation_post_call_words where conversation_id = ${r.conversationId}`;
    if (r.items.length > 0) {
      await tx`
        update conversation_items i set redacted_transcript = x.redacted_transcript, live_transcript = null, post_call_transcript = null
        from jsonb_to_recordset(${tx.json(r.items)}) as x(id text, redacted_transcript text)
        where i.id = x.id and i.conversation_id = ${r.conversationId}`;
    }
    return 'saved';
  });
}

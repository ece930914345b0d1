// The `redact` job: after a conversation with `enable_redaction` ends (and after its post-call transcript, whose word
// timings place the bleeps, and the extraction and evaluations, which read the unredacted text it drops: src/store/
// jobs.ts POST_CALL_JOBS), its turns are redacted, the record's and items' `redacted_transcript` filled and
// `is_redacted` set, the unredacted transcripts dropped (items' `live_transcript` is null once redacted), and the
// recording bleeped. The bleeped recording is written as a new file and the row moved to it compare-and-set, so a
// compression or a deletion racing with it never leaves audio unbleeped; the old file is removed after.
import { createReadStream, createWriteStream } from 'node:fs';
import { rename, stat, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import { z } from 'zod';
import { chatClientFromSettings, type ChatClient } from '../../engines/chat-client.js';
import { recordingPath } from '../../media/recording.js';
import type { Sql } from '../../store/db.js';
import { JOB_KINDS } from '../../store/jobs.js';
import type { PostCallWord } from '../../store/post-call.js';
import {
  loadRedactionSource,
  saveRedaction,
  type RedactionResult,
  type RedactionSaveOutcome,
  type RedactionSource,
} from '../../store/redaction.js';
import type { JobContext, JobHandler, JobOutcome } from '../handler.js';
import { parseWavHeader, WavBleepTransform, type WavLayout } from './bleep.js';
import { redactTurns, type TurnInput } from './redact.js';
import type { AudioSpan, WordTiming } from './timing.js';

export const REDACTION_KIND = JOB_KINDS.redact;
/** Bytes read to find a recording's WAV header. */
const HEADER_PEEK_BYTES = 4096;

/** What the job reads and writes (src/store/redaction.ts on the database). */
export interface RedactionStore {
  load(conversationId: string): Promise<RedactionSource | null>;
  save(result: RedactionResult): Promise<RedactionSaveOutcome>;
}

export function sqlRedactionStore(sql: Sql): RedactionStore {
  return { load: (id) => loadRedactionSource(sql, id), save: (r) => saveRedaction(sql, r) };
}

const payloadSchema = z.object({ conversation_id: z.string().min(1) });
export type RedactionPayload = z.infer<typeof payloadSchema>;

/** The post-call transcript's words of each item, as redaction times them (seconds from the recording's start). */
function wordsByItem(words: readonly PostCallWord[] | null): Map<string, WordTiming[]> {
  const out = new Map<string, WordTiming[]>();
  for (const w of words ?? []) {
    if (w.item_id === null) continue;
    const list = out.get(w.item_id) ?? [];
    list.push({ text: w.word, start: w.start_ms / 1000, end: w.end_ms / 1000 });
    out.set(w.item_id, list);
  }
  return out;
}

export interface RedactionHandlerOptions {
  /** The store of a job's database (default: src/store/redaction.ts). */
  store?: (sql: Sql) => RedactionStore;
  /** The chat model (default: the node's PARLEY_LLM_* settings, or none). */
  chat?: (ctx: JobContext) => ChatClient | null;
}

/**
 * When the recording started, in ms since the epoch. It runs on the call's clock up to the end, so it started its
 * own length before the conversation ended (it opens after the configuration endpoint and the engine, well after
 * `started_at`). Without a recording: when the conversation started.
 */
async function recordingOrigin(src: RedactionSource, file: string | null): Promise<number> {
  const fallback = (src.started_at ?? src.items[0]?.started_at ?? src.created_at).getTime();
  if (!file || !src.recording || !src.ended_at) return fallback;
  const layout = await wavLayout(file, src.recording.format);
  if (!layout) return fallback;
  return src.ended_at.getTime() - (layout.dataBytes / (layout.channels * 2) / layout.sampleRate) * 1000;
}

/** The WAV header of a `.wav` or `.wav.gz` (the first bytes only), or null when it cannot be read. */
async function wavLayout(file: string, format: 'wav' | 'wav.gz'): Promise<WavLayout | null> {
  const head: Buffer[] = [];
  let size = 0;
  const source = createReadStream(file, format === 'wav' ? { end: HEADER_PEEK_BYTES - 1 } : {});
  const stream = format === 'wav.gz' ? source.pipe(createGunzip()) : source;
  try {
    for await (const chunk of stream) {
      head.push(chunk as Buffer);
      size += (chunk as Buffer).length;
      if (size >= HEADER_PEEK_BYTES) break;
    }
  } finally {
    source.destroy();
  }
  const fileBytes = format === 'wav' ? (await stat(file)).size : Infinity;
  return parseWavHeader(Buffer.concat(head), fileBytes);
}

function turns(src: RedactionSource, origin: number): TurnInput[] {
  const words = wordsByItem(src.words);
  return src.items.map((i) => ({
    role: i.role,
    // The post-call transcript when there is one (the word timings are its words, in order), else the live one.
    text: i.post_call_transcript ?? i.live_transcript,
    startMs: i.started_at.getTime() - origin,
    durationMs: i.duration_ms,
    words: i.post_call_transcript !== null ? (words.get(i.id) ?? null) : null,
  }));
}

/** Writes the recording at `from` bleeped into `to` (a `.wav` or `.wav.gz`, as `toFormat` says); returns its size. */
async function bleepInto(
  from: string,
  fromFormat: 'wav' | 'wav.gz',
  to: string,
  toFormat: 'wav' | 'wav.gz',
  spans: AudioSpan[],
  signal: AbortSignal,
): Promise<number> {
  const tmp = `${to}.tmp`;
  const stages: NodeJS.ReadWriteStream[] = [];
  if (fromFormat === 'wav.gz') stages.push(createGunzip());
  stages.push(new WavBleepTransform(spans));
  if (toFormat === 'wav.gz') stages.push(createGzip());
  try {
    await pipeline([createReadStream(from), ...stages, createWriteStream(tmp)], { signal });
    await rename(tmp, to);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  return (await stat(to)).size;
}

export function redactionHandler(opts: RedactionHandlerOptions = {}): JobHandler<RedactionPayload> {
  const storeOf = opts.store ?? sqlRedactionStore;
  const chatOf = opts.chat ?? ((ctx: JobContext) => chatClientFromSettings(ctx.settings, ctx.log, ctx.modelFetch));
  return {
    kind: REDACTION_KIND,
    parse: (payload) => payloadSchema.parse(payload),
    async run({ conversation_id: id }, ctx): Promise<JobOutcome> {
      const store = storeOf(ctx.sql);
      const src = await store.load(id);
      if (!src) return { status: 'skipped', reason: 'the conversation does not exist' };
      if (!src.enable_redaction) return { status: 'skipped', reason: 'redaction is not enabled for this conversation' };
      if (src.retains_nothing) return { status: 'skipped', reason: 'zero data retention: nothing is stored to redact' };
      if (src.is_redacted) return { status: 'skipped', reason: 'the conversation is redacted already' };
      if (src.transcripts_deleted) return { status: 'skipped', reason: "the conversation's content was deleted" };
      // A job that runs before the end (it should not be enqueued then) is retried later.
      if (src.state !== 'ended') throw new Error(`conversation ${id} has not ended yet`);

      const rec = src.recording;
      const oldFile = rec && !src.audio_deleted ? recordingPath(ctx.settings.PARLEY_DATA_DIR, rec.path) : null;
      const input = turns(src, await recordingOrigin(src, oldFile));
      const result = await redactTurns(input, { chat: chatOf(ctx), signal: ctx.signal });
      const audio = result.turns.flatMap((t) => t.audio);
      const byTag: Record<string, number> = {};
      for (const t of result.turns) for (const s of t.spans) byTag[s.tag] = (byTag[s.tag] ?? 0) + 1;

      // The recording, bleeped into a new file beside it.
      let recording: RedactionResult['recording'];
      let newFile: string | null = null;
      if (rec && oldFile && audio.length > 0) {
        const dataDir = ctx.settings.PARLEY_DATA_DIR;
        const format = rec.compress_to ?? rec.format;
        const to = join(dirname(rec.path), `${id}.redacted.${format}`);
        newFile = recordingPath(dataDir, to);
        const bytes = await bleepInto(oldFile, rec.format, newFile, format, audio, ctx.signal);
        recording = { from: rec.path, to, format, bytes };
      }

      const redactedTranscript = input
        .map((t, i) => (result.turns[i].redacted ? `${t.role}: ${result.turns[i].redacted}` : null))
        .filter((l): l is string => l !== null)
        .join('\n');
      const outcome = await store.save({
        conversationId: id,
        redactedTranscript: redactedTranscript || null,
        items: src.items.map((item, i) => ({ id: item.id, redacted_transcript: result.turns[i].redacted })),
        recording,
      });
      if (outcome !== 'saved') {
        if (newFile)
          await unlink(newFile).catch((err: unknown) =>
            ctx.log.error({ err, path: newFile }, 'removing an unused bleeped recording failed'),
          );
        if (outcome === 'recording_moved')
          throw new Error(`the recording of ${id} changed while it was bleeped; redacting again`);
        return { status: 'skipped', reason: 'the conversation is gone or retains nothing any more' };
      }
      if (oldFile && newFile && oldFile !== newFile) {
        await unlink(oldFile).catch((err: unknown) =>
          ctx.log.error({ err, path: oldFile }, 'removing the unbleeped recording failed: it stays on disk'),
        );
      }
      return {
        status: 'done',
        detail: {
          spans: byTag,
          audio_spans: recording ? audio.length : 0,
          word_timings: input.some((t) => t.words) ? 'used' : 'none: whole turns bleeped',
          model: result.model,
        },
      };
    },
  };
}

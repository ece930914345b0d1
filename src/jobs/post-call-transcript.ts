// The `post_call_transcript` job: a second pass of speech-to-text (PARLEY_STT_BASE_URL) over each side of the
// conversation's recording, with word timestamps. The words go to the items whose time spans hold them (each
// item's `post_call_transcript`), the record gets a line per turn (`post_call_transcript`), and the words with
// their times are kept for redaction (src/store/post-call.ts postCallWords). Runs on the node that recorded the
// conversation (the file is in its data directory; src/store/jobs.ts pins it).
import { open, type FileHandle } from 'node:fs/promises';
import type { Settings } from '../config.js';
import { transcribeWords, type SpeechEndpoint } from '../engines/speech-http.js';
import { recordingPath } from '../media/recording.js';
import { JOB_KINDS } from '../store/jobs.js';
import {
  bothSidesRecording,
  itemSpans,
  postCallConversation,
  savePostCallTranscript,
  type PostCallRecording,
  type PostCallWord,
} from '../store/post-call.js';
import type { JobContext, JobHandler, JobOutcome } from './handler.js';
import { conversationJobPayload, type ConversationJobPayload } from './payload.js';
import { peak, recordingBytes, stereoWindows } from './stereo-recording.js';
import { assignWords, itemsOnTimeline, itemTexts, transcriptText } from './words.js';

/** Audio per transcription request (one side of a window): within what hosted services accept, and bounded memory. */
export const UPLOAD_BYTES_PER_REQUEST = 8 * 1024 * 1024;
const BYTES_PER_SAMPLE = 2;
/** A side's window whose samples all stay below this (about -50 dBFS) is silence, not sent: models invent words in it. */
export const SILENCE_PEAK = 100;
/** Times a recording is looked up when its file vanished between reading its row and opening it. */
const OPEN_ATTEMPTS = 2;

export const NO_STT_MODEL = 'no speech-to-text model is configured (PARLEY_STT_BASE_URL)';

function sttEndpoint(settings: Settings, fetchImpl: typeof fetch): SpeechEndpoint | null {
  if (!settings.PARLEY_STT_BASE_URL) return null;
  return {
    baseUrl: settings.PARLEY_STT_BASE_URL,
    model: settings.PARLEY_STT_MODEL,
    apiKey: settings.PARLEY_STT_API_KEY,
    timeoutMs: settings.PARLEY_POST_CALL_STT_TIMEOUT_MS,
    fetch: fetchImpl,
  };
}

/**
 * The conversation's recording, opened. The background compressor moves a row from its `.wav` to the `.wav.gz` and
 * then removes the `.wav` (src/media/recording-compressor.ts): a `.wav` missing right after its row was read means
 * the row moved, and it is read again. An open file stays readable after its removal.
 */
async function openRecording(
  ctx: JobContext,
  conversationId: string,
): Promise<{ row: PostCallRecording; file: FileHandle } | null> {
  for (let attempt = 1; attempt <= OPEN_ATTEMPTS; attempt++) {
    const row = await bothSidesRecording(ctx.sql, conversationId);
    if (!row) return null;
    try {
      return { row, file: await open(recordingPath(ctx.settings.PARLEY_DATA_DIR, row.path), 'r') };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return null;
}

async function transcribeConversation(payload: ConversationJobPayload, ctx: JobContext): Promise<JobOutcome> {
  const id = payload.conversation_id;
  const stt = sttEndpoint(ctx.settings, ctx.modelFetch);
  if (!stt) return { status: 'skipped', reason: NO_STT_MODEL };
  const conv = await postCallConversation(ctx.sql, id);
  if (!conv) return { status: 'skipped', reason: 'the conversation no longer exists' };
  if (conv.retainsNothing) return { status: 'skipped', reason: 'no recording: zero data retention' };
  if (conv.audioRecordingsDeletedAt) return { status: 'skipped', reason: 'no recording: the audio was deleted' };
  if (conv.transcriptsDeletedAt) return { status: 'skipped', reason: 'the transcripts were deleted' };
  if (conv.isRedacted)
    return { status: 'skipped', reason: 'the conversation is redacted: its transcripts are not rewritten' };
  const opened = await openRecording(ctx, id);
  if (!opened) return { status: 'skipped', reason: 'no recording: none was made' };
  const { row, file } = opened;

  // One language named only when the conversation has one (the model detects it otherwise).
  const language = conv.additionalLanguages && conv.additionalLanguages.length > 0 ? undefined : conv.defaultLanguage;
  const prompt = conv.boostedKeywords && conv.boostedKeywords.length > 0 ? conv.boostedKeywords.join(', ') : undefined;
  const words: Omit<PostCallWord, 'item_id'>[] = [];
  let samples = 0;
  let rate = row.sample_rate;
  let requests = 0;
  try {
    const source = recordingBytes(file.createReadStream({ autoClose: false }), row.format);
    for await (const w of stereoWindows(source, Math.floor(UPLOAD_BYTES_PER_REQUEST / BYTES_PER_SAMPLE))) {
      rate = w.sampleRate;
      samples = w.start + w.user.length;
      const offsetMs = (w.start / w.sampleRate) * 1000;
      for (const [role, pcm] of [
        ['user', w.user],
        ['assistant', w.assistant],
      ] as const) {
        if (peak(pcm) < SILENCE_PEAK) continue;
        requests++;
        const heard = await transcribeWords(stt, pcm, w.sampleRate, { language, prompt, signal: ctx.signal });
        for (const word of heard.words) {
          words.push({
            role,
            word: word.word,
            start_ms: Math.round(offsetMs + word.start * 1000),
            end_ms: Math.round(offsetMs + word.end * 1000),
          });
        }
      }
    }
  } finally {
    await file.close();
  }

  // The recording runs until the live side's finish. That is `ended_at`, except after a cancel through the API,
  // which ends the record before the live side hears of it: then the recording row's time (written by that finish).
  const endMs = (conv.endedBy === 'user_canceled' || !conv.endedAt ? row.created_at : conv.endedAt).getTime();
  const durationMs = (samples / rate) * 1000;
  const items = await itemSpans(ctx.sql, id);
  const assigned = assignWords(words, itemsOnTimeline(items, endMs - durationMs));
  const saved = await savePostCallTranscript(ctx.sql, id, {
    text: transcriptText(assigned),
    items: itemTexts(assigned, items),
    words: assigned,
  });
  if (saved === 'not_found') return { status: 'skipped', reason: 'the conversation no longer exists' };
  if (saved === 'not_kept')
    return {
      status: 'skipped',
      reason: 'the transcripts were deleted or redacted while the recording was transcribed',
    };
  return { status: 'done', detail: { words: assigned.length, requests, duration_ms: Math.round(durationMs) } };
}

export function postCallTranscriptHandler(): JobHandler<ConversationJobPayload> {
  return {
    kind: JOB_KINDS.postCallTranscript,
    parse: (p) => conversationJobPayload.parse(p),
    run: transcribeConversation,
  };
}

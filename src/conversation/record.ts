// The record a live conversation leaves behind: its items in order, the live transcript, analysis.latencies_ms and
// interruptions_count, and the stereo recording. Store writes run one after another, so items land in the order they
// happened. A user item is held until its final transcript is known (the reply, or the next turn, flushes it). Under
// zero data retention (data_retention_policy `{zero_data_retention: true}`) no recording is made and no transcript or
// tool call body is stored: the items keep only roles, times and durations. A conversation can become zero data
// retention mid-call (a transfer to such an agent): the recording made so far is thrown away at once, file and all,
// and the stored conversation is marked so, which makes the store drop the content it already holds (items'
// transcripts and tool call bodies) and refuse any more at the finish (src/store/conversations.ts
// finishConversation). Retaining nothing is for the rest of the conversation: a later transfer to an agent that
// retains does not bring it back.
// The record is finished as soon as the recording's WAV is closed, pointing at that `.wav` (playable, and served as
// either container); a recording wanted as `wav.gz` is then handed to the worker's compressor, which moves the row
// to the `.wav.gz` when it is done (src/media/recording-compressor.ts). The record never waits for a gzip. A
// recording the store refuses to store (deleted meanwhile, not retained) has its file removed once the store said so.
// An agent with an external storage policy (docs/external-storage.md) has its conversation's artifacts delivered
// instead of kept: the policy requires zero data retention, so the record retains nothing (made so at the start if
// an override had turned it off), the recording streams to the delivery's sink rather than a file, and the record
// keeps the content it appends in memory (the store drops it) for the record JSON delivered at the end, after the
// store's finish.
// The finish is never abandoned: a finish the store refused for what it holds (a value the database cannot store)
// is made again without the transcript, and one that failed otherwise (the database unavailable past main's hold)
// is tried again in the background with a bounded backoff until it lands (while the worker lives: after a crash,
// start-up recovery ends the record, src/domain/recovery.ts). Items carry ids given here, so an append made again
// is never stored twice; one refused for its text is stored without it.
import { mkdir, unlink } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { EndedBy, RtpAnalysis } from '../schemas/conversations.js';
import { RECORDINGS_DIR, StereoRecorder, StreamedRecorder, type RecordingFormat } from '../media/recording.js';
import type { RecordingCompressor } from '../media/recording-compressor.js';
import type { Logger } from '../log.js';
import type { Finish, FinishOutcome, NewItem, NewRecording } from '../store/conversations.js';
import { newId } from '../store/ids.js';
import { storeUnavailable, type ArtifactDelivery, type ConversationStore, type ExternalStorage } from './host.js';
import type { Utterance } from './utterance.js';

const RECORDING_FORMAT: RecordingFormat = 'wav.gz';
/** The data_retention_policy that retains nothing: no recording, no transcript, no tool call bodies. */
const ZERO_DATA_RETENTION = { zero_data_retention: true } as const;

/** The backoff of a finish tried again in the background: doubled from min_ms per failure, up to max_ms. */
export const FINISH_RETRY = { min_ms: 1_000, max_ms: 30_000 } as const;

export interface RecordOptions {
  /** Compresses `wav.gz` recordings after the record is finished; without one they stay `.wav`. */
  compressor?: RecordingCompressor;
  /** The stored format wanted (RECORDING_FORMAT by default); `wav` is never compressed. */
  format?: RecordingFormat;
  /** Delivery to an agent's external storage policy (without it a policy is ignored). */
  externalStorage?: ExternalStorage;
  /** FINISH_RETRY by default (tests shorten it). */
  finishRetry?: { min_ms: number; max_ms: number };
}

/** An item without what was said (a value in it could not be stored). */
function withoutContent(item: NewItem): NewItem {
  return {
    ...item,
    live_transcript: null,
    post_call_transcript: null,
    redacted_transcript: null,
    tool_calls: item.tool_calls?.map((c) => ({ ...c, request_body: null, response_body: null })),
  };
}

/** How the assistant sounded while an utterance played (stored on its item). */
export interface AssistantVoice {
  voice_id: string;
  audio_speed: number;
}

export class ConversationRecord {
  readonly latencies: number[] = [];
  interruptions = 0;
  private id: string | null = null;
  private readonly transcript: string[] = [];
  private pendingUserItem: NewItem | null = null;
  private writes: Promise<unknown> = Promise.resolve();
  private recorder: StereoRecorder | StreamedRecorder | null = null;
  private recordingsDir = '';
  private retainNothing = false;
  /** The external storage delivery, from the start when the agent names a policy. */
  private delivery: ArtifactDelivery | null = null;
  /** A delivered conversation's items as appended, content included, for the record JSON. */
  private readonly delivered: NewItem[] = [];
  /** The recording being thrown away (keepNothing mid-call); the finish waits for it. */
  private discarding: Promise<void> = Promise.resolve();
  /** finish() has begun: a recording opened after this is thrown away, not left without a record. */
  private finishing = false;
  /** A finish being tried again in the background (null: none); tests await it. */
  retrying: Promise<void> | null = null;

  constructor(
    private readonly store: ConversationStore,
    private readonly log: Logger,
    private readonly opts: RecordOptions = {},
  ) {}

  /** The stored conversation this record writes to (after `createConversation`). */
  bind(conversationId: string): void {
    this.id = conversationId;
  }

  /**
   * Zero data retention, for the rest of the conversation: nothing said is stored from now on, a recording made
   * so far stops at once and its file is removed, and the stored conversation is marked as retaining nothing (after
   * the writes queued before it), so the store drops what it holds of its content and refuses more. Once only.
   */
  keepNothing(): void {
    if (this.retainNothing) return;
    this.retainNothing = true;
    const recorder = this.recorder;
    this.recorder = null;
    if (recorder instanceof StereoRecorder) this.discarding = this.discardRecording(recorder);
    const id = this.id;
    if (!id) return;
    // `updated: false` means the conversation has ended meanwhile (canceled): its finish still retains nothing, as
    // this record hands it no content, and the store marks it then.
    this.write(() => this.store.updateConversation(id, { settings: { data_retention_policy: ZERO_DATA_RETENTION } }));
  }

  /**
   * Opens the stereo recording (user left, assistant right), unless nothing is retained; or, when the agent names
   * an external storage policy (`policyName`) and the host delivers, starts its delivery, the recording streaming
   * to it. The delivery is decided here, once: a later transfer neither starts nor stops one.
   */
  async openRecording(dataDir: string, sampleRate: number, policyName: string | null = null): Promise<void> {
    if (!this.id) return;
    const storage = this.opts.externalStorage;
    if (policyName && storage) return this.startDelivery(storage, policyName, sampleRate);
    if (this.retainNothing) return;
    const dir = join(dataDir, RECORDINGS_DIR);
    await mkdir(dir, { recursive: true });
    const format = this.opts.format ?? RECORDING_FORMAT;
    const recorder = await StereoRecorder.open(join(dir, `${this.id}.${format}`), { sampleRate, format });
    this.recordingsDir = dir;
    // Zero data retention came while the file was being created, or the conversation ended meanwhile: not kept.
    if (this.retainNothing || this.finishing) return void (this.discarding = this.discardRecording(recorder));
    this.recorder = recorder;
  }

  private async startDelivery(storage: ExternalStorage, policyName: string, sampleRate: number): Promise<void> {
    if (!this.retainNothing) {
      this.log.warn(
        { conversationId: this.id, policy: policyName },
        'external storage requires zero data retention: the conversation retains nothing',
      );
      this.keepNothing();
    }
    this.delivery = await storage.start(this.id!, policyName, sampleRate);
    if (this.delivery.recording) this.recorder = new StreamedRecorder(this.delivery.recording, sampleRate);
  }

  /** Stops a recording for good and removes its file (zero data retention from now on); a failure is logged. */
  private async discardRecording(recorder: StereoRecorder): Promise<void> {
    const path = recorder.wavPath;
    try {
      await recorder.abort();
      this.log.info(
        { conversationId: this.id, path },
        'zero data retention from now on: the recording stopped and its file removed',
      );
    } catch (err) {
      this.log.error(
        { err, conversationId: this.id, path },
        'throwing away the recording of a zero data retention conversation failed: its file may stay on disk',
      );
    }
  }

  recordUser(pcm: Int16Array): void {
    this.recorder?.writeUser(pcm);
  }

  recordAssistant(pcm: Int16Array): void {
    this.recorder?.writeAssistant(pcm);
  }

  /** Pacing clock: the recording advances one frame (silence where a side said nothing). */
  tick(): void {
    this.recorder?.tick();
  }

  countInterruption(): void {
    this.interruptions++;
  }

  addLatency(ms: number): void {
    this.latencies.push(ms);
  }

  /** A finished user turn: held until its final transcript is known. */
  holdUserItem(item: NewItem): void {
    this.pendingUserItem = item;
  }

  /** The engine's final transcript of the held user turn. */
  finalUserTranscript(text: string): void {
    if (this.pendingUserItem) this.pendingUserItem.live_transcript = text;
  }

  flushUserItem(): void {
    const item = this.pendingUserItem;
    if (!item) return;
    this.pendingUserItem = null;
    if (item.live_transcript) this.transcript.push(`user: ${item.live_transcript}`);
    if (!this.id) return;
    this.keepForDelivery(item);
    const id = this.id;
    const kept = {
      ...(this.retainNothing ? { ...item, live_transcript: null } : item),
      id: item.id ?? newId('conv_item'),
    };
    this.write(() => this.appendItem(id, kept));
  }

  /** Appends one item; refused for what it says (a value the database cannot store), it is stored without it. */
  private async appendItem(conversationId: string, item: NewItem): Promise<void> {
    try {
      await this.store.appendItems(conversationId, [item]);
    } catch (err) {
      if (storeUnavailable(err)) throw err;
      this.log.error({ err, conversationId }, 'an item was refused for what it holds: stored without its text');
      await this.store.appendItems(conversationId, [withoutContent(item)]);
    }
  }

  /** A delivered conversation keeps its item in memory, under ids it gives the item and its tool calls. */
  private keepForDelivery(item: NewItem): void {
    if (!this.delivery) return;
    item.id ??= newId('conv_item');
    for (const c of item.tool_calls ?? []) c.id ??= newId('tool_call');
    this.delivered.push(item);
  }

  /** An utterance stopped (played out, interrupted or silenced): its item, once its tool calls have settled. */
  appendAssistantItem(u: Utterance, voice: AssistantVoice, sampleRate: number, nowMs: number): void {
    // The user turn it answers comes first, in the items and in the transcript.
    this.flushUserItem();
    const text = u.playedText;
    if (text) this.transcript.push(`assistant: ${text}`);
    const itemId = newId('conv_item');
    const item = (): NewItem | null => {
      // Its calls ran after a line spoken for them, and are recorded there: nothing of its own to keep.
      if (u.callsAfterLine && !text && u.toolCalls.length === 0) return null;
      const full: NewItem = {
        id: itemId,
        role: 'assistant',
        live_transcript: text || null,
        duration_ms: (u.playedSamples * 1000) / sampleRate,
        started_at: new Date(u.firstFrameAtMs ?? u.startedAtMs ?? nowMs),
        voice_id: voice.voice_id,
        audio_speed: voice.audio_speed,
        tool_calls: u.toolCalls,
      };
      this.keepForDelivery(full);
      if (!this.retainNothing) return full;
      return {
        ...full,
        live_transcript: null,
        tool_calls: u.toolCalls.map((c) => ({ ...c, request_body: null, response_body: null })),
      };
    };
    const id = this.id;
    if (!id) return;
    this.writes = this.writes
      .then(() => Promise.all([...u.pendingTools]))
      .then(() => {
        const made = item();
        return made && this.appendItem(id, made);
      })
      .catch((err: unknown) => this.log.error({ err, conversationId: id }, 'appending an item failed'));
  }

  /** Another store write, after those already queued; failures are logged. */
  write(fn: () => Promise<unknown>): void {
    this.writes = this.writes
      .then(fn)
      .catch((err: unknown) => this.log.error({ err, conversationId: this.id }, 'store write failed'));
  }

  /**
   * Waits for queued writes, closes the recording and stores how the conversation ended, the recording as the
   * `.wav` on disk; then, for `wav.gz`, queues its compression whenever the recording row was stored (also when the
   * conversation had been canceled meanwhile: the store fills the canceled record in). The record does not wait for
   * the gzip. A recording the store refused has its file removed; when the store did not answer, the file stays.
   * `rtp`: a phone call's RTP statistics, stored as the record's analysis.rtp.
   */
  async finish(endedBy: EndedBy, startedAtMs: number, nowMs: number, rtp: RtpAnalysis | null = null): Promise<void> {
    this.finishing = true;
    await this.writes;
    await this.discarding;
    const recordings: NewRecording[] = [];
    let compress = false;
    const recorder = this.recorder;
    this.recorder = null;
    if (recorder instanceof StreamedRecorder) {
      const r = recorder.finish();
      if (r.droppedMs > 0) {
        this.log.warn(
          { conversationId: this.id, droppedMs: r.droppedMs },
          "recording: audio that ran too far ahead of the call's clock was left out",
        );
      }
    } else if (recorder) {
      try {
        const r = await recorder.finish();
        if (r.droppedMs > 0) {
          this.log.warn(
            { conversationId: this.id, droppedMs: r.droppedMs },
            "recording: audio that ran too far ahead of the call's clock was left out",
          );
        }
        if (r.incomplete) {
          this.log.error(
            { err: r.incomplete, conversationId: this.id, keptMs: r.durationMs },
            'recording incomplete: a write failed mid-call; the audio before it is kept',
          );
        }
        const path = relative(this.recordingsDir, r.path);
        compress = r.wanted === 'wav.gz';
        // compress_to: the intent survives a shutdown or crash before the gzip lands (resumed at the next start).
        recordings.push({
          side: 'both',
          path,
          format: r.format,
          sample_rate: r.sampleRate,
          channels: 2,
          bytes: r.bytes,
          compress_to: compress ? 'wav.gz' : null,
        });
      } catch (err) {
        this.log.error({ err, conversationId: this.id }, 'recording failed');
      }
    }
    if (!this.id) return;
    const id = this.id;
    if (this.retainNothing && recordings.length > 0) {
      // Zero data retention came while the recording was being closed: its file is removed, not handed on.
      await this.removeFiles(id, recordings.splice(0), 'zero data retention came as it closed');
    }
    const finish: Finish = {
      ended_by: endedBy,
      ended_at: new Date(nowMs),
      duration_ms: startedAtMs ? Math.max(0, nowMs - startedAtMs) : 0,
      live_transcript: this.retainNothing ? null : this.transcript.join('\n') || null,
      latencies_ms: this.latencies,
      interruptions_count: this.interruptions,
      ...(rtp ? { rtp } : {}),
    };
    const outcome = await this.finishOnce(id, finish, recordings);
    // External storage: after the store's first answer, which it never holds up.
    await this.deliver();
    if (outcome) return this.finished(id, endedBy, outcome, recordings, compress);
    // The store did not answer in time or could not be reached (main held it through an outage already): tried
    // again in the background, never abandoned; the .wav stays on disk meanwhile.
    this.retrying = this.finishInBackground(id, endedBy, finish, recordings, compress);
  }

  /**
   * One finish; refused for what it holds, once more without the transcript (the numbers and the recording still
   * land). null when the store could not be reached (storeUnavailable) or refused even that.
   */
  private async finishOnce(id: string, finish: Finish, recordings: NewRecording[]): Promise<FinishOutcome | null> {
    try {
      return await this.store.finishConversation(id, finish, recordings);
    } catch (err) {
      if (storeUnavailable(err)) {
        this.log.error(
          { err, conversationId: id },
          'finishing the record failed: the database is unavailable; trying again',
        );
        return null;
      }
      this.log.error(
        { err, conversationId: id },
        'finishing the record was refused: finishing it without its transcript',
      );
    }
    try {
      return await this.store.finishConversation(id, { ...finish, live_transcript: null }, recordings);
    } catch (err) {
      this.log.error(
        { err, conversationId: id },
        'finishing the record without its transcript failed too; trying again',
      );
      return null;
    }
  }

  private async finishInBackground(
    id: string,
    endedBy: EndedBy,
    finish: Finish,
    recordings: NewRecording[],
    compress: boolean,
  ): Promise<void> {
    const { min_ms: min, max_ms: max } = this.opts.finishRetry ?? FINISH_RETRY;
    for (let delay = min; ; delay = Math.min(delay * 2, max)) {
      // Unref'd: a worker that stops is not held up by it (start-up recovery ends what it leaves).
      await new Promise((r) => setTimeout(r, delay).unref());
      const outcome = await this.finishOnce(id, finish, recordings);
      if (!outcome) continue;
      this.log.info({ conversationId: id }, 'the record was finished at a later try');
      return this.finished(id, endedBy, outcome, recordings, compress);
    }
  }

  /** After the store answered the finish: refused recordings' files removed, stored `wav.gz` ones queued for gzip. */
  private async finished(
    id: string,
    endedBy: EndedBy,
    outcome: FinishOutcome,
    recordings: NewRecording[],
    compress: boolean,
  ): Promise<void> {
    if (!outcome.ended) {
      this.log.info(
        { conversationId: id, endedBy, recordingsStored: outcome.recordingsStored },
        'record had ended already (canceled): filled in',
      );
    }
    if (recordings.length > 0 && !outcome.recordingsStored) {
      await this.removeFiles(
        id,
        recordings,
        'refused by the store (deleted, not retained, or the conversation is gone)',
      );
      return;
    }
    // Stored (also after a cancel): the row points at the .wav, so the compressor can move it to the .wav.gz.
    const compressor = this.opts.compressor;
    if (!compress || !outcome.recordingsStored || !compressor) return;
    for (const r of recordings)
      compressor.enqueue({ conversationId: id, side: r.side, dir: this.recordingsDir, wav: r.path });
  }

  /** Completes a delivery (its outcomes go to the store) and lets go of the content kept for it. */
  private async deliver(): Promise<void> {
    const delivery = this.delivery;
    if (!delivery) return;
    this.delivery = null;
    const items = this.delivered.splice(0);
    await delivery.finish({ liveTranscript: this.transcript.join('\n') || null, items });
  }

  /**
   * The store answered that it refused these recordings (finishConversation: the conversation retains nothing (zero
   * data retention, on any finish), or had ended already and its recordings were deleted, or it is gone): no row
   * points at their files, so nobody could download or delete them, and they are audio we must not keep. Their
   * files are removed.
   * None of them can be a file the store keeps: each is this record's own `<conversation id>.<format>`, a row comes
   * to point at it only through a finish that stores it, and a row pointing at it already counts as stored (a finish
   * made again after its first attempt committed unseen: src/store/conversations.ts finishConversation); so where
   * the store refused because the side had a row already, that row points at another file. No
   * `.wav.gz` of a refused recording exists: only a stored one is handed to the compressor. A failed removal is
   * logged and the end goes on. Also used for a recording closed as the conversation became zero data retention.
   */
  private async removeFiles(conversationId: string, recordings: NewRecording[], why: string): Promise<void> {
    for (const r of recordings) {
      const path = join(this.recordingsDir, r.path);
      try {
        await unlink(path);
        this.log.info({ conversationId, path }, `recording ${why}: its file removed`);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
          this.log.info({ conversationId, path }, `recording ${why}: its file was already gone`);
          continue;
        }
        this.log.error(
          { err, conversationId, path },
          `removing the file of a recording ${why} failed: it stays on disk`,
        );
      }
    }
  }
}

// Recording of both sides of a conversation: one stereo 16-bit PCM WAV, left = user (caller), right = assistant
// (agent), both at one sample rate (the engine's: both chains have it before resampling). Written as the call
// goes, one block a second, so a long call never sits in memory; the RIFF sizes are patched when it ends. finish()
// never compresses: it leaves a complete, playable `.wav` at once (the record is finished with it), and a recording
// wanted as `wav.gz` is gzipped afterwards, in the background and a bounded number at a time, by
// src/media/recording-compressor.ts (a mass hang-up or a shutdown must not wait on hundreds of gzips). abort()
// instead throws the recording away mid-call, file and all (a conversation that becomes zero data retention).
// A write that fails mid-call (a full disk, a file size limit) stops the writing; finish() then keeps what reached
// the file before it as a shorter, playable recording (cut back to the last whole block, sizes patched) rather
// than leave a file no record points at, which could be neither served nor deleted.
//
// Per frame, in JavaScript and without a crossing into native code: each side's audio is copied straight into its
// half of the block (planar: the user's second, then the assistant's) at that side's cursor as it appears (inbound
// per packet, outbound per tick: one set() each), and tick() (the pacing clock, once per 20 ms) closes one frame of
// the call's timeline, silence (fill()) where a side had less, so the two channels stay on the call's timeline.
// The writer interleaves a block into the WAV's little-endian stereo as it writes it, on the thread pool: planar
// blocks let each side's frame be one memcpy (set()) instead of a store per sample on the worker.
// A side running ahead of the clock (a burst, jitter) is held ahead of the timeline up to MAX_SIDE_BACKLOG_MS;
// what would go beyond it is dropped (the newest: dropping the oldest would move all that is held, per frame) and
// reported by finish(); what is held when the call ends is kept (the timeline runs on to it).
// Each sample position of each side is stored exactly once (audio or silence) before its block goes to the file,
// so blocks are never cleared. Full blocks go to the file in batches across this thread's recordings
// (src/media/recording-writer.ts: one thread-pool job per event-loop turn, not one per block) and come back for
// reuse once written.
// StreamedRecorder keeps the same timeline but hands each full block to a PlanarBlockSink instead of a file (an
// external storage upload under zero data retention, docs/external-storage.md): nothing reaches the disk.
import { getSystemErrorMap } from 'node:util';
import { open, unlink, type FileHandle } from 'node:fs/promises';
import { isAbsolute, relative, resolve } from 'node:path';
import { FRAME_MS } from './format.js';
import { BLOCK_NOTHING_WRITTEN, BLOCK_SKIPPED } from './native/block-writer.js';
import { recordingWriter, type BlockSource, type BlockWrite } from './recording-writer.js';

export type RecordingFormat = 'wav' | 'wav.gz';

/** RIFF/WAVE canonical header (Microsoft RIFF spec, WAVE_FORMAT_PCM): 44 bytes. */
export const WAV_HEADER_BYTES = 44;
const WAVE_FORMAT_PCM = 1;
const CHANNELS = 2;
const BYTES_PER_SAMPLE = 2;
/** One block of file I/O per second of audio. */
const BLOCK_MS = 1000;
/** A side may run this far ahead of the clock (jitter, bursts); audio beyond it is dropped. */
const MAX_SIDE_BACKLOG_MS = 2000;
/** The channels: left = user, right = assistant (the half of a block each has). */
const LEFT = 0;
const RIGHT = 1;
type Channel = typeof LEFT | typeof RIGHT;

export class RecordingError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RecordingError';
  }
}

/** Sub-directory of PARLEY_DATA_DIR that holds recordings; stored paths are relative to it. */
export const RECORDINGS_DIR = 'recordings';

/** The absolute path of a stored recording; a RecordingError when the stored path would leave the recordings directory. */
export function recordingPath(dataDir: string, stored: string): string {
  const root = resolve(dataDir, RECORDINGS_DIR);
  const full = resolve(root, stored);
  const rel = relative(root, full);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel))
    throw new RecordingError(`recording path ${stored} is outside ${root}`);
  return full;
}

export interface RecordingResult {
  /** The finished WAV (always a `.wav`: finish() does not compress). */
  path: string;
  /** What is on disk now: always `wav`. */
  format: 'wav';
  /** The format the recording was opened for: `wav.gz` asks the compressor to gzip it later. */
  wanted: RecordingFormat;
  sampleRate: number;
  channels: 2;
  frames: number;
  durationMs: number;
  bytes: number;
  /** Audio left out because a side ran more than MAX_SIDE_BACKLOG_MS ahead of the clock (both sides' together). */
  droppedMs: number;
  /** A write failed mid-call: the recording holds only the audio before it (durationMs of it). */
  incomplete?: RecordingError;
}

function wavHeader(sampleRate: number, dataBytes: number): Uint8Array {
  const h = Buffer.alloc(WAV_HEADER_BYTES);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + dataBytes, 4);
  h.write('WAVE', 8, 'ascii');
  h.write('fmt ', 12, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(WAVE_FORMAT_PCM, 20);
  h.writeUInt16LE(CHANNELS, 22);
  h.writeUInt32LE(sampleRate, 24);
  h.writeUInt32LE(sampleRate * CHANNELS * BYTES_PER_SAMPLE, 28);
  h.writeUInt16LE(CHANNELS * BYTES_PER_SAMPLE, 32);
  h.writeUInt16LE(BYTES_PER_SAMPLE * 8, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(dataBytes, 40);
  return h;
}

type RecorderState = 'recording' | 'finishing' | 'done' | 'failed' | 'aborted';

/** One second of planar stereo: the user's samples (left), then the assistant's (right), each `blockPairs` long. */
type RecordingBlock = Int16Array;

function newBlock(pairs: number): RecordingBlock {
  return new Int16Array(pairs * CHANNELS);
}

/**
 * The call's timeline of both sides in planar one-second blocks (the per-frame work of every recorder): each side's
 * audio at its cursor, silence where a side had less by the tick, a full block handed to `close`.
 */
abstract class StereoTimeline {
  readonly frameSamples: number;
  protected readonly blockPairs: number;
  private readonly backlog: number;
  /** The open blocks, by block number modulo their count: from the timeline's block to the furthest cursor's. */
  private readonly openBlocks: (RecordingBlock | null)[];
  private readonly openNumbers: number[];
  /** Blocks back from their destination, for reuse. */
  protected readonly spare: RecordingBlock[] = [];
  /** Sample pairs closed by tick(): the call's timeline. */
  protected timeline = 0;
  /** Where each side's next sample goes, in pairs; never behind the timeline. */
  private userCursor = 0;
  private assistantCursor = 0;
  protected state: RecorderState = 'recording';
  /** Samples dropped because a side ran too far ahead of the clock (finish() reports them as droppedMs). */
  protected dropped = 0;

  protected constructor(readonly sampleRate: number) {
    if (!Number.isInteger((sampleRate * FRAME_MS) / 1000)) throw new RangeError(`bad recording rate ${sampleRate}`);
    this.frameSamples = (sampleRate * FRAME_MS) / 1000;
    this.blockPairs = (sampleRate * BLOCK_MS) / 1000;
    this.backlog = (sampleRate * MAX_SIDE_BACKLOG_MS) / 1000;
    // Open blocks span the timeline's block to the one holding timeline + backlog - 1.
    const ring = Math.floor(this.backlog / this.blockPairs) + 2;
    this.openBlocks = new Array<RecordingBlock | null>(ring).fill(null);
    this.openNumbers = new Array<number>(ring).fill(-1);
  }

  /** User (caller) audio as it arrives, at the recorder's rate. */
  writeUser(pcm: Int16Array): void {
    if (this.state === 'recording') this.userCursor = this.append(LEFT, this.userCursor, pcm);
  }

  /** Assistant audio as it is sent, at the recorder's rate. */
  writeAssistant(pcm: Int16Array): void {
    if (this.state === 'recording') this.assistantCursor = this.append(RIGHT, this.assistantCursor, pcm);
  }

  /** One 20 ms frame of the call's timeline: silence where a side had less than the frame; a full block to the file. */
  tick(): void {
    if (this.state !== 'recording') return;
    const end = this.timeline + this.frameSamples;
    if (this.userCursor < end) this.userCursor = this.silence(LEFT, this.userCursor, end);
    if (this.assistantCursor < end) this.assistantCursor = this.silence(RIGHT, this.assistantCursor, end);
    this.timeline = end;
    if (end % this.blockPairs === 0) this.close(end / this.blockPairs - 1, this.blockPairs);
  }

  /** Appends pcm to a channel at `cursor` (what would go past the backlog is dropped); returns the new cursor. */
  private append(ch: Channel, cursor: number, pcm: Int16Array): number {
    // Over the backlog (the clock is not draining this side: skipped ticks after a stall, a client sending faster
    // than real time): the newest audio goes, counted. Dropping the oldest instead would move every held sample
    // per frame (2 s of audio for each 20 ms), a cost a client could impose by sending too fast.
    const room = this.timeline + this.backlog - cursor;
    const n = Math.min(pcm.length, room);
    this.dropped += pcm.length - n;
    return this.store(ch, cursor, pcm, n);
  }

  /** The block of number `b`, taken (a spare, else a new one) when first used. */
  private block(b: number): RecordingBlock {
    const slot = b % this.openBlocks.length;
    if (this.openNumbers[slot] !== b) {
      // The slot's previous block lies before the timeline's: it was closed.
      this.openBlocks[slot] = this.spare.pop() ?? newBlock(this.blockPairs);
      this.openNumbers[slot] = b;
    }
    return this.openBlocks[slot]!;
  }

  /** Stores pcm[0, to) on a channel from pair `pos`, across blocks; returns the pair after the last. */
  private store(ch: Channel, pos: number, pcm: Int16Array, to: number): number {
    for (let i = 0; i < to;) {
      const b = Math.floor(pos / this.blockPairs);
      const at = pos - b * this.blockPairs;
      const k = Math.min(to - i, this.blockPairs - at);
      // A whole frame (the usual case) is copied as it is; a part of one through a view of it.
      this.block(b).set(k === pcm.length ? pcm : pcm.subarray(i, i + k), ch * this.blockPairs + at);
      i += k;
      pos += k;
    }
    return pos;
  }

  /** Silence on a channel from pair `pos` up to `end`; returns end. */
  private silence(ch: Channel, pos: number, end: number): number {
    while (pos < end) {
      const b = Math.floor(pos / this.blockPairs);
      const at = pos - b * this.blockPairs;
      const k = Math.min(end - pos, this.blockPairs - at);
      const from = ch * this.blockPairs + at;
      this.block(b).fill(0, from, from + k);
      pos += k;
    }
    return end;
  }

  /** Takes the open block `b` out of the ring (it is complete, or the last, partial one). */
  protected take(b: number): RecordingBlock {
    const slot = b % this.openBlocks.length;
    const block = this.openBlocks[slot]!;
    this.openBlocks[slot] = null;
    this.openNumbers[slot] = -1;
    return block;
  }

  /** Block `b` is complete (`pairs` of it: all but the last one are whole): to the recorder's destination. */
  protected abstract close(b: number, pairs: number): void;

  /**
   * The end of the timeline: audio held ahead of it (a frame that came after the last tick, a burst) is kept, the
   * timeline runs on, frame by frame, to the furthest side (silence on the other), so nothing either side said is
   * left out; then the last, partial block is closed. Leaves the state `finishing`.
   */
  protected closeTimeline(): void {
    while (this.timeline < this.userCursor || this.timeline < this.assistantCursor) this.tick();
    this.state = 'finishing';
    const partial = this.timeline % this.blockPairs;
    if (partial !== 0) this.close(Math.floor(this.timeline / this.blockPairs), partial);
  }
}

export class StereoRecorder extends StereoTimeline implements BlockSource {
  readonly fd: number;
  /** Blocks handed to the writer, in file order, until written (or taken back). */
  private readonly writing: RecordingBlock[] = [];
  /** Data bytes on disk from the start, whole blocks, written before any failure. */
  private durableBytes = 0;
  /** finish() or abort() waiting for the blocks being written. */
  private writesEnded: (() => void) | null = null;
  private error: RecordingError | undefined;
  private closed = false;

  private constructor(
    private readonly file: FileHandle,
    readonly wavPath: string,
    readonly format: RecordingFormat,
    sampleRate: number,
  ) {
    super(sampleRate);
    this.fd = file.fd;
  }

  /**
   * Opens `path` (for 'wav.gz', the format wanted, the WAV is written at `path` without `.gz`; the compressor
   * makes `path` later). The file is created exclusively: an existing recording is never overwritten.
   */
  static async open(path: string, opts: { sampleRate: number; format?: RecordingFormat }): Promise<StereoRecorder> {
    const format = opts.format ?? 'wav';
    const wavPath = format === 'wav.gz' ? path.replace(/\.gz$/, '') : path;
    if (!Number.isInteger((opts.sampleRate * FRAME_MS) / 1000))
      throw new RangeError(`bad recording rate ${opts.sampleRate}`);
    let file: FileHandle;
    try {
      file = await open(wavPath, 'wx');
      await file.write(wavHeader(opts.sampleRate, 0), 0, WAV_HEADER_BYTES, 0);
    } catch (err) {
      throw new RecordingError(`cannot create recording ${wavPath}: ${(err as Error).message}`, { cause: err });
    }
    return new StereoRecorder(file, wavPath, format, opts.sampleRate);
  }

  /** Block `b` is complete (`pairs` of it: all but the last one are whole): to the file, unless writing stopped. */
  protected close(b: number, pairs: number): void {
    const block = this.take(b);
    if (this.error) return void this.spare.push(block); // the file failed: nothing more is written
    this.writing.push(block);
    recordingWriter.write(this, block, pairs, WAV_HEADER_BYTES + b * this.blockPairs * CHANNELS * BYTES_PER_SAMPLE);
  }

  /** @internal the writer: blocks of this recording written (in file order), or skipped after a failure. */
  written(writes: BlockWrite[]): void {
    for (const w of writes) {
      this.spare.push(this.writing.shift()!);
      if (w.error === 0) this.durableBytes += w.written;
      else if (w.error !== BLOCK_SKIPPED) {
        // Whole blocks only are kept: the part of this one that reached the file is cut off at finish().
        this.error ??= writeError(this.wavPath, w.error, WAV_HEADER_BYTES + this.durableBytes + w.written);
      }
    }
    if (this.error) this.stopWriting();
    if (this.writing.length > 0) return;
    const ended = this.writesEnded;
    this.writesEnded = null;
    ended?.();
  }

  /** Nothing more goes to the file: blocks not yet in a batch come back. */
  private stopWriting(): void {
    for (let k = recordingWriter.unqueue(this).length; k > 0; k--) this.spare.push(this.writing.pop()!);
  }

  private async writesDone(): Promise<void> {
    if (this.writing.length > 0) await new Promise<void>((resolve) => (this.writesEnded = resolve));
  }

  /** The first write error, if any (the call goes on; finish() keeps what was written before it). */
  get failed(): Error | undefined {
    return this.error;
  }

  /**
   * Writes what is left, patches the sizes and closes the WAV; resolves with the file's details. Never compresses
   * (a `wav.gz` recording is handed to the compressor by its owner once the record points at the WAV).
   *
   * After a failed write (a full disk, a file size limit) the file is first cut back to the whole blocks written
   * before the failure, so the call's audio up to then is kept as a playable recording, marked `incomplete`. When
   * cutting, patching or closing fails, the file is removed (no record will point at it, so it could be neither
   * served nor deleted) and a RecordingError gives every failure; when removing it fails too, it says the file stays.
   */
  async finish(): Promise<RecordingResult> {
    if (this.state !== 'recording') throw new RecordingError(`recording ${this.wavPath} already ${this.state}`);
    this.closeTimeline();
    await this.writesDone();
    const failure = this.error;
    const dataBytes = failure ? this.durableBytes : this.timeline * CHANNELS * BYTES_PER_SAMPLE;
    try {
      if (failure) await this.file.truncate(WAV_HEADER_BYTES + dataBytes);
      await this.file.write(wavHeader(this.sampleRate, dataBytes), 0, WAV_HEADER_BYTES, 0);
      this.closed = true;
      await this.file.close();
    } catch (err) {
      throw await this.removeUnfinished(err, failure);
    }
    this.state = 'done';
    const frames = dataBytes / (CHANNELS * BYTES_PER_SAMPLE * this.frameSamples);
    return {
      path: this.wavPath,
      format: 'wav',
      wanted: this.format,
      sampleRate: this.sampleRate,
      channels: 2,
      frames,
      durationMs: frames * FRAME_MS,
      bytes: WAV_HEADER_BYTES + dataBytes,
      droppedMs: (this.dropped * 1000) / this.sampleRate,
      ...(failure ? { incomplete: failure } : {}),
    };
  }

  /** finish() could not make the file a playable WAV: it is closed and removed; the error to throw says why. */
  private async removeUnfinished(err: unknown, failure: RecordingError | undefined): Promise<RecordingError> {
    this.state = 'failed';
    const causes: unknown[] = failure ? [failure, err] : [err];
    if (!this.closed) {
      this.closed = true;
      await this.file.close().catch((closeErr: unknown) => causes.push(closeErr));
    }
    const what = `recording ${this.wavPath} could not be finished${failure ? ` after ${failure.message}` : ''}: ${(err as Error).message}`;
    try {
      await unlink(this.wavPath);
    } catch (unlinkErr) {
      causes.push(unlinkErr);
      return new RecordingError(`${what}; removing it failed too, the file stays: ${(unlinkErr as Error).message}`, {
        cause: new AggregateError(causes),
      });
    }
    return new RecordingError(`${what}; the file is removed`, { cause: new AggregateError(causes) });
  }

  /**
   * Throws the recording away at once (zero data retention from now on): nothing more is taken or written (the
   * audio not yet in a block handed to the file is dropped; a batch already on the thread pool is waited for), the
   * file is closed and removed. Resolves once it is gone; rejects with a RecordingError when closing or removing
   * failed (the file may then stay). Only while recording: a recording finishing or finished is its owner's to
   * remove.
   */
  async abort(): Promise<void> {
    if (this.state !== 'recording') throw new RecordingError(`recording ${this.wavPath} already ${this.state}`);
    this.state = 'aborted';
    this.stopWriting();
    await this.writesDone();
    let closeError: unknown = null;
    this.closed = true;
    try {
      await this.file.close();
    } catch (err) {
      closeError = err;
    }
    try {
      await unlink(this.wavPath);
    } catch (err) {
      throw new RecordingError(`removing aborted recording ${this.wavPath} failed: ${(err as Error).message}`, {
        cause: closeError ? new AggregateError([err, closeError]) : err,
      });
    }
    if (closeError)
      throw new RecordingError(
        `closing aborted recording ${this.wavPath} failed (the file is removed): ${(closeError as Error).message}`,
        { cause: closeError },
      );
  }
}

/** Where a StreamedRecorder's blocks go: synchronously, from the pacing clock's tick; the block is lent for the call. */
export interface PlanarBlockSink {
  /** `block` holds `blockPairs` left samples then `blockPairs` right ones; the first `pairs` of each are audio. */
  writePlanar(block: Int16Array, pairs: number, blockPairs: number): void;
}

/** What a StreamedRecorder's finish() reports. */
export interface StreamedRecording {
  sampleRate: number;
  frames: number;
  durationMs: number;
  /** Audio left out because a side ran more than MAX_SIDE_BACKLOG_MS ahead of the clock (both sides' together). */
  droppedMs: number;
}

/**
 * The stereo recording of a call handed, block by block as the call goes, to a sink instead of a file (external
 * storage under zero data retention: nothing reaches the disk). The same timeline as StereoRecorder; each full
 * block is given to the sink from the tick that completes it and reused at once.
 */
export class StreamedRecorder extends StereoTimeline {
  constructor(
    private readonly sink: PlanarBlockSink,
    sampleRate: number,
  ) {
    super(sampleRate);
  }

  protected close(b: number, pairs: number): void {
    const block = this.take(b);
    this.sink.writePlanar(block, pairs, this.blockPairs);
    this.spare.push(block);
  }

  /** Hands the sink the rest (the last block, partial); what the recording held. */
  finish(): StreamedRecording {
    if (this.state !== 'recording') throw new RecordingError(`streamed recording already ${this.state}`);
    this.closeTimeline();
    this.state = 'done';
    const frames = this.timeline / this.frameSamples;
    return {
      sampleRate: this.sampleRate,
      frames,
      durationMs: frames * FRAME_MS,
      droppedMs: (this.dropped * 1000) / this.sampleRate,
    };
  }

  /** Takes nothing more; the sink is its owner's to abort. */
  abort(): void {
    this.state = 'aborted';
  }
}

/** The error of a failed block write (an errno from the batch writer, or BLOCK_NOTHING_WRITTEN). */
function writeError(wavPath: string, error: number, atByte: number): RecordingError {
  if (error === BLOCK_NOTHING_WRITTEN)
    return new RecordingError(`writing recording ${wavPath}: nothing written at byte ${atByte}`);
  const [code, message] = getSystemErrorMap().get(-error) ?? [`errno ${error}`, 'unknown error'];
  const cause = Object.assign(new Error(`${code}: ${message}, write`), { code, errno: -error, syscall: 'write' });
  return new RecordingError(`writing recording ${wavPath}: ${cause.message}`, { cause });
}

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
// Alignment: both sides feed per-side FIFOs as their audio appears (inbound per packet, outbound per tick);
// tick() (the pacing clock, once per 20 ms) moves exactly one frame per side into the file, silence where a
// side had nothing, so the two channels stay on the call's timeline.
//
// Per tick, nothing allocates and little is copied: a side's frame is interleaved straight from its FIFO's ring
// when it lies there whole (else it is first read out into a scratch frame of the same arena, with memmoves), on
// little-endian hosts by one native call per tick (native/src/pcm_interleave.h; host order is the WAV's byte
// order). Recorders are ticked one by one from their conversations' ticks, so there is no batch across them: a
// crossing (~150 ns) is a fraction of what the JS loop cost (~550 ns for 160 samples). Blocks are recycled once
// written (a second of stereo audio per conversation, which as fresh ArrayBuffers drove V8's external-memory GCs).
// Blocks go to the file one after the other through fs.write with one callback made once (a promise chain and
// FileHandle.write cost ~2 KB of garbage per block).
import { write } from 'node:fs';
import { open, unlink, type FileHandle } from 'node:fs/promises';
import { isAbsolute, relative, resolve } from 'node:path';
import { FRAME_MS, LITTLE_ENDIAN_HOST } from './format.js';
import { interleaveStereoInto } from './native.js';
import { SampleFifo } from './pipeline.js';

export type RecordingFormat = 'wav' | 'wav.gz';

/** RIFF/WAVE canonical header (Microsoft RIFF spec, WAVE_FORMAT_PCM): 44 bytes. */
export const WAV_HEADER_BYTES = 44;
const WAVE_FORMAT_PCM = 1;
const CHANNELS = 2;
const BYTES_PER_SAMPLE = 2;
/** One block of file I/O per second of audio. */
const BLOCK_MS = 1000;
/** A side may run this far ahead of the clock (jitter, bursts) before its oldest audio is dropped. */
const MAX_SIDE_BACKLOG_MS = 2000;
/**
 * Frames this long or longer are interleaved natively: an N-API crossing costs ~150 ns, the JS loop ~2.5-3.5 ns
 * per sample; they break even at ~64 (bench/interleave.ts: native/js 1.00 at 64, 0.33 at 160, 0.21 at 320, 0.18 at
 * 480, 1.8 at 32). Every 20 ms frame at 8 kHz or more (160+) is above it.
 */
const NATIVE_INTERLEAVE_MIN_SAMPLES = 64;

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
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) throw new RecordingError(`recording path ${stored} is outside ${root}`);
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

/** One second of interleaved stereo: the same bytes as 32-bit sample pairs, as 16-bit samples and for the file. */
export interface RecordingBlock {
  readonly pairs: Uint32Array;
  readonly samples: Int16Array;
  readonly bytes: Buffer;
}

export function recordingBlock(pairs: number): RecordingBlock {
  const buffer = new ArrayBuffer(pairs * CHANNELS * BYTES_PER_SAMPLE);
  return { pairs: new Uint32Array(buffer), samples: new Int16Array(buffer), bytes: Buffer.from(buffer) };
}

/**
 * Interleaves src[l, l + n) (left) and src[r, r + n) (right) into block from sample pair `at`, in WAV byte order
 * (little-endian). On a little-endian host a frame of NATIVE_INTERLEAVE_MIN_SAMPLES or more goes through the
 * native interleave (host order is then WAV order), a shorter one through a JS loop of 32-bit pair stores.
 */
export function interleaveInto(block: RecordingBlock, at: number, src: Int16Array, l: number, r: number, n: number, littleEndianHost = LITTLE_ENDIAN_HOST): void {
  if (littleEndianHost && n >= NATIVE_INTERLEAVE_MIN_SAMPLES) {
    interleaveStereoInto(src, l, src, r, n, block.samples, at);
    return;
  }
  if (littleEndianHost) return interleavePairs(block.pairs, at, src, l, r, n);
  const bytes = block.bytes;
  for (let i = 0, o = at * CHANNELS * BYTES_PER_SAMPLE; i < n; i++, o += CHANNELS * BYTES_PER_SAMPLE) {
    bytes.writeInt16LE(src[l + i], o);
    bytes.writeInt16LE(src[r + i], o + BYTES_PER_SAMPLE);
  }
}

/** The JS interleave of a little-endian host: each sample pair one 32-bit store, left in the low half. */
export function interleavePairs(pairs: Uint32Array, at: number, src: Int16Array, l: number, r: number, n: number): void {
  for (let i = 0; i < n; i++) pairs[at + i] = (src[l + i] & 0xffff) | (src[r + i] << 16);
}

export class StereoRecorder {
  readonly frameSamples: number;
  private readonly user: SampleFifo;
  private readonly assistant: SampleFifo;
  /** Both FIFOs' rings, then the left frame and the right one: reads into the frames are memmoves. */
  private readonly arena: Int16Array;
  private readonly frameL: number;
  private readonly frameR: number;
  private block: RecordingBlock;
  /** Written blocks back from the file, for reuse (two in steady state: one filling, one being written). */
  private readonly spare: RecordingBlock[] = [];
  private blockFill = 0; // sample pairs in block
  private readonly blockPairs: number;
  private dataBytes = 0;
  /** Data bytes on disk from the start, whole blocks, written before any failure. */
  private durableBytes = 0;
  /** Blocks waiting for the file, the first one being written (`done` of its bytes so far). */
  private readonly writes: { block: RecordingBlock; bytes: number; offset: number; done: number }[] = [];
  /** finish() waiting for the writes to end. */
  private writesEnded: (() => void) | null = null;
  private error: Error | undefined;
  private state: RecorderState = 'recording';
  private closed = false;
  /** Samples dropped because a side ran too far ahead of the clock. */
  dropped = 0;

  private constructor(
    private readonly file: FileHandle,
    readonly wavPath: string,
    readonly format: RecordingFormat,
    readonly sampleRate: number,
  ) {
    this.frameSamples = (sampleRate * FRAME_MS) / 1000;
    const backlog = (sampleRate * MAX_SIDE_BACKLOG_MS) / 1000;
    this.arena = new Int16Array(2 * backlog + 2 * this.frameSamples);
    this.user = new SampleFifo(backlog, { array: this.arena, offset: 0 });
    this.assistant = new SampleFifo(backlog, { array: this.arena, offset: backlog });
    this.frameL = 2 * backlog;
    this.frameR = 2 * backlog + this.frameSamples;
    this.blockPairs = (sampleRate * BLOCK_MS) / 1000;
    this.block = recordingBlock(this.blockPairs);
  }

  /**
   * Opens `path` (for 'wav.gz', the format wanted, the WAV is written at `path` without `.gz`; the compressor
   * makes `path` later). The file is created exclusively: an existing recording is never overwritten.
   */
  static async open(path: string, opts: { sampleRate: number; format?: RecordingFormat }): Promise<StereoRecorder> {
    const format = opts.format ?? 'wav';
    const wavPath = format === 'wav.gz' ? path.replace(/\.gz$/, '') : path;
    if (!Number.isInteger((opts.sampleRate * FRAME_MS) / 1000)) throw new RangeError(`bad recording rate ${opts.sampleRate}`);
    let file: FileHandle;
    try {
      file = await open(wavPath, 'wx');
      await file.write(wavHeader(opts.sampleRate, 0), 0, WAV_HEADER_BYTES, 0);
    } catch (err) {
      throw new RecordingError(`cannot create recording ${wavPath}: ${(err as Error).message}`, { cause: err });
    }
    return new StereoRecorder(file, wavPath, format, opts.sampleRate);
  }

  /** User (caller) audio as it arrives, at the recorder's rate. */
  writeUser(pcm: Int16Array, n: number = pcm.length): void {
    this.feed(this.user, pcm, n);
  }

  /** Assistant audio as it is sent, at the recorder's rate. */
  writeAssistant(pcm: Int16Array, n: number = pcm.length): void {
    this.feed(this.assistant, pcm, n);
  }

  /** One 20 ms frame of the call's timeline: a frame per side (silence where a side had none) into the file. */
  tick(): void {
    if (this.state !== 'recording') return;
    const n = this.frameSamples;
    const l = this.frameOf(this.user, this.frameL, n);
    const r = this.frameOf(this.assistant, this.frameR, n);
    interleaveInto(this.block, this.blockFill, this.arena, l, r, n);
    this.user.discard(l === this.frameL ? 0 : n);
    this.assistant.discard(r === this.frameR ? 0 : n);
    this.blockFill += n;
    if (this.blockFill === this.blockPairs) this.writeBlock();
  }

  /**
   * Where in the arena this tick's frame of one side is: in place in its FIFO when a whole frame lies there
   * without wrapping (the usual case: no copy), else read out into `scratch` (memmoves within the arena) with
   * silence after what the side had. In place, the caller discards the frame from the FIFO after using it.
   */
  private frameOf(fifo: SampleFifo, scratch: number, n: number): number {
    if (fifo.contiguous >= n) return fifo.headIndex;
    const got = fifo.read(this.arena, n, scratch);
    if (got < n) this.arena.fill(0, scratch + got, scratch + n);
    return scratch;
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
    this.state = 'finishing';
    if (this.blockFill > 0) this.writeBlock();
    if (this.writes.length > 0) await new Promise<void>((resolve) => (this.writesEnded = resolve));
    const failure = this.error;
    const dataBytes = failure ? this.durableBytes : this.dataBytes;
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
      return new RecordingError(`${what}; removing it failed too, the file stays: ${(unlinkErr as Error).message}`, { cause: new AggregateError(causes) });
    }
    return new RecordingError(`${what}; the file is removed`, { cause: new AggregateError(causes) });
  }


  /**
   * Throws the recording away at once (zero data retention from now on): nothing more is taken or written (the
   * audio waiting in the FIFOs and blocks not yet handed to the file are dropped; a write already in the kernel's
   * hands is waited for, never continued), the file is closed and removed. Resolves once it is gone; rejects with a
   * RecordingError when closing or removing failed (the file may then stay). Only while recording: a recording
   * finishing or finished is its owner's to remove.
   */
  async abort(): Promise<void> {
    if (this.state !== 'recording') throw new RecordingError(`recording ${this.wavPath} already ${this.state}`);
    this.state = 'aborted';
    this.writes.length = Math.min(this.writes.length, 1);
    if (this.writes.length > 0) await new Promise<void>((resolve) => (this.writesEnded = resolve));
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
      throw new RecordingError(`removing aborted recording ${this.wavPath} failed: ${(err as Error).message}`, { cause: closeError ? new AggregateError([err, closeError]) : err });
    }
    if (closeError) throw new RecordingError(`closing aborted recording ${this.wavPath} failed (the file is removed): ${(closeError as Error).message}`, { cause: closeError });
  }

  private feed(fifo: SampleFifo, pcm: Int16Array, n: number): void {
    if (this.state !== 'recording') return;
    if (n > fifo.capacity) throw new RangeError(`recording chunk of ${n} samples exceeds the ${fifo.capacity}-sample backlog`);
    // The clock is not draining this side (a stalled worker or a burst): drop the oldest audio, count it.
    if (n > fifo.free) this.dropped += fifo.discard(n - fifo.free);
    fifo.write(pcm, n);
  }

  private writeBlock(): void {
    const block = this.block;
    // The filled block goes to the file; a spare one (or, until one is back from the file, a new one) takes the
    // next second.
    this.block = this.spare.pop() ?? recordingBlock(this.blockPairs);
    const offset = WAV_HEADER_BYTES + this.dataBytes;
    const bytes = this.blockFill * CHANNELS * BYTES_PER_SAMPLE;
    this.blockFill = 0;
    this.dataBytes += bytes;
    if (this.error) return; // the recording failed: nothing more is written (finish() reports it)
    this.writes.push({ block, bytes, offset, done: 0 });
    if (this.writes.length === 1) this.writeNext();
  }

  private writeNext(): void {
    const w = this.writes[0];
    write(this.file.fd, w.block.bytes, w.done, w.bytes - w.done, w.offset + w.done, this.written);
  }

  private readonly written = (err: NodeJS.ErrnoException | null, n: number): void => {
    const w = this.writes[0];
    if (err || n === 0) {
      const message = err ? err.message : `nothing written at byte ${w.offset + w.done}`;
      this.error = new RecordingError(`writing recording ${this.wavPath}: ${message}`, { cause: err ?? undefined });
      this.writes.length = 0;
    } else {
      w.done += n;
      // A short write (a full disk on the way, a signal): the rest of the block goes next (not once aborted).
      if (w.done < w.bytes && this.state !== 'aborted') return this.writeNext();
      this.writes.shift();
      this.spare.push(w.block);
      this.durableBytes += w.bytes;
    }
    if (this.writes.length > 0) return this.writeNext();
    const ended = this.writesEnded;
    this.writesEnded = null;
    ended?.();
  };
}

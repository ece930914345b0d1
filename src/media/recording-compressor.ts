// Background gzip of finished recordings (`wav.gz` wanted). A conversation's record is finished at once with its
// `.wav` (src/conversation/record.ts); the WAV is then queued here and compressed a bounded number at a time per
// media worker, so a mass hang-up does not flood libuv's thread pool (shared by every worker of the process, and
// also where recordings are written).
//
// One job, as an explicit sequence (each step only after the previous one succeeded):
//   compress  `<name>.wav` -> `<name>.wav.gz`, created exclusively; verified: the file's size is what was written
//             and the gzip trailer's ISIZE (RFC 1952, 2.3.1: input size mod 2^32) is the WAV's size;
//   move      the recording row from the `.wav` to the `.wav.gz`, compare-and-set: only while the row still points
//             at this `.wav` (worker protocol `recording_compressed`, store `moveRecordingToCompressed`);
//   unlink    the `.wav` (a download that opened it keeps reading its fd).
// Where a step fails, what exists stays consistent: compression failed or abandoned (shutdown) -> the half-written
// `.gz` is removed and the row keeps the playable `.wav`; the row moved or was deleted meanwhile (DELETE of the
// conversation's content) -> the `.gz` is removed, no row comes back; main did not answer the move -> both files
// are kept (the row points at one of them; which one is unknown), and the error is logged.
import { createReadStream, createWriteStream } from 'node:fs';
import { open, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { type Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { Logger } from '../log.js';
import type { RecordingSide } from '../schemas/conversations.js';

/** gzip input chunk (bytes) when compressing a finished WAV. */
const GZIP_CHUNK_BYTES = 256 * 1024;
/** zlib's default trade-off between CPU and size. */
const GZIP_LEVEL = 6;
/** RFC 1952, 2.3.1: the member ends with CRC32 and ISIZE, 4 bytes each, little-endian. */
const GZIP_ISIZE_BYTES = 4;
const UINT32_RANGE = 2 ** 32;

export const COMPRESSOR_DEFAULTS = {
  /** Recordings compressed at once per compressor (one per media worker). */
  concurrency: 1,
} as const;

export class CompressionError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CompressionError';
  }
}

export interface CompressOptions {
  signal?: AbortSignal;
  /** A stage between the WAV and gzip (tests pause a compression with it). */
  through?: () => Transform;
}

/**
 * Gzips `src` into `dst` (created exclusively: never overwrites) as a stream, off the event loop, and verifies the
 * result; resolves with the compressed size. On any failure, an abort included, what was written of `dst` is
 * removed before it rejects: no truncated `.gz` is left behind.
 */
export async function compressRecording(src: string, dst: string, opts: CompressOptions = {}): Promise<number> {
  const source = createReadStream(src, { highWaterMark: GZIP_CHUNK_BYTES });
  const sink = createWriteStream(dst, { flags: 'wx' });
  const stages: NodeJS.ReadWriteStream[] = opts.through ? [opts.through()] : [];
  stages.push(createGzip({ level: GZIP_LEVEL, chunkSize: GZIP_CHUNK_BYTES }));
  try {
    await pipeline([source, ...stages, sink], { signal: opts.signal });
    const size = (await stat(dst)).size;
    if (size !== sink.bytesWritten)
      throw new CompressionError(`${dst}: ${size} bytes on disk, ${sink.bytesWritten} written`);
    const isize = await readIsize(dst, size);
    if (isize !== source.bytesRead % UINT32_RANGE) {
      throw new CompressionError(`${dst}: gzip ISIZE ${isize} does not match the ${source.bytesRead} bytes of ${src}`);
    }
    return size;
  } catch (err) {
    // The file may still be opening or open: removed once the stream has let go of it (an unlink before a late
    // open would leave it behind). EEXIST: dst was never ours (the exclusive open failed); it stays.
    // (A plain listener: events.once would reject on the stream's own 'error', the abort, before 'close'.)
    if (!sink.closed) await new Promise<void>((resolve) => sink.once('close', () => resolve()));
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') await unlinkIfPresent(dst);
    throw err;
  }
}

async function readIsize(path: string, size: number): Promise<number> {
  if (size < GZIP_ISIZE_BYTES) throw new CompressionError(`${path}: ${size} bytes is no gzip member`);
  const f = await open(path, 'r');
  try {
    const b = Buffer.alloc(GZIP_ISIZE_BYTES);
    await f.read(b, 0, GZIP_ISIZE_BYTES, size - GZIP_ISIZE_BYTES);
    return b.readUInt32LE(0);
  } finally {
    await f.close();
  }
}

async function unlinkIfPresent(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/** A finished `.wav` whose record points at it and which is wanted as `wav.gz`. */
export interface CompressionJob {
  conversationId: string;
  side: RecordingSide;
  /** The recordings directory (absolute). */
  dir: string;
  /** The WAV's path relative to `dir`, as its row stores it; the gzip goes to `<wav>.gz`. */
  wav: string;
}

/** The compressed recording a row moves to. */
export interface CompressedRecording {
  path: string;
  format: 'wav.gz';
  bytes: number;
}

/** How the compressor moves a row (the worker-protocol request `recording_compressed`, or the store directly). */
export interface CompressionStore {
  /** Compare-and-set: moves the row only while it still points at `from`; updated false changes nothing. */
  recordingCompressed(
    conversationId: string,
    side: RecordingSide,
    from: string,
    to: CompressedRecording,
  ): Promise<{ updated: boolean }>;
}

export type CompressFn = (src: string, dst: string, opts: CompressOptions) => Promise<number>;

export interface CompressorOptions {
  store: CompressionStore;
  log: Logger;
  concurrency?: number;
  /** compressRecording by default (tests wrap it to pause). */
  compress?: CompressFn;
}

export type CompressionOutcome =
  /** The row points at the `.wav.gz`, the `.wav` is gone. */
  | 'compressed'
  /** The recording was deleted or replaced meanwhile: what was written is removed, no row comes back. */
  | 'row_gone'
  /** Shutdown stopped it: the row keeps the `.wav`, the partial `.gz` is removed. */
  | 'abandoned'
  /** Logged as an error; the row points at a playable file. */
  | 'failed';

type CompressorState = 'open' | 'closing' | 'closed';

export class RecordingCompressor {
  private readonly queue: CompressionJob[] = [];
  private readonly running = new Set<Promise<void>>();
  private readonly abort = new AbortController();
  private readonly concurrency: number;
  private readonly compress: CompressFn;
  private idleWaiters: (() => void)[] = [];
  private state: CompressorState = 'open';
  /** Jobs ended, by outcome (operators, tests); jobs dropped from the queue at close count as abandoned. */
  readonly outcomes: Record<CompressionOutcome, number> = { compressed: 0, row_gone: 0, abandoned: 0, failed: 0 };

  constructor(private readonly opts: CompressorOptions) {
    this.concurrency = opts.concurrency ?? COMPRESSOR_DEFAULTS.concurrency;
    if (!Number.isInteger(this.concurrency) || this.concurrency < 1)
      throw new RangeError(`bad compressor concurrency ${this.concurrency}`);
    this.compress = opts.compress ?? compressRecording;
  }

  /** Jobs queued or running. */
  get pending(): number {
    return this.queue.length + this.running.size;
  }

  /** Queues a job; after close() it is not taken (the row keeps its `.wav`). */
  enqueue(job: CompressionJob): void {
    if (this.state !== 'open') {
      this.outcomes.abandoned++;
      this.opts.log.info(
        { conversationId: job.conversationId, wav: job.wav },
        'recording kept as wav: compressor closed',
      );
      return;
    }
    this.queue.push(job);
    this.pump();
  }

  /** Resolves once nothing is queued or running. */
  idle(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Shutdown: drops the queue, aborts the compressions running (their partial `.gz` removed) and waits for them;
   * every row left points at its playable `.wav`.
   */
  async close(): Promise<void> {
    if (this.state !== 'open') return;
    this.state = 'closing';
    const dropped = this.queue.splice(0);
    this.outcomes.abandoned += dropped.length;
    this.abort.abort();
    await Promise.allSettled([...this.running]);
    this.state = 'closed';
    if (dropped.length > 0)
      this.opts.log.info(
        { dropped: dropped.length },
        'recordings kept as wav: compression not started before shutdown',
      );
    this.settleIdle();
  }

  private pump(): void {
    while (this.state === 'open' && this.running.size < this.concurrency && this.queue.length > 0) {
      const job = this.queue.shift()!;
      const run: Promise<void> = this.run(job).then((outcome) => {
        this.outcomes[outcome]++;
        this.running.delete(run);
        this.pump();
        this.settleIdle();
      });
      this.running.add(run);
    }
  }

  private settleIdle(): void {
    if (this.pending > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  /** One job; never rejects (every failure is an outcome, logged). */
  private async run(job: CompressionJob): Promise<CompressionOutcome> {
    const { log } = this.opts;
    const src = join(job.dir, job.wav);
    const gz = `${job.wav}.gz`;
    const at = { conversationId: job.conversationId, side: job.side, wav: job.wav };
    let bytes: number;
    try {
      bytes = await this.compress(src, join(job.dir, gz), { signal: this.abort.signal });
    } catch (err) {
      if (this.abort.signal.aborted) {
        log.info(at, 'recording compression abandoned at shutdown: kept as wav');
        return 'abandoned';
      }
      const e = err as NodeJS.ErrnoException;
      if (e.code === 'ENOENT' && e.path === src) {
        log.info(at, 'recording deleted before it was compressed');
        return 'row_gone';
      }
      log.error({ ...at, err }, 'recording compression failed: kept as wav');
      return 'failed';
    }
    let updated: boolean;
    try {
      ({ updated } = await this.opts.store.recordingCompressed(job.conversationId, job.side, job.wav, {
        path: gz,
        format: 'wav.gz',
        bytes,
      }));
    } catch (err) {
      log.error({ ...at, err }, 'recording compressed but its row could not be moved: both files kept');
      return 'failed';
    }
    if (!updated) {
      log.info(at, 'recording deleted while it was compressed: the gzip is removed');
      return (await this.remove(join(job.dir, gz), at)) ? 'row_gone' : 'failed';
    }
    return (await this.remove(src, at)) ? 'compressed' : 'failed';
  }

  private async remove(path: string, at: Record<string, string>): Promise<boolean> {
    try {
      await unlinkIfPresent(path);
      return true;
    } catch (err) {
      this.opts.log.error({ ...at, err, path }, 'removing a recording file failed');
      return false;
    }
  }
}

// A stereo 16-bit WAV recording streamed into an S3 multipart upload as the call goes, never to disk (zero data
// retention: Parley keeps no audio). Audio fills parts of `partSize` bytes in memory; each full part after the
// first is uploaded at once and its buffer reused. The first part (the 44-byte header and the first audio) is held
// until the end, when the sizes are known: its header is patched and it is uploaded last (S3 assembles parts by
// number, not by arrival). So the first part, the one filling and the one on the wire are in memory (plus
// `maxQueuedParts` full ones waiting, none by default); a part that fills while the wire is still busy with as many
// fails the upload rather than buffer without bound (at 16 kHz a 5 MiB part is 80 s of audio, the time its
// predecessor has to reach the bucket, retries included). A recording
// that never fills more than one part is one PutObject instead. On any failure the multipart upload is aborted
// (so the bucket keeps no orphaned parts) and nothing more is taken.
import type { Logger } from '../../log.js';
import { MIN_PART_BYTES, S3Error, type S3Client, type UploadedPart, type UploadTarget } from './s3-client.js';

/** RIFF/WAVE canonical header (Microsoft RIFF spec, WAVE_FORMAT_PCM): 44 bytes. */
export const WAV_HEADER_BYTES = 44;
const WAVE_FORMAT_PCM = 1;
const BYTES_PER_SAMPLE = 2;
export const WAV_CONTENT_TYPE = 'audio/wav';
/** Full parts allowed to wait behind the one being sent before the upload counts as unable to keep up. */
const DEFAULT_MAX_QUEUED_PARTS = 0;

type SinkState = 'writing' | 'finishing' | 'done' | 'failed' | 'aborted';

export interface WavSinkOptions {
  sampleRate: number;
  channels?: 1 | 2;
  /** Bytes per part (S3's minimum, 5 MiB, by default; never less). */
  partSize?: number;
  maxQueuedParts?: number;
  log?: Logger;
}

export interface SinkResult {
  key: string;
  bytes: number;
  /** Parts of the multipart upload; 1 when the recording went as one PutObject. */
  parts: number;
  durationMs: number;
  etag: string;
}

/** Writes a canonical WAV header for `dataBytes` of 16-bit PCM into `out` at 0. */
export function writeWavHeader(out: Uint8Array, sampleRate: number, channels: number, dataBytes: number): void {
  const v = new DataView(out.buffer, out.byteOffset, WAV_HEADER_BYTES);
  const ascii = (at: number, s: string) => {
    for (let i = 0; i < s.length; i++) v.setUint8(at + i, s.charCodeAt(i));
  };
  ascii(0, 'RIFF');
  v.setUint32(4, 36 + dataBytes, true);
  ascii(8, 'WAVE');
  ascii(12, 'fmt ');
  v.setUint32(16, 16, true);
  v.setUint16(20, WAVE_FORMAT_PCM, true);
  v.setUint16(22, channels, true);
  v.setUint32(24, sampleRate, true);
  v.setUint32(28, sampleRate * channels * BYTES_PER_SAMPLE, true);
  v.setUint16(32, channels * BYTES_PER_SAMPLE, true);
  v.setUint16(34, BYTES_PER_SAMPLE * 8, true);
  ascii(36, 'data');
  v.setUint32(40, dataBytes, true);
}

export class WavMultipartSink {
  private state: SinkState = 'writing';
  private error: Error | null = null;
  private readonly partSize: number;
  private readonly channels: number;
  private readonly maxQueuedParts: number;
  /** Part 1: header then audio, held until finish(). */
  private first: Buffer | null = null;
  private firstLen = WAV_HEADER_BYTES;
  private current: Buffer | null = null;
  private currentLen = 0;
  private readonly spare: Buffer[] = [];
  private nextPart = 2;
  /** Full parts handed to the chain and not yet uploaded (the one on the wire included). */
  private queued = 0;
  private uploadId: Promise<string> | null = null;
  /** The abort of the multipart upload, once one is under way (finish() and abort() wait for it). */
  private aborting: Promise<void> = Promise.resolve();
  private readonly parts: UploadedPart[] = [];
  /** Part uploads, one after another. */
  private chain: Promise<void> = Promise.resolve();
  private dataBytes = 0;
  private scratch = new DataView(new ArrayBuffer(0));

  constructor(
    private readonly client: S3Client,
    readonly target: UploadTarget,
    private readonly opts: WavSinkOptions,
  ) {
    this.partSize = Math.max(opts.partSize ?? MIN_PART_BYTES, MIN_PART_BYTES);
    this.channels = opts.channels ?? 2;
    this.maxQueuedParts = opts.maxQueuedParts ?? DEFAULT_MAX_QUEUED_PARTS;
  }

  /** Why the upload failed, once it has (audio written after that is dropped). */
  get failure(): Error | null {
    return this.error;
  }

  /** Full parts handed to the upload and not yet in the bucket. */
  get partsInFlight(): number {
    return this.queued;
  }

  get bytesWritten(): number {
    return WAV_HEADER_BYTES + this.dataBytes;
  }

  /** Interleaved little-endian 16-bit PCM (the WAV's data layout), any length of whole frames. */
  write(pcm: Uint8Array): void {
    let at = 0;
    while (at < pcm.length && this.state === 'writing') {
      const [buf, len] = this.room();
      const n = Math.min(pcm.length - at, buf.length - len);
      buf.set(pcm.subarray(at, at + n), len);
      this.advance(n);
      at += n;
    }
  }

  /**
   * A planar stereo block as the recorder keeps it (src/media/recording.ts: `blockPairs` left samples, then
   * `blockPairs` right ones), of which the first `pairs` of each half are written, interleaved.
   */
  writePlanar(block: Int16Array, pairs: number, blockPairs: number): void {
    if (this.state !== 'writing') return;
    const bytes = pairs * 2 * BYTES_PER_SAMPLE;
    if (this.scratch.byteLength < bytes) this.scratch = new DataView(new ArrayBuffer(bytes));
    const v = this.scratch;
    for (let i = 0; i < pairs; i++) {
      v.setInt16(i * 4, block[i], true);
      v.setInt16(i * 4 + 2, block[blockPairs + i], true);
    }
    this.write(new Uint8Array(v.buffer, 0, bytes));
  }

  /** The buffer audio goes into now and how much of it is filled. */
  private room(): [Buffer, number] {
    if (this.first === null) this.first = Buffer.allocUnsafe(this.partSize);
    if (this.firstLen < this.partSize) return [this.first, this.firstLen];
    if (this.current === null) {
      this.current = this.spare.pop() ?? Buffer.allocUnsafe(this.partSize);
      this.currentLen = 0;
    }
    return [this.current, this.currentLen];
  }

  private advance(n: number): void {
    this.dataBytes += n;
    if (this.firstLen < this.partSize) {
      this.firstLen += n;
      return;
    }
    this.currentLen += n;
    if (this.currentLen === this.partSize) {
      const full = this.current!;
      this.current = null;
      this.send(full, this.partSize);
    }
  }

  /** Queues a part for upload after those before it; the last one (`last`) is never refused. */
  private send(buf: Buffer, len: number, last = false): void {
    if (!last && this.queued > this.maxQueuedParts) {
      this.fail(
        new S3Error(
          `the upload of ${this.target.key} cannot keep up with the call: ${this.queued} parts waiting`,
          'SlowUpload',
          null,
        ),
      );
      return;
    }
    this.queued++;
    const partNumber = this.nextPart++;
    this.chain = this.chain.then(async () => {
      if (this.error) return;
      try {
        const id = await this.ensureUpload();
        this.parts.push(await this.client.uploadPart(this.target, id, partNumber, buf.subarray(0, len)));
        this.spare.push(buf);
      } catch (err) {
        this.fail(err as Error);
      } finally {
        this.queued--;
      }
    });
  }

  private ensureUpload(): Promise<string> {
    // After a failure no upload is started again (the one there was is being aborted).
    if (this.error) return Promise.reject(this.error);
    this.uploadId ??= this.client.createMultipartUpload(this.target, WAV_CONTENT_TYPE);
    return this.uploadId;
  }

  /** Stops taking audio and frees the buffers; the multipart upload, if one was started, is aborted. */
  private fail(err: Error): void {
    if (this.error) return;
    this.error = err;
    if (this.state === 'writing') this.state = 'failed';
    this.release();
    this.opts.log?.error({ err, key: this.target.key }, 'external storage: the recording upload failed; it is aborted');
    this.aborting = this.abortUpload();
  }

  private release(): void {
    this.first = null;
    this.current = null;
    this.spare.length = 0;
  }

  /** Aborts the multipart upload if one was started; never throws (a failed abort is logged). */
  private async abortUpload(): Promise<void> {
    const pending = this.uploadId;
    if (!pending) return;
    this.uploadId = null;
    let id: string;
    try {
      id = await pending;
    } catch {
      return; // it was never created: nothing to abort
    }
    try {
      await this.client.abortMultipartUpload(this.target, id);
    } catch (err) {
      this.opts.log?.error(
        { err, key: this.target.key },
        'external storage: aborting the multipart upload failed; its parts stay until the bucket expires them',
      );
    }
  }

  /**
   * Ends the recording: the last part, then part 1 with the final header, then the completion (or, for a recording
   * within one part, a single PutObject). Rejects with the upload's error, after aborting it.
   */
  async finish(): Promise<SinkResult> {
    if (this.state !== 'writing') {
      await this.aborting;
      throw this.error ?? new Error(`recording upload of ${this.target.key} already ${this.state}`);
    }
    this.state = 'finishing';
    const first = this.first ?? Buffer.alloc(WAV_HEADER_BYTES);
    writeWavHeader(first, this.opts.sampleRate, this.channels, this.dataBytes);
    const durationMs = (this.dataBytes / (this.channels * BYTES_PER_SAMPLE) / this.opts.sampleRate) * 1000;
    try {
      if (this.nextPart === 2 && this.currentLen === 0) {
        const etag = await this.client.putObject(this.target, first.subarray(0, this.firstLen), WAV_CONTENT_TYPE);
        return this.done({ key: this.target.key, bytes: this.firstLen, parts: 1, durationMs, etag });
      }
      if (this.current && this.currentLen > 0) {
        const last = this.current;
        this.current = null;
        this.send(last, this.currentLen, true);
      }
      await this.chain;
      if (this.error) throw this.error;
      const id = await this.ensureUpload();
      this.parts.push(await this.client.uploadPart(this.target, id, 1, first.subarray(0, this.firstLen)));
      const etag = await this.client.completeMultipartUpload(this.target, id, this.parts);
      return this.done({
        key: this.target.key,
        bytes: WAV_HEADER_BYTES + this.dataBytes,
        parts: this.parts.length,
        durationMs,
        etag,
      });
    } catch (err) {
      this.error ??= err as Error;
      this.state = 'failed';
      this.release();
      await this.aborting;
      await this.abortUpload();
      throw this.error;
    }
  }

  private done(r: SinkResult): SinkResult {
    this.state = 'done';
    this.release();
    return r;
  }

  /** Throws the recording away (the call ends without delivery): nothing more is taken, the upload is aborted. */
  async abort(): Promise<void> {
    if (this.state === 'done' || this.state === 'aborted') return;
    this.state = 'aborted';
    this.error ??= new Error('aborted');
    this.release();
    await this.chain;
    await this.aborting;
    await this.abortUpload();
  }
}

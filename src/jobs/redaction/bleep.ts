// Bleeping a recording: a 1 kHz tone at a moderate level (-12 dBFS) replaces the audio of given time spans, on the
// side that spoke (left = user, right = assistant, src/media/recording.ts) or on both channels. 16-bit PCM WAV,
// mono or stereo. Streamed a block at a time: in place (only the blocks a span touches are read and rewritten), or
// through a Transform (into a new file, or between a gunzip and a gzip for `.wav.gz`). A span's edges fade over a
// few milliseconds, so the tone starts and stops without a click.
import { open } from 'node:fs/promises';
import { Transform, type TransformCallback } from 'node:stream';
import type { AudioSpan } from './timing.js';

export const BLEEP_FREQUENCY_HZ = 1000;
/** Moderate: well below full scale, well above speech's quiet parts. */
export const BLEEP_LEVEL_DBFS = -12;
const BLEEP_AMPLITUDE = Math.round(32767 * 10 ** (BLEEP_LEVEL_DBFS / 20));
const FADE_MS = 5;
/** Frames per block of file I/O. */
const BLOCK_FRAMES = 8192;
/** A WAV whose chunks before `data` are longer than this is refused (ours have 36 bytes). */
const MAX_HEADER_BYTES = 64 * 1024;
const WAVE_FORMAT_PCM = 1;
const WAVE_FORMAT_EXTENSIBLE = 0xfffe;

export class BleepError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BleepError';
  }
}

export interface WavLayout {
  sampleRate: number;
  channels: number;
  /** Byte offset of the first sample. */
  dataOffset: number;
  /** Bytes of samples (the `data` chunk's size, or up to the end of the file for a stream-written header). */
  dataBytes: number;
}

/** Reads the RIFF chunks up to `data` (Microsoft RIFF spec); null when more bytes are needed. */
export function parseWavHeader(buf: Uint8Array, fileBytes = Infinity): WavLayout | null {
  const v = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  if (buf.length < 12) return null;
  const tag = (at: number) => String.fromCharCode(buf[at], buf[at + 1], buf[at + 2], buf[at + 3]);
  if (tag(0) !== 'RIFF' || tag(8) !== 'WAVE') throw new BleepError('not a RIFF/WAVE file');
  let at = 12;
  let fmt: { channels: number; sampleRate: number } | null = null;
  while (at + 8 <= buf.length) {
    const id = tag(at);
    const size = v.getUint32(at + 4, true);
    if (id === 'data') {
      if (!fmt) throw new BleepError('WAV data before its fmt chunk');
      const dataOffset = at + 8;
      const unknownSize = size === 0 || size === 0xffffffff;
      const dataBytes = unknownSize || dataOffset + size > fileBytes ? fileBytes - dataOffset : size;
      return { ...fmt, dataOffset, dataBytes };
    }
    if (at + 8 + size > buf.length) return null;
    if (id === 'fmt ') {
      const format = v.getUint16(at + 8, true);
      const channels = v.getUint16(at + 10, true);
      const sampleRate = v.getUint32(at + 12, true);
      const bits = v.getUint16(at + 22, true);
      const pcm =
        format === WAVE_FORMAT_PCM ||
        (format === WAVE_FORMAT_EXTENSIBLE && size >= 40 && v.getUint16(at + 32, true) === WAVE_FORMAT_PCM);
      if (!pcm || bits !== 16) throw new BleepError(`only 16-bit PCM WAV is bleeped (format ${format}, ${bits} bits)`);
      if (channels < 1 || channels > 2)
        throw new BleepError(`only mono or stereo WAV is bleeped (${channels} channels)`);
      fmt = { channels, sampleRate };
    }
    at += 8 + size + (size % 2); // RIFF chunks are padded to an even size
  }
  return null;
}

/** Frame ranges [start, end) to bleep on one channel, sorted and merged. */
type Ranges = [number, number][];

/** Each channel's frame ranges: a side's spans on its channel (a mono file has everything on its one channel). */
export function channelRanges(
  spans: AudioSpan[],
  layout: Pick<WavLayout, 'sampleRate' | 'channels'>,
  totalFrames: number,
): Ranges[] {
  const perChannel: Ranges[] = Array.from({ length: layout.channels }, () => []);
  for (const s of spans) {
    const start = Math.max(0, Math.floor((s.startMs * layout.sampleRate) / 1000));
    const end = Math.min(totalFrames, Math.ceil((s.endMs * layout.sampleRate) / 1000));
    if (end <= start) continue;
    const channels = layout.channels === 1 || s.side === 'both' ? [...perChannel.keys()] : [s.side === 'user' ? 0 : 1];
    for (const c of channels) perChannel[c].push([start, end]);
  }
  return perChannel.map((r) => {
    r.sort((a, b) => a[0] - b[0]);
    const merged: Ranges = [];
    for (const x of r) {
      const last = merged[merged.length - 1];
      if (last && x[0] <= last[1]) last[1] = Math.max(last[1], x[1]);
      else merged.push([x[0], x[1]]);
    }
    return merged;
  });
}

/**
 * Applies the tone to interleaved 16-bit samples in `buf` (little-endian) holding `frames` frames that start at
 * absolute frame `first`; returns the frames changed on any channel. The tone's phase follows the absolute frame,
 * so a span crossing blocks is one continuous tone.
 */
export function toneInto(buf: Uint8Array, first: number, frames: number, ranges: Ranges[], sampleRate: number): number {
  const v = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const channels = ranges.length;
  const fade = Math.max(1, Math.round((FADE_MS * sampleRate) / 1000));
  const step = (2 * Math.PI * BLEEP_FREQUENCY_HZ) / sampleRate;
  let changed = 0;
  for (let c = 0; c < channels; c++) {
    for (const [start, end] of ranges[c]) {
      const from = Math.max(start, first);
      const to = Math.min(end, first + frames);
      for (let f = from; f < to; f++) {
        const at = ((f - first) * channels + c) * 2;
        const gain = Math.min(1, (f - start + 1) / fade, (end - f) / fade);
        const tone = BLEEP_AMPLITUDE * Math.sin(step * f);
        const mixed = (1 - gain) * v.getInt16(at, true) + gain * tone;
        v.setInt16(at, Math.round(mixed), true);
      }
      if (to > from) changed += to - from;
    }
  }
  return changed;
}

/** What a bleep did: frames changed (summed over channels) and the layout it found. */
export interface BleepResult {
  framesBleeped: number;
  layout: WavLayout;
}

/** Bleeps a `.wav` file in place, reading and rewriting only the blocks the spans touch. */
export async function bleepWavInPlace(path: string, spans: AudioSpan[]): Promise<BleepResult> {
  const file = await open(path, 'r+');
  try {
    const size = (await file.stat()).size;
    const head = Buffer.alloc(Math.min(size, MAX_HEADER_BYTES));
    await file.read(head, 0, head.length, 0);
    const layout = parseWavHeader(head, size);
    if (!layout) throw new BleepError(`${path}: no data chunk in the first ${MAX_HEADER_BYTES} bytes`);
    const frameBytes = layout.channels * 2;
    const totalFrames = Math.floor(layout.dataBytes / frameBytes);
    const ranges = channelRanges(spans, layout, totalFrames);
    const block = Buffer.alloc(BLOCK_FRAMES * frameBytes);
    const touched = new Set<number>();
    for (const r of ranges)
      for (const [s, e] of r) for (let b = Math.floor(s / BLOCK_FRAMES); b * BLOCK_FRAMES < e; b++) touched.add(b);
    let framesBleeped = 0;
    for (const b of [...touched].sort((x, y) => x - y)) {
      const first = b * BLOCK_FRAMES;
      const frames = Math.min(BLOCK_FRAMES, totalFrames - first);
      const offset = layout.dataOffset + first * frameBytes;
      const { bytesRead } = await file.read(block, 0, frames * frameBytes, offset);
      if (bytesRead !== frames * frameBytes) throw new BleepError(`${path}: short read at byte ${offset}`);
      framesBleeped += toneInto(block, first, frames, ranges, layout.sampleRate);
      await file.write(block, 0, frames * frameBytes, offset);
    }
    await file.sync();
    return { framesBleeped, layout };
  } finally {
    await file.close();
  }
}

/**
 * A WAV byte stream in, the same stream bleeped out: the header passes unchanged, the samples through the tone, a
 * block at a time (a frame split across chunks is held until it is whole). `result` is set when it has ended.
 */
export class WavBleepTransform extends Transform {
  private header: Buffer | null = Buffer.alloc(0);
  private layout: WavLayout | null = null;
  private ranges: Ranges[] = [];
  /** Data bytes passed so far. */
  private position = 0;
  private carry: Buffer = Buffer.alloc(0);
  private framesBleeped = 0;
  result: BleepResult | null = null;

  constructor(private readonly spans: AudioSpan[]) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    try {
      if (this.header) {
        this.header = Buffer.concat([this.header, chunk]);
        const layout = parseWavHeader(this.header);
        if (!layout) {
          if (this.header.length > MAX_HEADER_BYTES)
            throw new BleepError(`no data chunk in the first ${MAX_HEADER_BYTES} bytes`);
          return done();
        }
        // The size in the header may be unknown (0): then the samples run to the end of the stream.
        const known =
          layout.dataBytes !== Infinity && layout.dataBytes > 0 ? layout.dataBytes : Number.MAX_SAFE_INTEGER;
        this.layout = { ...layout, dataBytes: known };
        this.ranges = channelRanges(this.spans, layout, Math.floor(known / (layout.channels * 2)));
        const rest = this.header.subarray(layout.dataOffset);
        this.push(this.header.subarray(0, layout.dataOffset));
        this.header = null;
        chunk = rest;
      }
      this.samples(chunk);
      done();
    } catch (err) {
      done(err as Error);
    }
  }

  private samples(chunk: Buffer): void {
    const layout = this.layout!;
    const frameBytes = layout.channels * 2;
    // Bytes after the data chunk (trailing chunks) pass unchanged.
    const inData = Math.max(0, Math.min(chunk.length, layout.dataBytes - this.position - this.carry.length));
    let data =
      this.carry.length > 0 ? Buffer.concat([this.carry, chunk.subarray(0, inData)]) : chunk.subarray(0, inData);
    const whole = data.length - (data.length % frameBytes);
    this.carry = Buffer.from(data.subarray(whole));
    data = data.subarray(0, whole);
    if (data.length > 0) {
      const copy = Buffer.from(data);
      this.framesBleeped += toneInto(
        copy,
        this.position / frameBytes,
        data.length / frameBytes,
        this.ranges,
        layout.sampleRate,
      );
      this.position += data.length;
      this.push(copy);
    }
    if (inData < chunk.length) this.push(chunk.subarray(inData));
  }

  override _flush(done: TransformCallback): void {
    if (this.header) return done(new BleepError('the stream ended before the WAV data chunk'));
    if (this.carry.length > 0) this.push(this.carry);
    this.result = {
      framesBleeped: this.framesBleeped,
      layout: { ...this.layout!, dataBytes: this.position + this.carry.length },
    };
    done();
  }
}

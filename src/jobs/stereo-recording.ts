// Reading a stored conversation recording (src/media/recording.ts: one stereo 16-bit PCM WAV, left the user, right
// the assistant; stored as `.wav` or `.wav.gz`) as windows of each side apart, streamed: a long call is never held
// in memory whole.
import { createGunzip } from 'node:zlib';
import { pipeline, type Readable } from 'node:stream';

/** RIFF/WAVE (Microsoft RIFF spec): the 12-byte file header, then chunks of an 8-byte header (id, size) and a body. */
const RIFF_HEADER_BYTES = 12;
const CHUNK_HEADER_BYTES = 8;
const WAVE_FORMAT_PCM = 1;
const CHANNELS = 2;
const BITS_PER_SAMPLE = 16;
/** One stereo frame: a 16-bit sample per side. */
const FRAME_BYTES = 4;
/** Chunks before `data` (fmt, LIST, ...) larger than this together are not a recording of ours. */
const MAX_HEADER_BYTES = 1 << 20;
/** A `data` size meaning "up to the end of the file" (a writer that never patched it). */
const DATA_SIZE_UNKNOWN = [0, 0xffffffff];

export class RecordingFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RecordingFormatError';
  }
}

/** A window of the recording: `start` samples from its beginning, each side's samples (as many on both). */
export interface StereoWindow {
  sampleRate: number;
  start: number;
  user: Int16Array;
  assistant: Int16Array;
}

interface Header {
  sampleRate: number;
  /** Offset of the first data byte in the bytes read so far. */
  dataOffset: number;
  /** Bytes of data, or Infinity when the header does not say. */
  dataBytes: number;
}

/** The header, once the bytes read so far hold all of it (null: not yet). Throws when it is not ours. */
function parseHeader(head: Buffer): Header | null {
  if (head.length < RIFF_HEADER_BYTES) return null;
  if (head.toString('latin1', 0, 4) !== 'RIFF' || head.toString('latin1', 8, 12) !== 'WAVE') {
    throw new RecordingFormatError('not a RIFF/WAVE file');
  }
  let sampleRate = 0;
  for (let at = RIFF_HEADER_BYTES; at + CHUNK_HEADER_BYTES <= head.length;) {
    const id = head.toString('latin1', at, at + 4);
    const size = head.readUInt32LE(at + 4);
    const body = at + CHUNK_HEADER_BYTES;
    if (id === 'data') {
      if (sampleRate === 0) throw new RecordingFormatError('data before the fmt chunk');
      return { sampleRate, dataOffset: body, dataBytes: DATA_SIZE_UNKNOWN.includes(size) ? Infinity : size };
    }
    if (id === 'fmt ') {
      if (body + 16 > head.length) return null;
      const format = head.readUInt16LE(body);
      const channels = head.readUInt16LE(body + 2);
      const bits = head.readUInt16LE(body + 14);
      if (format !== WAVE_FORMAT_PCM || channels !== CHANNELS || bits !== BITS_PER_SAMPLE) {
        throw new RecordingFormatError(
          `expected stereo 16-bit PCM, found format ${format}, ${channels} channels, ${bits} bits`,
        );
      }
      sampleRate = head.readUInt32LE(body + 4);
    }
    // RIFF: a chunk of odd size is followed by a pad byte.
    at = body + size + (size & 1);
  }
  if (head.length > MAX_HEADER_BYTES) throw new RecordingFormatError('no data chunk in the first MiB');
  return null;
}

/** The file's bytes: a `.wav` as it is, a `.wav.gz` through gunzip (a read error fails the gunzip's reader too). */
export function recordingBytes(file: Readable, format: 'wav' | 'wav.gz'): AsyncIterable<Buffer> {
  if (format === 'wav') return file;
  // The error reaches the reader of the returned stream, which pipeline destroys with it.
  return pipeline(file, createGunzip(), () => {});
}

/**
 * The recording in windows of at most `windowSamples` samples per side, in order; the last one shorter. A window's
 * arrays are reused for the next: read them before asking for it. Throws RecordingFormatError for a file that is
 * not a stereo 16-bit PCM WAV.
 */
export async function* stereoWindows(
  bytes: AsyncIterable<Buffer>,
  windowSamples: number,
): AsyncGenerator<StereoWindow> {
  const user = new Int16Array(windowSamples);
  const assistant = new Int16Array(windowSamples);
  let header: Header | null = null;
  let head: Buffer = Buffer.alloc(0);
  /** Bytes of an incomplete frame carried to the next chunk. */
  let carry: Buffer = Buffer.alloc(0);
  let dataLeft = 0;
  let fill = 0;
  let start = 0;
  for await (const chunk of bytes) {
    let data: Buffer;
    if (!header) {
      head = Buffer.concat([head, chunk]);
      header = parseHeader(head);
      if (!header) continue;
      dataLeft = header.dataBytes;
      data = head.subarray(header.dataOffset);
    } else {
      data = carry.length > 0 ? Buffer.concat([carry, chunk]) : chunk;
    }
    if (dataLeft < data.length) data = data.subarray(0, dataLeft);
    const frames = Math.floor(data.length / FRAME_BYTES);
    for (let f = 0; f < frames; f++) {
      user[fill] = data.readInt16LE(f * FRAME_BYTES);
      assistant[fill] = data.readInt16LE(f * FRAME_BYTES + 2);
      if (++fill === windowSamples) {
        yield { sampleRate: header.sampleRate, start, user, assistant };
        start += fill;
        fill = 0;
      }
    }
    dataLeft -= frames * FRAME_BYTES;
    carry = Buffer.from(data.subarray(frames * FRAME_BYTES));
    if (dataLeft <= 0) break;
  }
  if (!header) throw new RecordingFormatError('the file ends before its data');
  if (fill > 0)
    yield {
      sampleRate: header.sampleRate,
      start,
      user: user.subarray(0, fill),
      assistant: assistant.subarray(0, fill),
    };
}

/** The largest absolute sample value of `pcm`. */
export function peak(pcm: Int16Array): number {
  let max = 0;
  for (let i = 0; i < pcm.length; i++) {
    const v = pcm[i] < 0 ? -pcm[i] : pcm[i];
    if (v > max) max = v;
  }
  return max;
}

// The codec registry: one decoder and one encoder per wire format, writing into caller-owned buffers.
// G.711 goes through the native addon (src/media/native/g711.ts); PCM formats are little-endian 16-bit (the STS
// socket's raw audio); Opus through the lazily loaded @discordjs/opus (browser clients only).
import { formatInfo, LITTLE_ENDIAN_HOST, type AudioFormat } from './format.js';
import { alawDecodeInto, alawEncodeInto, mulawDecodeInto, mulawEncodeInto } from './native/g711.js';
import { OpusCodec } from './opus.js';

/** memcpy from part of a Uint8Array (Node's Buffer copy works on any Uint8Array; it makes a view of the part). */
const copyBytes: Buffer['copy'] = (Buffer.prototype as Buffer).copy;

/**
 * A view of the whole ArrayBuffer under the output array of a codec, and that array's byteOffset, read again only
 * when another array is given (each codec writes into one array its stream owns): the per-frame path allocates
 * nothing and reads no `buffer` or `byteOffset` (getter calls in V8's optimized code). TypedArray set() from a
 * whole array of the same type is a memcpy without a view.
 */
class BufferView<T extends Uint8Array | Int16Array> {
  private array: ArrayBufferView | undefined;
  private view: T | undefined;
  /** byteOffset of the array last given to of(). */
  byteOffset = 0;
  constructor(private readonly make: (buffer: ArrayBufferLike) => T) {}
  of(array: ArrayBufferView): T {
    if (array !== this.array) {
      this.array = array;
      this.view = this.make(array.buffer);
      this.byteOffset = array.byteOffset;
    }
    return this.view!;
  }
}

export interface Decoder {
  readonly format: AudioFormat;
  readonly sampleRate: number;
  /**
   * The payload's bytes are its samples (16-bit little-endian PCM on a little-endian host): an Int16Array view of
   * a payload at an even byte offset is what decodeInto would write.
   */
  readonly samplesInPlace: boolean;
  /** Decodes buf[offset, offset + length) into out; returns the number of samples written. */
  decodeInto(buf: Uint8Array, length: number, out: Int16Array, offset?: number): number;
  /** Largest sample count a payload of `bytes` bytes decodes to. */
  maxSamples(bytes: number): number;
}

export interface Encoder {
  readonly format: AudioFormat;
  readonly sampleRate: number;
  /** Encodes pcm into out; returns the number of bytes written. */
  encodeInto(pcm: Int16Array, out: Uint8Array): number;
}

/**
 * Fixed views of the first n bytes of one buffer, made once per distinct n, so decoding a payload of any length
 * held in that buffer allocates nothing after the first packet of that length.
 */
class PrefixViews {
  private readonly views = new Map<number, Uint8Array>();
  private owner: Uint8Array | undefined;
  of(buf: Uint8Array, n: number): Uint8Array {
    if (n === buf.length) return buf;
    if (buf !== this.owner) {
      this.views.clear();
      this.owner = buf;
    }
    let v = this.views.get(n);
    if (!v) {
      v = buf.subarray(0, n);
      this.views.set(n, v);
    }
    return v;
  }
}

class G711Decoder implements Decoder {
  readonly sampleRate = 8000;
  readonly samplesInPlace = false;
  constructor(readonly format: 'mulaw_8000' | 'alaw_8000') {}
  decodeInto(buf: Uint8Array, length: number, out: Int16Array, offset = 0): number {
    return this.format === 'mulaw_8000'
      ? mulawDecodeInto(buf, out, offset, length)
      : alawDecodeInto(buf, out, offset, length);
  }
  maxSamples(bytes: number): number {
    return bytes;
  }
}

class G711Encoder implements Encoder {
  readonly sampleRate = 8000;
  constructor(readonly format: 'mulaw_8000' | 'alaw_8000') {}
  encodeInto(pcm: Int16Array, out: Uint8Array): number {
    return this.format === 'mulaw_8000' ? mulawEncodeInto(pcm, out) : alawEncodeInto(pcm, out);
  }
}

/**
 * 16-bit little-endian PCM (the STS socket's pcm_* formats). On a little-endian host decoding is a memcpy into
 * the bytes of `out`; a big-endian host assembles each sample from its two bytes. Exported, as PcmEncoder, for
 * tests of both paths; createDecoder is how the rest of the code gets one.
 */
export class PcmDecoder implements Decoder {
  private readonly outBytes = new BufferView((b) => new Uint8Array(b));
  readonly samplesInPlace: boolean;
  constructor(
    readonly format: AudioFormat,
    readonly sampleRate: number,
    private readonly littleEndianHost = LITTLE_ENDIAN_HOST,
  ) {
    this.samplesInPlace = littleEndianHost;
  }
  decodeInto(buf: Uint8Array, length: number, out: Int16Array, offset = 0): number {
    const n = length >> 1;
    if (n > out.length) throw new RangeError(`PCM payload of ${n} samples into ${out.length}`);
    // A payload running past buf (a caller's bug) takes the loop, which reads the missing bytes as zeros.
    if (this.littleEndianHost && offset + 2 * n <= buf.length) {
      // The whole buffer (an STS message) is set() as it is; part of one goes through a view Buffer copy makes.
      const bytes = this.outBytes.of(out);
      if (offset === 0 && 2 * n === buf.length) bytes.set(buf, this.outBytes.byteOffset);
      else copyBytes.call(buf, bytes, this.outBytes.byteOffset, offset, offset + 2 * n);
      return n;
    }
    for (let i = 0, j = offset; i < n; i++, j += 2) {
      const v = buf[j] | (buf[j + 1] << 8);
      out[i] = v > 32767 ? v - 65536 : v;
    }
    return n;
  }
  maxSamples(bytes: number): number {
    return bytes >> 1;
  }
}

/**
 * 16-bit little-endian PCM out: on a little-endian host a memcpy of `pcm` (whole or a view) into a 16-bit view of
 * `out`'s buffer (made once per buffer), else byte by byte (also for an `out` at an odd byte offset).
 */
export class PcmEncoder implements Encoder {
  private readonly outSamples = new BufferView((b) => new Int16Array(b, 0, b.byteLength >> 1));
  constructor(
    readonly format: AudioFormat,
    readonly sampleRate: number,
    private readonly littleEndianHost = LITTLE_ENDIAN_HOST,
  ) {}
  encodeInto(pcm: Int16Array, out: Uint8Array): number {
    const n = pcm.length;
    if (n * 2 > out.length) throw new RangeError(`PCM frame of ${n} samples into ${out.length} bytes`);
    if (this.littleEndianHost) {
      const samples = this.outSamples.of(out);
      const at = this.outSamples.byteOffset;
      if ((at & 1) === 0) {
        samples.set(pcm, at >> 1);
        return n * 2;
      }
    }
    for (let i = 0, j = 0; i < n; i++, j += 2) {
      const v = pcm[i];
      out[j] = v & 0xff;
      out[j + 1] = (v >> 8) & 0xff;
    }
    return n * 2;
  }
}

/** Opus decoder/encoder (one codec state per stream); allocation inside the library, edge use only. */
class OpusDecoder implements Decoder {
  readonly format = 'opus_48000' as const;
  readonly sampleRate = 48000;
  readonly samplesInPlace = false;
  private readonly codec = new OpusCodec();
  private readonly views = new PrefixViews();
  decodeInto(buf: Uint8Array, length: number, out: Int16Array, offset = 0): number {
    // Edge use (browser clients): a payload inside a larger buffer is viewed once per packet.
    const packet = offset === 0 ? this.views.of(buf, length) : buf.subarray(offset, offset + length);
    return this.codec.decodeInto(packet, out);
  }
  maxSamples(): number {
    return 5760; // RFC 6716 2.1.4: at most 120 ms per packet at 48 kHz
  }
}

class OpusEncoder implements Encoder {
  readonly format = 'opus_48000' as const;
  readonly sampleRate = 48000;
  private readonly codec = new OpusCodec();
  encodeInto(pcm: Int16Array, out: Uint8Array): number {
    const packet = this.codec.encode(pcm);
    if (packet.length > out.length) throw new RangeError(`opus packet of ${packet.length} bytes into ${out.length}`);
    out.set(packet, 0);
    return packet.length;
  }
}

export function createDecoder(format: AudioFormat): Decoder {
  const info = formatInfo(format);
  switch (info.encoding) {
    case 'mulaw':
    case 'alaw':
      return new G711Decoder(format as 'mulaw_8000' | 'alaw_8000');
    case 'pcm':
      return new PcmDecoder(format, info.sampleRate);
    case 'opus':
      return new OpusDecoder();
  }
}

export function createEncoder(format: AudioFormat): Encoder {
  const info = formatInfo(format);
  switch (info.encoding) {
    case 'mulaw':
    case 'alaw':
      return new G711Encoder(format as 'mulaw_8000' | 'alaw_8000');
    case 'pcm':
      return new PcmEncoder(format, info.sampleRate);
    case 'opus':
      return new OpusEncoder();
  }
}

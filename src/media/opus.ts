// Opus for browser clients (RFC 6716), through @discordjs/opus, loaded only when a conversation asks for it:
// phone calls never pay for it. One codec per stream (encoder and decoder state are per stream).
import { createRequire } from 'node:module';
import type { OpusEncoder as OpusEncoderType } from '@discordjs/opus';

/** RFC 7587 4.1: Opus RTP runs at 48 kHz whatever the coded bandwidth. */
export const OPUS_SAMPLE_RATE = 48000;
/** 20 ms at 48 kHz, mono. */
export const OPUS_FRAME_SAMPLES = 960;
/** A voice bitrate; RFC 7587 7.1 suggests 8-32 kbit/s for wideband/fullband speech. */
export const OPUS_DEFAULT_BITRATE = 32000;

export class OpusUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`@discordjs/opus could not be loaded: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = 'OpusUnavailableError';
  }
}

type OpusModule = { OpusEncoder: new (rate: number, channels: number) => OpusEncoderType };
let loaded: OpusModule | undefined;

function load(): OpusModule {
  if (loaded) return loaded;
  try {
    const require = createRequire(import.meta.url);
    loaded = require('@discordjs/opus') as OpusModule;
  } catch (err) {
    throw new OpusUnavailableError(err);
  }
  return loaded;
}

/** A mono Opus encoder/decoder pair for one stream. Edge code: the library allocates a Buffer per call. */
export class OpusCodec {
  private readonly codec: OpusEncoderType;

  constructor(bitrate: number = OPUS_DEFAULT_BITRATE) {
    this.codec = new (load().OpusEncoder)(OPUS_SAMPLE_RATE, 1);
    this.codec.setBitrate(bitrate);
  }

  /** Encodes one 20 ms frame (960 samples at 48 kHz) into one Opus packet. */
  encode(frame: Int16Array): Uint8Array {
    if (frame.length !== OPUS_FRAME_SAMPLES)
      throw new RangeError(`opus frame must be ${OPUS_FRAME_SAMPLES} samples, got ${frame.length}`);
    return this.codec.encode(Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength));
  }

  /** Decodes one Opus packet into `out`; returns the number of samples written. */
  decodeInto(packet: Uint8Array, out: Int16Array): number {
    const pcm = this.codec.decode(Buffer.from(packet.buffer, packet.byteOffset, packet.byteLength));
    const n = pcm.length >> 1;
    if (n > out.length) throw new RangeError(`decoded ${n} samples into a buffer of ${out.length}`);
    if (pcm.byteOffset % 2 === 0) out.set(new Int16Array(pcm.buffer, pcm.byteOffset, n));
    else for (let i = 0; i < n; i++) out[i] = pcm.readInt16LE(i * 2);
    return n;
  }
}

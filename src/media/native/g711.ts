// G.711 (ITU-T G.711, tables from the ITU-T G.191 reference), PCM conversion, gain and mixing
// (native/src/bind_g711.cc).
import { nativeAddon } from './addon.js';

interface G711Functions {
  mulawEncode(pcm: Int16Array, out: Uint8Array): number;
  mulawDecode(payload: Uint8Array, out: Int16Array, offset: number, length: number): number;
  alawEncode(pcm: Int16Array, out: Uint8Array): number;
  alawDecode(payload: Uint8Array, out: Int16Array, offset: number, length: number): number;
  pcm16ToFloat32(pcm: Int16Array, out: Float32Array): number;
  float32ToPcm16(samples: Float32Array, out: Int16Array): number;
  applyGain(pcm: Int16Array, gain: number): void;
  mixInto(dst: Int16Array, src: Int16Array, gain: number): void;
  encodeBatch(codec: number, frames: Int16Array[], outs: Uint8Array[]): number;
}

const addon = nativeAddon() as G711Functions;

/** Codec ids of the batch entry points. */
export const G711_MULAW = 0;
export const G711_ALAW = 1;
export type G711Codec = typeof G711_MULAW | typeof G711_ALAW;

/** Encodes pcm to mu-law bytes in out (out.length >= pcm.length); returns the bytes written. */
export function mulawEncodeInto(pcm: Int16Array, out: Uint8Array): number {
  return addon.mulawEncode(pcm, out);
}

/**
 * Decodes mu-law bytes payload[offset, offset + length) (default: all) to PCM16 in out (out.length >= length);
 * returns the samples written.
 */
export function mulawDecodeInto(
  payload: Uint8Array,
  out: Int16Array,
  offset = 0,
  length = payload.length - offset,
): number {
  return addon.mulawDecode(payload, out, offset, length);
}

/** Encodes pcm to A-law bytes in out; returns the bytes written. */
export function alawEncodeInto(pcm: Int16Array, out: Uint8Array): number {
  return addon.alawEncode(pcm, out);
}

/** Decodes A-law bytes payload[offset, offset + length) (default: all) to PCM16 in out; returns the samples written. */
export function alawDecodeInto(
  payload: Uint8Array,
  out: Int16Array,
  offset = 0,
  length = payload.length - offset,
): number {
  return addon.alawDecode(payload, out, offset, length);
}

/**
 * Encodes frames[i] into outs[i] with one codec for many streams in one native call (one crossing into C++ per
 * tick instead of one per stream); returns the frame count.
 */
export function encodeBatch(codec: G711Codec, frames: Int16Array[], outs: Uint8Array[]): number {
  return addon.encodeBatch(codec, frames, outs);
}

/** int16 -> float32 in [-1, 1) (x / 32768); returns the samples written. */
export function pcm16ToFloat32Into(pcm: Int16Array, out: Float32Array): number {
  return addon.pcm16ToFloat32(pcm, out);
}

/** float32 -> int16 (x * 32768, rounded, saturating); returns the samples written. */
export function float32ToPcm16Into(samples: Float32Array, out: Int16Array): number {
  return addon.float32ToPcm16(samples, out);
}

/** Multiplies pcm by gain in place (rounded, saturating). */
export function applyGain(pcm: Int16Array, gain: number): void {
  addon.applyGain(pcm, gain);
}

/** dst += src * gain (rounded, saturating); src and dst must have the same length. */
export function mixInto(dst: Int16Array, src: Int16Array, gain = 1): void {
  addon.mixInto(dst, src, gain);
}

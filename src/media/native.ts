// The one loader of the native DSP addon (native/build/Release/parley_dsp.node) and its typed wrappers.
//
// Conventions (see native/src/handle.h):
// - Frames are Int16Array PCM views; outputs are caller-owned buffers written in place ("...Into" returns the
//   number of samples or bytes written). Nothing here allocates per frame.
// - Stateful modules (Resampler, Vad, DtmfDetector, ToneDetector) hold an opaque native handle: all native memory
//   is allocated in the constructor and freed by destroy() (or by the garbage collector if destroy() is never
//   called). Using a destroyed module throws.
// - Sizes are checked at the N-API boundary: a wrong array type is a TypeError, a too-short output a RangeError.
// - Outbound work for many streams goes through the batch functions (encodeBatch, resampleBatch,
//   resampleEncodeBatch): one crossing into C++ per tick instead of one per stream.
import { createRequire } from 'node:module';

const ADDON_PATH = '../../native/build/Release/parley_dsp.node';

/** Raised when the addon cannot be loaded (built by `npm install`). */
export class NativeDspLoadError extends Error {
  override readonly name = 'NativeDspLoadError';
}

type Handle = { readonly __nativeHandle: unique symbol };

interface Addon {
  mulawEncode(pcm: Int16Array, out: Uint8Array): number;
  mulawDecode(payload: Uint8Array, out: Int16Array): number;
  alawEncode(pcm: Int16Array, out: Uint8Array): number;
  alawDecode(payload: Uint8Array, out: Int16Array): number;
  pcm16ToFloat32(pcm: Int16Array, out: Float32Array): number;
  float32ToPcm16(samples: Float32Array, out: Int16Array): number;
  applyGain(pcm: Int16Array, gain: number): void;
  mixInto(dst: Int16Array, src: Int16Array, gain: number): void;
  encodeBatch(codec: number, frames: Int16Array[], outs: Uint8Array[]): number;
}

function load(): Addon {
  const require = createRequire(import.meta.url);
  try {
    return require(ADDON_PATH) as Addon;
  } catch (err) {
    throw new NativeDspLoadError(`native DSP addon not loadable from ${ADDON_PATH} (build it with npm install)`, {
      cause: err,
    });
  }
}

const addon = load();

// ---- G.711 (ITU-T G.711, tables from the ITU-T G.191 reference) ----

/** Codec ids of the batch entry points. */
export const G711_MULAW = 0;
export const G711_ALAW = 1;
export type G711Codec = typeof G711_MULAW | typeof G711_ALAW;

/** Encodes pcm to mu-law bytes in out (out.length >= pcm.length); returns the bytes written. */
export function mulawEncodeInto(pcm: Int16Array, out: Uint8Array): number {
  return addon.mulawEncode(pcm, out);
}

/** Decodes mu-law bytes to PCM16 in out (out.length >= payload.length); returns the samples written. */
export function mulawDecodeInto(payload: Uint8Array, out: Int16Array): number {
  return addon.mulawDecode(payload, out);
}

/** Encodes pcm to A-law bytes in out; returns the bytes written. */
export function alawEncodeInto(pcm: Int16Array, out: Uint8Array): number {
  return addon.alawEncode(pcm, out);
}

/** Decodes A-law bytes to PCM16 in out; returns the samples written. */
export function alawDecodeInto(payload: Uint8Array, out: Int16Array): number {
  return addon.alawDecode(payload, out);
}

/** Encodes frames[i] into outs[i] with one codec for many streams in one native call; returns the frame count. */
export function encodeBatch(codec: G711Codec, frames: Int16Array[], outs: Uint8Array[]): number {
  return addon.encodeBatch(codec, frames, outs);
}

// ---- PCM conversion, gain, mixing ----

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

// Sample-rate conversion, alone and batched with G.711 encoding (native/src/bind_resampler.cc, resampler.h).
import { nativeAddon, type Handle, type HandleFunctions, type HandleRef, type HandleSlot } from './addon.js';
import type { G711Codec } from './g711.js';

interface ResamplerFunctions extends HandleFunctions {
  createResampler(fromHz: number, toHz: number, maxFrame: number): Handle;
  resamplerProcess(handle: HandleRef, input: Int16Array, out: Int16Array): number;
  resamplerMaxOutput(handle: HandleRef, n: number): number;
  resamplerDelay(handle: HandleRef): number;
  resamplerReset(handle: HandleRef): void;
  resampleBatch(handles: HandleRef[], inputs: Int16Array[], outs: Int16Array[], written: Int32Array): void;
  resampleEncodeBatch(
    codec: number,
    handles: HandleRef[],
    inputs: Int16Array[],
    scratch: Int16Array,
    outs: Uint8Array[],
    written: Int32Array,
  ): void;
  createResampleEncodeGroup(codec: number, handles: Handle[], inputs: Int16Array[], outs: Uint8Array[]): Handle;
  resampleEncodeGroupRun(group: Handle, written: Int32Array): void;
}

const addon = nativeAddon() as ResamplerFunctions;

/** The sample rates the resampler converts between (every pair). */
export const RESAMPLER_RATES = [8000, 16000, 22050, 24000, 44100, 48000] as const;
export type ResamplerRate = (typeof RESAMPLER_RATES)[number];

/**
 * A streaming polyphase resampler (rational L/M, Kaiser-windowed sinc: pass band to 0.42 of the lower rate, 80 dB
 * design attenuation from the output Nyquist frequency when down-sampling and from the first image of the pass
 * band when up-sampling; see native/src/resampler.h). State is kept across calls: chunking the input any way gives
 * the same output as one call. Output lags input by `delaySamples` input samples.
 */
export class Resampler {
  /** @internal the native handle, for ResampleEncodeGroup */
  readonly handle: Handle;
  /** @internal its slot, for the batch functions */
  readonly slot: HandleSlot;
  /** Input samples of group delay (half the filter length per phase). */
  readonly delaySamples: number;

  constructor(
    readonly fromHz: ResamplerRate,
    readonly toHz: ResamplerRate,
    /** Largest input (samples) one process() call accepts. */
    readonly maxFrame: number,
  ) {
    this.handle = addon.createResampler(fromHz, toHz, maxFrame);
    this.slot = addon.handleSlot(this.handle);
    this.delaySamples = addon.resamplerDelay(this.slot);
  }

  /** The largest number of samples process() may write for n input samples (size `out` with it). */
  maxOutput(n: number): number {
    return addon.resamplerMaxOutput(this.slot, n);
  }

  /** Resamples input (at most maxFrame samples) into out; returns the number of samples written. */
  process(input: Int16Array, out: Int16Array): number {
    return addon.resamplerProcess(this.slot, input, out);
  }

  /** Forgets the carried history (a new, unrelated stream). */
  reset(): void {
    addon.resamplerReset(this.slot);
  }

  /** Frees the native state; the resampler must not be used afterwards. */
  destroy(): void {
    addon.destroy(this.handle);
  }
}

// Reused by the batch calls to pass slots without allocating (calls are synchronous, so one array serves all).
const batchSlots: HandleSlot[] = [];

function slotsOf(resamplers: readonly Resampler[]): HandleSlot[] {
  batchSlots.length = resamplers.length;
  for (let i = 0; i < resamplers.length; i++) batchSlots[i] = resamplers[i].slot;
  return batchSlots;
}

/**
 * Resamples inputs[i] with resamplers[i] into outs[i] for many streams in one native call (one crossing into C++
 * per tick instead of one per stream); written[i] = count.
 */
export function resampleBatch(
  resamplers: readonly Resampler[],
  inputs: Int16Array[],
  outs: Int16Array[],
  written: Int32Array,
): void {
  addon.resampleBatch(slotsOf(resamplers), inputs, outs, written);
}

/**
 * The outbound tail for many streams in one native call: resample inputs[i] to the wire rate with resamplers[i]
 * and G.711-encode it into outs[i]; written[i] = bytes. scratch must hold maxOutput of the largest input.
 */
export function resampleEncodeBatch(
  codec: G711Codec,
  resamplers: readonly Resampler[],
  inputs: Int16Array[],
  scratch: Int16Array,
  outs: Uint8Array[],
  written: Int32Array,
): void {
  addon.resampleEncodeBatch(codec, slotsOf(resamplers), inputs, scratch, outs, written);
}

/**
 * The outbound tail of a fixed set of streams: resample inputs[i] with resamplers[i] and G.711-encode it into
 * outs[i], for all of them in one native call per tick with no per-stream argument passing (the arrays are
 * registered once, here, and read and written in place). Build a new group when streams join or leave, and
 * destroy the old one; destroying a member resampler while the group runs makes run() throw.
 */
export class ResampleEncodeGroup {
  private readonly handle: Handle;
  /** After run(): written[i] = payload bytes of stream i. */
  readonly written: Int32Array;

  constructor(codec: G711Codec, resamplers: readonly Resampler[], inputs: Int16Array[], outs: Uint8Array[]) {
    this.handle = addon.createResampleEncodeGroup(
      codec,
      resamplers.map((r) => r.handle),
      inputs,
      outs,
    );
    this.written = new Int32Array(resamplers.length);
  }

  run(): void {
    addon.resampleEncodeGroupRun(this.handle, this.written);
  }

  /** Releases the registered arrays and resamplers (the resamplers themselves stay usable). */
  destroy(): void {
    addon.destroy(this.handle);
  }
}

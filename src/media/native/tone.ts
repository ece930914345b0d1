// Single-tone detection, an answering machine's beep (native/src/bind_detectors.cc, tone.h).
import { nativeAddon, type Handle, type HandleFunctions, type HandleRef, type HandleSlot } from './addon.js';
import type { ResamplerRate } from './resampler.js';

interface ToneFunctions extends HandleFunctions {
  createTone(rateHz: number, minHz: number, maxHz: number, minDurationMs: number): Handle;
  toneProcess(handle: HandleRef, frame: Int16Array): number;
  toneInfo(handle: HandleRef, out: Float64Array): void;
  toneReset(handle: HandleRef): void;
}

const addon = nativeAddon() as ToneFunctions;

/** Bits returned by ToneDetector.process(). When both are set in one call, the end came first. */
export const TONE_NONE = 0;
export const TONE_START = 1;
export const TONE_END = 2;

export interface ToneOptions {
  minHz: number;
  maxHz: number;
  minDurationMs: number;
}

export const TONE_DEFAULTS = { minHz: 400, maxHz: 2000, minDurationMs: 100 } as const satisfies ToneOptions;

/**
 * Detects one steady sinusoid in [minHz, maxHz] lasting minDurationMs (an answering machine's beep): reports
 * TONE_START once the tone has lasted that long (frequencyHz and startSample tell which and since when) and
 * TONE_END when it stops (endSample).
 */
export class ToneDetector {
  private readonly handle: Handle;
  private readonly slot: HandleSlot;
  private readonly info = new Float64Array(3);

  constructor(
    readonly rateHz: ResamplerRate = 8000,
    options: Partial<ToneOptions> = {},
  ) {
    const o = { ...TONE_DEFAULTS, ...options };
    this.handle = addon.createTone(rateHz, o.minHz, o.maxHz, o.minDurationMs);
    this.slot = addon.handleSlot(this.handle);
  }

  /** Feeds a frame; returns TONE_* bits. */
  process(frame: Int16Array): number {
    return addon.toneProcess(this.slot, frame);
  }

  /** Frequency of the current (or last) tone, Hz. */
  get frequencyHz(): number {
    addon.toneInfo(this.slot, this.info);
    return this.info[0];
  }

  /** Sample index where the current (or last) tone began. */
  get startSample(): number {
    addon.toneInfo(this.slot, this.info);
    return this.info[1];
  }

  /** Sample index just after the last tonal step of the current (or last) tone. */
  get endSample(): number {
    addon.toneInfo(this.slot, this.info);
    return this.info[2];
  }

  reset(): void {
    addon.toneReset(this.slot);
  }

  /** Frees the native state; the detector must not be used afterwards. */
  destroy(): void {
    addon.destroy(this.handle);
  }
}

// Voice activity detection (native/src/bind_vad.cc, vad.h).
import { nativeAddon, type Handle, type HandleFunctions, type HandleRef, type HandleSlot } from './addon.js';
import type { ResamplerRate } from './resampler.js';

interface VadFunctions extends HandleFunctions {
  readonly vadLimits: Readonly<VadLimits>;
  createVad(rateHz: number, threshold: number, prebufferMs: number, minSpeechMs: number, minSilenceMs: number): Handle;
  vadProcess(handle: HandleRef, frame: Int16Array): number;
  vadInfo(handle: HandleRef, out: Float64Array): void;
  vadReadPrebuffer(handle: HandleRef, out: Int16Array): number;
  vadPrebufferCapacity(handle: HandleRef): number;
  vadSetOptions(
    handle: HandleRef,
    threshold: number,
    prebufferMs: number,
    minSpeechMs: number,
    minSilenceMs: number,
  ): void;
  vadReset(handle: HandleRef): void;
}

const addon = nativeAddon() as VadFunctions;

/** Bits returned by Vad.process(). When both are set in one call, the end came before the start. */
export const VAD_NONE = 0;
export const VAD_SPEECH_START = 1;
export const VAD_SPEECH_END = 2;
export type VadEvent = number;

/** The agent's VAD settings (names and defaults of the agent fields vad_*). */
export interface VadOptions {
  /** vad_threshold: 0..1, a frame is voiced when its speech probability reaches it. */
  threshold: number;
  /** vad_prebuffer_duration_ms: audio kept before speech-start, fetched with readPrebuffer(). */
  prebufferMs: number;
  /** vad_min_speech_duration_ms: voiced time before speech-start is reported. */
  minSpeechMs: number;
  /** vad_min_silence_duration_ms: unvoiced time after the last voiced frame before speech-end is reported. */
  minSilenceMs: number;
}

/**
 * The maxima of the options Vad accepts, as the addon defines them (native/src/vad.h; every minimum is 0). The agent
 * schema's vad_* bounds repeat them (schemas stay free of native code); test/native/vad-limits.test.ts keeps the two
 * equal.
 */
export interface VadLimits {
  maxThreshold: number;
  maxPrebufferMs: number;
  maxMinSpeechMs: number;
  maxMinSilenceMs: number;
}
export const VAD_LIMITS: Readonly<VadLimits> = addon.vadLimits;

export const VAD_DEFAULTS = {
  threshold: 0.38,
  prebufferMs: 500,
  minSpeechMs: 50,
  minSilenceMs: 800,
} as const satisfies VadOptions;

/**
 * A voice activity detector (band energies against adaptive noise floors, 10 ms steps) for one stream at one of
 * the RESAMPLER_RATES. process() returns VadEvent bits; after VAD_SPEECH_START, speechStartSample is where the
 * speech began and readPrebuffer() returns the audio leading into it; after VAD_SPEECH_END, lastVoicedSample
 * marks the end of the last voiced frame (before the silence hangover). Sample positions count from the first
 * sample fed (or the last reset()).
 */
export class Vad {
  private readonly handle: Handle;
  private readonly slot: HandleSlot;
  private readonly info = new Float64Array(5);
  private current: Readonly<VadOptions>;
  private capacity: number;

  /** Out-of-range options (threshold 0..1, prebuffer and min speech 0..10 s, min silence 0..60 s) are a RangeError. */
  constructor(
    readonly rateHz: ResamplerRate,
    options: Partial<VadOptions> = {},
  ) {
    const o = { ...VAD_DEFAULTS, ...options };
    this.handle = addon.createVad(rateHz, o.threshold, o.prebufferMs, o.minSpeechMs, o.minSilenceMs);
    this.slot = addon.handleSlot(this.handle);
    this.current = o;
    this.capacity = addon.vadPrebufferCapacity(this.slot);
  }

  /** The options in force. */
  get options(): Readonly<VadOptions> {
    return this.current;
  }

  /** Samples the prebuffer holds (rate * prebufferMs / 1000; changes with setOptions). */
  get prebufferCapacity(): number {
    return this.capacity;
  }

  /**
   * New options for the running VAD (a transfer to another agent), the ones not given kept. What it has learnt is
   * kept (noise floors, state, positions, prebuffered audio: a new VAD would spend 500 ms learning the noise);
   * each new value applies from the next 10 ms step: a run toward speech-start or a silence hangover under way
   * counts against the new length from where it began (from the last voiced step for min silence), and the
   * prebuffer keeps its newest audio (native/src/vad.h). Out-of-range options are a RangeError, and change
   * nothing. Not a per-frame call: it may reallocate the prebuffer.
   */
  setOptions(options: Partial<VadOptions>): void {
    const o = { ...this.current, ...options };
    addon.vadSetOptions(this.slot, o.threshold, o.prebufferMs, o.minSpeechMs, o.minSilenceMs);
    this.current = o;
    this.capacity = addon.vadPrebufferCapacity(this.slot);
  }

  /** Feeds a frame (any length; analysed in 10 ms steps carried across calls); returns VadEvent bits. */
  process(frame: Int16Array): VadEvent {
    return addon.vadProcess(this.slot, frame);
  }

  /** Speech probability of the last complete 10 ms step. */
  get probability(): number {
    addon.vadInfo(this.slot, this.info);
    return this.info[0];
  }

  /** Sample index where the current (or last) speech began; -1 before any. */
  get speechStartSample(): number {
    addon.vadInfo(this.slot, this.info);
    return this.info[1];
  }

  /** Sample index just after the last voiced 10 ms step; -1 before any speech. */
  get lastVoicedSample(): number {
    addon.vadInfo(this.slot, this.info);
    return this.info[2];
  }

  /** True between speech-start and speech-end. */
  get speaking(): boolean {
    addon.vadInfo(this.slot, this.info);
    return this.info[4] === 1;
  }

  /** Copies the prebuffered audio (oldest first, ending with the last sample fed) into out; returns the count. */
  readPrebuffer(out: Int16Array): number {
    return addon.vadReadPrebuffer(this.slot, out);
  }

  /** Starts over: noise floors, state, positions and prebuffer. */
  reset(): void {
    addon.vadReset(this.slot);
  }

  /** Frees the native state; the VAD must not be used afterwards. */
  destroy(): void {
    addon.destroy(this.handle);
  }
}

// The one loader of the native DSP addon (native/build/Release/parley_dsp.node) and its typed wrappers.
//
// Conventions (see native/src/handle.h):
// - Frames are Int16Array PCM views; outputs are caller-owned buffers written in place ("...Into" returns the
//   number of samples or bytes written). Nothing here allocates per frame.
// - Stateful modules (Resampler, Vad, DtmfDetector, ToneDetector, and TimeStretch in time-stretch.ts) hold an
//   opaque native handle: all native memory is allocated in the constructor and freed by destroy() (or by the
//   garbage collector if destroy() is never called). Using a destroyed module throws. They call the addon through
//   the handle's slot id (HandleSlot), which is cheaper per call than the handle itself.
// - Sizes are checked at the N-API boundary: a wrong array type is a TypeError, a too-short output a RangeError.
// - Outbound work for many streams goes through the batch functions (encodeBatch, resampleBatch,
//   resampleEncodeBatch) or a ResampleEncodeGroup (streams registered once): one crossing into C++ per tick
//   instead of one per stream.
import { createRequire } from 'node:module';

const ADDON_PATH = '../../native/build/Release/parley_dsp.node';

/** Raised when the addon cannot be loaded (built by `npm install`). */
export class NativeDspLoadError extends Error {
  override readonly name = 'NativeDspLoadError';
}

/** An opaque native handle (an External); only the classes below create and use them. */
export type Handle = { readonly __nativeHandle: unique symbol };
/**
 * The id of a handle's slot in the addon's table (native/src/handle.h, "Slots"), taken wherever a handle is: the
 * classes below call through it (one warm table instead of two cold objects per call) and keep the Handle, which
 * owns the native state, for destroy() and for the garbage collector.
 */
export type HandleSlot = number & { readonly __nativeSlot: unique symbol };
/** What the module calls take: the handle or its slot. */
type HandleRef = Handle | HandleSlot;

interface Addon {
  mulawEncode(pcm: Int16Array, out: Uint8Array): number;
  mulawDecode(payload: Uint8Array, out: Int16Array, offset: number, length: number): number;
  alawEncode(pcm: Int16Array, out: Uint8Array): number;
  alawDecode(payload: Uint8Array, out: Int16Array, offset: number, length: number): number;
  pcm16ToFloat32(pcm: Int16Array, out: Float32Array): number;
  float32ToPcm16(samples: Float32Array, out: Int16Array): number;
  applyGain(pcm: Int16Array, gain: number): void;
  mixInto(dst: Int16Array, src: Int16Array, gain: number): void;
  encodeBatch(codec: number, frames: Int16Array[], outs: Uint8Array[]): number;
  destroy(handle: Handle): void;
  handleSlot(handle: Handle): HandleSlot;
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
  readonly vadLimits: Readonly<VadLimits>;
  createVad(rateHz: number, threshold: number, prebufferMs: number, minSpeechMs: number, minSilenceMs: number): Handle;
  vadProcess(handle: HandleRef, frame: Int16Array): number;
  vadInfo(handle: HandleRef, out: Float64Array): void;
  vadReadPrebuffer(handle: HandleRef, out: Int16Array): number;
  vadPrebufferCapacity(handle: HandleRef): number;
  vadSetOptions(handle: HandleRef, threshold: number, prebufferMs: number, minSpeechMs: number, minSilenceMs: number): void;
  vadReset(handle: HandleRef): void;
  createDtmf(rateHz: number): Handle;
  dtmfProcess(handle: HandleRef, frame: Int16Array, out: Uint8Array): number;
  dtmfReset(handle: HandleRef): void;
  createTone(rateHz: number, minHz: number, maxHz: number, minDurationMs: number): Handle;
  toneProcess(handle: HandleRef, frame: Int16Array): number;
  toneInfo(handle: HandleRef, out: Float64Array): void;
  toneReset(handle: HandleRef): void;
  createTimeStretch(rateHz: number, maxInput: number, speed: number): Handle;
  timeStretchProcess(handle: HandleRef, input: Int16Array, out: Int16Array, length: number): number;
  timeStretchFlush(handle: HandleRef, out: Int16Array): number;
  timeStretchSetSpeed(handle: HandleRef, speed: number): void;
  timeStretchMaxOutput(handle: HandleRef, n: number): number;
  timeStretchReset(handle: HandleRef): void;
  writeBlocks(fds: Int32Array, blocks: Int16Array[], pairs: Int32Array, offsets: Float64Array, groups: Int32Array, done: (results: Float64Array) => void): void;
}

function load(): unknown {
  const require = createRequire(import.meta.url);
  try {
    return require(ADDON_PATH) as unknown;
  } catch (err) {
    throw new NativeDspLoadError(`native DSP addon not loadable from ${ADDON_PATH} (build it with npm install)`, {
      cause: err,
    });
  }
}

// A copy with fast properties: the module object N-API builds holds its 51 functions in dictionary mode, so every
// addon.fn(...) was a dictionary lookup through a generic load IC in optimized code (checked in Node 20 with
// %HasFastProperties and --print-opt-code); on the copy it is a map check and a field load.
const loaded: object = { ...(load() as object) };
const addon = loaded as Addon;

/**
 * The loaded addon's functions, for the typed wrappers of its other parts (src/media/udp-native.ts declares the
 * udp* functions): one loader, one load error.
 */
export function nativeAddon(): unknown {
  return loaded;
}

// ---- G.711 (ITU-T G.711, tables from the ITU-T G.191 reference) ----

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
export function mulawDecodeInto(payload: Uint8Array, out: Int16Array, offset = 0, length = payload.length - offset): number {
  return addon.mulawDecode(payload, out, offset, length);
}

/** Encodes pcm to A-law bytes in out; returns the bytes written. */
export function alawEncodeInto(pcm: Int16Array, out: Uint8Array): number {
  return addon.alawEncode(pcm, out);
}

/** Decodes A-law bytes payload[offset, offset + length) (default: all) to PCM16 in out; returns the samples written. */
export function alawDecodeInto(payload: Uint8Array, out: Int16Array, offset = 0, length = payload.length - offset): number {
  return addon.alawDecode(payload, out, offset, length);
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

// ---- Batched file writes (native/src/block_writer.h) ----

/** Error values of writeBlocks besides errno: a write returned 0 bytes; a write skipped after its group's failure. */
export const BLOCK_NOTHING_WRITTEN = -1;
export const BLOCK_SKIPPED = -2;

/**
 * Writes the first pairs[i] sample pairs of the planar stereo blocks[i] (left channel in its first half, right in
 * its second), interleaved as 16-bit little-endian stereo, to fds[i] at offsets[i], in order, in one job on libuv's
 * thread pool (pwrite, short writes continued, EINTR retried); after a write of a group fails, that group's later
 * writes are skipped. `done` gets, per write, the bytes written (results[2i]) and 0 or its error (results[2i + 1]:
 * an errno, BLOCK_NOTHING_WRITTEN or BLOCK_SKIPPED). The descriptors must stay open until then; the blocks are kept
 * alive meanwhile.
 */
export function writeBlocks(fds: Int32Array, blocks: Int16Array[], pairs: Int32Array, offsets: Float64Array, groups: Int32Array, done: (results: Float64Array) => void): void {
  addon.writeBlocks(fds, blocks, pairs, offsets, groups, done);
}

// ---- Resampling ----

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

/** Resamples inputs[i] with resamplers[i] into outs[i] for many streams in one native call; written[i] = count. */
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
    this.handle = addon.createResampleEncodeGroup(codec, resamplers.map((r) => r.handle), inputs, outs);
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

// ---- Voice activity detection ----

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

// ---- DTMF (ITU-T Q.23 frequencies, Q.24 receiver limits; see native/src/dtmf.h for the rules implemented) ----

/**
 * An in-band DTMF receiver for one stream: operates on tones of 40 ms or more, never on tones of 20 ms or less,
 * frequency deviation +-1.5 % accepted / +-3.5 % rejected, twist 8 dB normal / 4 dB reverse, with talk-off
 * guards (group margin, energy share, steadiness, second harmonic).
 */
export class DtmfDetector {
  private readonly handle: Handle;
  private readonly slot: HandleSlot;
  private readonly scratch = new Uint8Array(64);

  constructor(readonly rateHz: ResamplerRate = 8000) {
    this.handle = addon.createDtmf(rateHz);
    this.slot = addon.handleSlot(this.handle);
  }

  /** Feeds a frame; writes each new digit's ASCII code ('0'-'9', '*', '#', 'A'-'D') into out; returns the count. */
  process(frame: Int16Array, out: Uint8Array): number {
    return addon.dtmfProcess(this.slot, frame, out);
  }

  /** Feeds a frame and returns the new digits as a string (allocates; for edges and tests). */
  detect(frame: Int16Array): string {
    const n = addon.dtmfProcess(this.slot, frame, this.scratch);
    return n === 0 ? '' : String.fromCharCode(...this.scratch.subarray(0, n));
  }

  reset(): void {
    addon.dtmfReset(this.slot);
  }

  /** Frees the native state; the detector must not be used afterwards. */
  destroy(): void {
    addon.destroy(this.handle);
  }
}

// ---- Single tone (answering-machine beep) ----

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

// ---- Time-stretch (WSOLA, see native/src/time_stretch.h) ----

/** The time-stretch entry points, for the TimeStretch stage (src/media/time-stretch.ts), their one wrapper. */
export type TimeStretchBinding = Pick<
  Addon,
  | 'createTimeStretch'
  | 'timeStretchProcess'
  | 'timeStretchFlush'
  | 'timeStretchSetSpeed'
  | 'timeStretchMaxOutput'
  | 'timeStretchReset'
  | 'destroy'
  | 'handleSlot'
>;
export const timeStretchBinding: TimeStretchBinding = addon;

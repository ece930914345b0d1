// Time-stretching without pitch change for the agent's audio_speed (0.5 to 2.0): WSOLA, waveform-similarity
// overlap-add (Verhelst & Roelands, ICASSP 1993), in the native addon (native/src/time_stretch.h: 25 ms Hann
// segments at a half-window synthesis hop, each start moved within +-8 ms to where its waveform best continues
// the previous segment, by normalized cross-correlation on a ~4 kHz grid then at full rate around the best).
// Streaming; every buffer allocated at construction; speed 1 while idle is an exact pass-through.
import type { Stage } from './pipeline.js';
import { timeStretchBinding as native } from './native/time-stretch-binding.js';
import type { Handle, HandleSlot } from './native/addon.js';

export const AUDIO_SPEED_MIN = 0.5;
export const AUDIO_SPEED_MAX = 2.0;

export interface TimeStretchOptions {
  sampleRate: number;
  /** Largest chunk process() is given (samples). */
  maxInput: number;
  speed?: number;
}

function checkSpeed(speed: number): void {
  if (!(speed >= AUDIO_SPEED_MIN && speed <= AUDIO_SPEED_MAX)) {
    throw new RangeError(`audio speed ${speed} outside ${AUDIO_SPEED_MIN}..${AUDIO_SPEED_MAX}`);
  }
}

export class TimeStretch implements Stage {
  readonly sampleRate: number;
  private readonly handle: Handle;
  private readonly slot: HandleSlot;
  private speed: number;

  constructor(opts: TimeStretchOptions) {
    this.sampleRate = opts.sampleRate;
    this.speed = opts.speed ?? 1;
    checkSpeed(this.speed);
    this.handle = native.createTimeStretch(opts.sampleRate, opts.maxInput, this.speed);
    this.slot = native.handleSlot(this.handle);
  }

  /** Takes effect from the next segment: held audio is not dropped. */
  setSpeed(speed: number): void {
    checkSpeed(speed);
    native.timeStretchSetSpeed(this.slot, speed);
    this.speed = speed;
  }

  get currentSpeed(): number {
    return this.speed;
  }

  /** The most samples process() writes for `inputLength` samples, and flush() for 0 (size `out` with it). */
  maxOutput(inputLength: number): number {
    return native.timeStretchMaxOutput(this.slot, inputLength);
  }

  /**
   * Stretches input[0, length) (default: all of it, at most maxInput) into out; returns the samples written.
   * Throws a RangeError, before consuming anything, if out is shorter than this call's output.
   */
  process(input: Int16Array, out: Int16Array, length = input.length): number {
    return native.timeStretchProcess(this.slot, input, out, length);
  }

  /** Completes the held audio with silence and writes its last segments and overlap tail; then as after reset(). */
  flush(out: Int16Array): number {
    return native.timeStretchFlush(this.slot, out);
  }

  /** Forgets held audio (barge-in, a new utterance). */
  reset(): void {
    native.timeStretchReset(this.slot);
  }

  /** Frees the native state now rather than at garbage collection; the stage must not be used afterwards. */
  destroy(): void {
    native.destroy(this.handle);
  }
}

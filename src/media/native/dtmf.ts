// In-band DTMF (ITU-T Q.23 frequencies, Q.24 receiver limits; native/src/bind_detectors.cc, dtmf.h for the rules
// implemented).
import { nativeAddon, type Handle, type HandleFunctions, type HandleRef, type HandleSlot } from './addon.js';
import type { ResamplerRate } from './resampler.js';

interface DtmfFunctions extends HandleFunctions {
  createDtmf(rateHz: number): Handle;
  dtmfProcess(handle: HandleRef, frame: Int16Array, out: Uint8Array): number;
  dtmfReset(handle: HandleRef): void;
}

const addon = nativeAddon() as DtmfFunctions;

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

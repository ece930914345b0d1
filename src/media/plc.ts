// Packet loss concealment for decoded PCM: repeat the last good frame with a fade, then silence.
// Why not G.711 Appendix I (pitch-period waveform substitution)? The inbound audio goes to a VAD and a speech
// engine, not to a listener; what matters is no click (a hard drop to zero reads as a transient) and no long
// false "speech" from a repeated frame. A faded repeat over at most FADE_FRAMES does both at negligible cost.
import type { Stage } from './pipeline.js';

/** Consecutive lost frames over which the repeat fades to silence (3 x 20 ms = 60 ms). */
const FADE_FRAMES = 3;

export class LossConcealer implements Stage {
  private readonly last: Int16Array;
  private lastLength = 0;
  private lostRun = 0;

  constructor(readonly frameSamples: number) {
    this.last = new Int16Array(frameSamples);
  }

  /** A good frame: passed through and remembered. */
  process(input: Int16Array, out: Int16Array): number {
    const n = Math.min(input.length, this.frameSamples);
    if (out !== input) out.set(input.length === n ? input : input.subarray(0, n), 0);
    this.last.set(input.length === n ? input : input.subarray(0, n), 0);
    this.lastLength = n;
    this.lostRun = 0;
    return n;
  }

  /** One lost frame: writes frameSamples of concealment into out; returns frameSamples. */
  conceal(out: Int16Array): number {
    const n = this.frameSamples;
    const k = this.lostRun++;
    if (k >= FADE_FRAMES || this.lastLength === 0) {
      out.fill(0, 0, n);
      return n;
    }
    // Gain ramps linearly from (1 - k/F) to (1 - (k+1)/F) across this frame.
    const g0 = 1 - k / FADE_FRAMES;
    const step = 1 / FADE_FRAMES / n;
    const last = this.last;
    const len = this.lastLength;
    for (let i = 0; i < n; i++) out[i] = Math.round(last[i % len] * (g0 - step * i));
    return n;
  }

  flush(): number {
    return 0;
  }

  reset(): void {
    this.lastLength = 0;
    this.lostRun = 0;
  }
}

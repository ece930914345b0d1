// Time-stretching without pitch change for the agent's audio_speed (0.5 to 2.0): WSOLA, waveform-similarity
// overlap-add (Verhelst & Roelands, ICASSP 1993). Segments of WINDOW_MS are overlap-added with a Hann window at
// a fixed synthesis hop (half a window); the analysis hop is speed x the synthesis hop, and each segment's start
// is moved within +-TOLERANCE_MS to the position whose waveform best continues the previous segment
// (normalized cross-correlation), so periods line up and pitch is kept. Streaming, with every buffer
// preallocated for the largest input chunk; speed 1 is an exact pass-through.
import type { Stage } from './pipeline.js';

export const AUDIO_SPEED_MIN = 0.5;
export const AUDIO_SPEED_MAX = 2.0;
/** Segment length: 2-3 pitch periods of the lowest voices (~80 Hz) at 25 ms. */
const WINDOW_MS = 25;
/** Search range for the best-aligned segment: a full period of voices down to ~60 Hz at +-8 ms. */
const TOLERANCE_MS = 8;
/**
 * The coarse search correlates on a grid of about 4 kHz (every k-th sample and offset): voiced speech has most of
 * its energy below 1 kHz, so alignment on that grid is within a sample or two; a full-rate search of the +-k
 * neighbourhood of the best then finds the exact offset. About 3x cheaper than searching at 8 kHz.
 */
const SEARCH_RATE_HZ = 4000;

export interface TimeStretchOptions {
  sampleRate: number;
  /** Largest chunk process() is given (samples). */
  maxInput: number;
  speed?: number;
}

export class TimeStretch implements Stage {
  readonly sampleRate: number;
  private readonly n: number; // window length
  private readonly hs: number; // synthesis hop
  private readonly tol: number;
  private readonly step: number;
  private readonly window: Float32Array;
  private readonly tail: Float32Array; // windowed second half of the previous segment
  private readonly inBuf: Float32Array;
  private readonly maxInput: number;
  private inStart = 0; // absolute index of inBuf[0]
  private inLen = 0;
  private speed = 1;
  /** Ideal (unadjusted) absolute start of the next analysis segment. */
  private ideal = 0;
  /** Absolute start of the previous chosen segment, or -1 before the first. */
  private prev = -1;

  constructor(opts: TimeStretchOptions) {
    this.sampleRate = opts.sampleRate;
    this.n = 2 * Math.round((opts.sampleRate * WINDOW_MS) / 2000);
    this.hs = this.n / 2;
    this.tol = Math.round((opts.sampleRate * TOLERANCE_MS) / 1000);
    this.step = Math.max(1, Math.round(opts.sampleRate / SEARCH_RATE_HZ));
    this.window = new Float32Array(this.n);
    // Periodic Hann: at 50% overlap the windows sum to exactly 1.
    for (let i = 0; i < this.n; i++) this.window[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / this.n);
    this.tail = new Float32Array(this.hs);
    this.maxInput = opts.maxInput;
    // Held input: a segment at the fastest speed spans 2 x hop x 2 + window + tolerance, plus one chunk.
    this.inBuf = new Float32Array(opts.maxInput + 4 * this.n + 4 * this.tol + 16);
    this.setSpeed(opts.speed ?? 1);
  }

  setSpeed(speed: number): void {
    if (!(speed >= AUDIO_SPEED_MIN && speed <= AUDIO_SPEED_MAX)) {
      throw new RangeError(`audio speed ${speed} outside ${AUDIO_SPEED_MIN}..${AUDIO_SPEED_MAX}`);
    }
    this.speed = speed;
  }

  get currentSpeed(): number {
    return this.speed;
  }

  /** The most samples process() writes for `inputLength` samples (size `out` with it). */
  maxOutput(inputLength: number): number {
    return Math.ceil((inputLength + this.inLen) / AUDIO_SPEED_MIN) + 2 * this.hs;
  }

  /** Stretches input[0, length) (default: all of it) into out; returns the samples written. */
  process(input: Int16Array, out: Int16Array, length = input.length): number {
    if (length > this.maxInput) throw new RangeError(`time-stretch chunk of ${length} > maxInput ${this.maxInput}`);
    if (this.speed === 1 && this.prev < 0 && this.inLen === 0) {
      // Pass-through while idle at normal speed: exact, and free.
      for (let i = 0; i < length; i++) out[i] = input[i];
      return length;
    }
    this.append(input, length);
    return this.run(out, 0);
  }

  flush(out: Int16Array): number {
    // Pad with silence so the held input completes its last segments, then emit the overlap tail.
    let written = 0;
    const end = this.inStart + this.inLen;
    const zeros = this.n + this.tol;
    if (this.inLen + zeros > this.inBuf.length) this.compact();
    this.inBuf.fill(0, this.inLen, this.inLen + zeros);
    this.inLen += zeros;
    while (this.canStep() && this.ideal < end) written = this.stepOnce(out, written);
    if (this.prev >= 0) {
      for (let i = 0; i < this.hs; i++) out[written++] = clamp16(this.tail[i]);
    }
    this.reset();
    return written;
  }

  reset(): void {
    this.inStart = 0;
    this.inLen = 0;
    this.ideal = 0;
    this.prev = -1;
    this.tail.fill(0);
  }

  private append(input: Int16Array, length: number): void {
    if (this.inLen + length > this.inBuf.length) this.compact();
    if (this.inLen + length > this.inBuf.length) throw new RangeError('time-stretch input overflow');
    const b = this.inBuf;
    const o = this.inLen;
    for (let i = 0; i < length; i++) b[o + i] = input[i];
    this.inLen += length;
  }

  /** Drops input no future segment can reach. */
  private compact(): void {
    let keepFrom = Math.floor(this.ideal) - this.tol;
    if (this.prev >= 0) keepFrom = Math.min(keepFrom, this.prev + this.hs);
    const drop = Math.max(0, Math.min(this.inLen, keepFrom - this.inStart));
    if (drop === 0) return;
    this.inBuf.copyWithin(0, drop, this.inLen);
    this.inStart += drop;
    this.inLen -= drop;
  }

  private canStep(): boolean {
    const end = this.inStart + this.inLen;
    const needCandidate = Math.floor(this.ideal) + this.tol + this.n;
    const needNatural = this.prev < 0 ? 0 : this.prev + this.hs + this.n;
    return needCandidate <= end && needNatural <= end;
  }

  private run(out: Int16Array, written: number): number {
    while (this.canStep()) written = this.stepOnce(out, written);
    this.compact();
    return written;
  }

  /** Chooses the next segment, overlap-adds it, writes one synthesis hop. */
  private stepOnce(out: Int16Array, written: number): number {
    const b = this.inBuf;
    const base = this.inStart;
    let pos: number;
    if (this.prev < 0) {
      pos = Math.floor(this.ideal);
    } else {
      pos = this.bestAlignment(Math.floor(this.ideal), this.prev + this.hs);
    }
    const o = pos - base;
    const w = this.window;
    const hs = this.hs;
    for (let i = 0; i < hs; i++) {
      out[written + i] = clamp16(this.tail[i] + w[i] * b[o + i]);
      this.tail[i] = w[i + hs] * b[o + i + hs];
    }
    this.prev = pos;
    this.ideal += this.speed * hs;
    return written + hs;
  }

  /**
   * Start in [ideal - tol, ideal + tol] whose first half best matches the natural continuation: a coarse pass on
   * the search grid, then every offset around its best. Each pass slides the candidate's energy (drop the sample
   * leaving the window, add the one entering) instead of summing it again per candidate.
   */
  private bestAlignment(ideal: number, natural: number): number {
    const lo = Math.max(this.inStart, ideal - this.tol);
    const hi = ideal + this.tol;
    const step = this.step;
    let best = this.bestOnGrid(lo, hi, step, natural, lo);
    if (step > 1) best = this.bestOnGrid(Math.max(lo, best - step + 1), Math.min(hi, best + step - 1), 1, natural, best);
    return best;
  }

  /**
   * The candidate in [from, to] (every `stride`-th) with the highest normalized cross-correlation of its first
   * half (every `stride`-th sample) with the natural continuation; `fallback` when none scores.
   */
  private bestOnGrid(from: number, to: number, stride: number, natural: number, fallback: number): number {
    const b = this.inBuf;
    const base = this.inStart;
    const n0 = natural - base;
    const hs = this.hs;
    // The window holds ceil(hs / stride) samples; moving by one stride, the one `span` past the old start enters.
    const span = Math.ceil(hs / stride) * stride;
    let best = fallback;
    let bestScore = -Infinity;
    let c0 = from - base;
    let yy = 0;
    for (let i = 0; i < hs; i += stride) yy += b[c0 + i] * b[c0 + i];
    for (let c = from; c <= to; c += stride, c0 += stride) {
      if (c > from) {
        // Slide: the sample at c0 - stride left the strided window, the one at c0 - stride + span entered.
        const out = b[c0 - stride];
        const inn = b[c0 - stride + span];
        yy += inn * inn - out * out;
      }
      // Four partial sums: one running sum is a chain of dependent additions, four overlap.
      let xy0 = 0, xy1 = 0, xy2 = 0, xy3 = 0;
      let i = 0;
      for (; i + 3 * stride < hs; i += 4 * stride) {
        xy0 += b[n0 + i] * b[c0 + i];
        xy1 += b[n0 + i + stride] * b[c0 + i + stride];
        xy2 += b[n0 + i + 2 * stride] * b[c0 + i + 2 * stride];
        xy3 += b[n0 + i + 3 * stride] * b[c0 + i + 3 * stride];
      }
      for (; i < hs; i += stride) xy0 += b[n0 + i] * b[c0 + i];
      const s = (xy0 + xy1 + (xy2 + xy3)) / Math.sqrt((yy > 0 ? yy : 0) + 1e-9);
      if (s > bestScore) {
        bestScore = s;
        best = c;
      }
    }
    return best;
  }
}

function clamp16(x: number): number {
  return x > 32767 ? 32767 : x < -32768 ? -32768 : Math.round(x);
}

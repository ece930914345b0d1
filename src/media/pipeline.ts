// The one interface of a media pipeline stage, and the small FIFO that joins variable-rate stages to the
// fixed 20 ms frames of the wire. A feature is a stage in its own file with its own options and test.

/**
 * A stage turns input samples into output samples. It may buffer (output length differs from input length);
 * `out` must be large enough for what the stage documents (maxOutput). No allocation in process or flush.
 */
export interface Stage<In extends ArrayLike<number> = Int16Array, Out extends ArrayLike<number> = Int16Array> {
  /** Processes `input` and writes into `out`; returns the number of output elements written. */
  process(input: In, out: Out): number;
  /** Writes whatever is held back (end of a stream or utterance); returns the number written. */
  flush(out: Out): number;
  /** Forgets all state (a new, unrelated stream). */
  reset(): void;
}

/**
 * A fixed-capacity ring of Int16 samples: write what a stage produced, read exact frames back.
 *
 * The ring may live inside a larger array (an arena) shared with the buffers it is read into and written from:
 * moves within the arena are memmoves (copyWithin), a whole source array that fits without wrapping is one
 * set(), and only the rest is copied sample by sample. Nothing allocates.
 */
export class SampleFifo {
  private readonly buf: Int16Array;
  /** Where the ring starts in buf. */
  private readonly base: number;
  private head = 0;
  private size = 0;

  /** `arena`: hold the ring in arena[offset, offset + capacity) instead of an array of its own. */
  constructor(
    readonly capacity: number,
    arena?: { array: Int16Array; offset: number },
  ) {
    if (arena && arena.offset + capacity > arena.array.length)
      throw new RangeError('sample FIFO does not fit its arena');
    this.buf = arena ? arena.array : new Int16Array(capacity);
    this.base = arena ? arena.offset : 0;
  }

  get length(): number {
    return this.size;
  }

  get free(): number {
    return this.capacity - this.size;
  }

  /**
   * Appends src[srcOffset, srcOffset + n); throws if it does not fit (sizing is the owner's job: a silent drop
   * would be a bug).
   */
  write(src: Int16Array, n: number = src.length, srcOffset = 0): void {
    if (n > this.free) throw new RangeError(`sample FIFO overflow: ${n} samples into ${this.free} free`);
    const buf = this.buf;
    const cap = this.capacity;
    let tail = this.head + this.size;
    if (tail >= cap) tail -= cap;
    const at = this.base + tail;
    // Two straight runs (up to the end of the ring, then from its start): no wrap test per sample.
    const first = Math.min(n, cap - tail);
    if (src === buf) {
      buf.copyWithin(at, srcOffset, srcOffset + first);
      if (n > first) buf.copyWithin(this.base, srcOffset + first, srcOffset + n);
    } else if (first === n && srcOffset === 0 && n === src.length) {
      buf.set(src, at);
    } else {
      for (let i = 0; i < first; i++) buf[at + i] = src[srcOffset + i];
      const rest = srcOffset + first;
      const base = this.base;
      for (let i = 0; i < n - first; i++) buf[base + i] = src[rest + i];
    }
    this.size += n;
  }

  /** Moves up to n samples into dst at dstOffset; returns the number moved. */
  read(dst: Int16Array, n: number, dstOffset = 0): number {
    const k = Math.min(n, this.size);
    const buf = this.buf;
    const cap = this.capacity;
    const h = this.head;
    const from = this.base + h;
    const first = Math.min(k, cap - h);
    if (dst === buf) {
      buf.copyWithin(dstOffset, from, from + first);
      if (k > first) buf.copyWithin(dstOffset + first, this.base, this.base + k - first);
    } else {
      for (let i = 0; i < first; i++) dst[dstOffset + i] = buf[from + i];
      const rest = dstOffset + first;
      const base = this.base;
      for (let i = 0; i < k - first; i++) dst[rest + i] = buf[base + i];
    }
    this.head = h + k >= cap ? h + k - cap : h + k;
    this.size -= k;
    return k;
  }

  /**
   * Where the oldest sample is in the ring's array (the arena's, when it has one), and how many samples follow it
   * there before the ring wraps: a reader may consume samples in place, then discard() them.
   */
  get headIndex(): number {
    return this.base + this.head;
  }

  get contiguous(): number {
    return Math.min(this.size, this.capacity - this.head);
  }

  /** Drops the n oldest samples (or all there are); returns the number dropped. */
  discard(n: number): number {
    const k = Math.min(n, this.size);
    this.head = (this.head + k) % this.capacity;
    this.size -= k;
    return k;
  }

  clear(): void {
    this.head = 0;
    this.size = 0;
  }
}

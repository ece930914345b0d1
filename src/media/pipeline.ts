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

/** A fixed-capacity ring of Int16 samples: write what a stage produced, read exact frames back. */
export class SampleFifo {
  private readonly buf: Int16Array;
  private head = 0;
  private size = 0;

  constructor(readonly capacity: number) {
    this.buf = new Int16Array(capacity);
  }

  get length(): number {
    return this.size;
  }

  get free(): number {
    return this.buf.length - this.size;
  }

  /** Appends src[0, n); throws if it does not fit (sizing is the owner's job: a silent drop would be a bug). */
  write(src: Int16Array, n: number = src.length): void {
    if (n > this.free) throw new RangeError(`sample FIFO overflow: ${n} samples into ${this.free} free`);
    const buf = this.buf;
    const cap = buf.length;
    let tail = this.head + this.size;
    if (tail >= cap) tail -= cap;
    // Two straight runs (up to the end of the ring, then from its start): no wrap test per sample.
    const first = Math.min(n, cap - tail);
    for (let i = 0; i < first; i++) buf[tail + i] = src[i];
    for (let i = first; i < n; i++) buf[i - first] = src[i];
    this.size += n;
  }

  /** Moves up to n samples into dst at dstOffset; returns the number moved. */
  read(dst: Int16Array, n: number, dstOffset = 0): number {
    const k = Math.min(n, this.size);
    const buf = this.buf;
    const cap = buf.length;
    const h = this.head;
    const first = Math.min(k, cap - h);
    for (let i = 0; i < first; i++) dst[dstOffset + i] = buf[h + i];
    const rest = dstOffset + first;
    for (let i = first; i < k; i++) dst[rest + i - first] = buf[i - first];
    this.head = h + k >= cap ? h + k - cap : h + k;
    this.size -= k;
    return k;
  }

  /** Drops the n oldest samples (or all there are); returns the number dropped. */
  discard(n: number): number {
    const k = Math.min(n, this.size);
    this.head = (this.head + k) % this.buf.length;
    this.size -= k;
    return k;
  }

  clear(): void {
    this.head = 0;
    this.size = 0;
  }
}

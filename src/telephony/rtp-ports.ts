// RTP port allocation for calls: even ports of PARLEY_RTP_PORT_MIN..MAX, RTCP on the odd port above each
// (RFC 3550 11). Free ports wait in a FIFO ring, so a released port is handed out again only after every other
// free port: a late packet of an ended call does not reach the next call on the same port. Every operation
// is O(1) and allocates nothing.
import type { Settings } from '../config.js';

export class RtpPorts {
  readonly min: number;
  /** Number of RTP/RTCP pairs in the range. */
  readonly capacity: number;
  /** Free pair indexes, oldest-freed first: a ring of `capacity` slots. */
  readonly #ring: Uint32Array;
  #head = 0;
  #free: number;
  /** 1 where the pair is held. */
  readonly #held: Uint8Array;

  /**
   * `min..max` inclusive; the first pair starts at the first even port >= min and the last one ends at or below
   * max. The initial order of the free pairs is shuffled with `random` (uniform in [0, 1)).
   */
  constructor(min: number, max: number, random: () => number = Math.random) {
    const first = min % 2 === 0 ? min : min + 1;
    const capacity = max >= first + 1 ? Math.floor((max - first + 1) / 2) : 0;
    if (capacity === 0)
      throw new RangeError(`RTP port range ${min}-${max} holds no even port with its RTCP port above it`);
    this.min = first;
    this.capacity = capacity;
    this.#ring = new Uint32Array(capacity);
    this.#held = new Uint8Array(capacity);
    for (let i = 0; i < capacity; i++) this.#ring[i] = i;
    // Fisher-Yates: ports are not handed out in a guessable order.
    for (let i = capacity - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      const tmp = this.#ring[i];
      this.#ring[i] = this.#ring[j];
      this.#ring[j] = tmp;
    }
    this.#free = capacity;
  }

  static fromSettings(
    settings: Pick<Settings, 'PARLEY_RTP_PORT_MIN' | 'PARLEY_RTP_PORT_MAX'>,
    random?: () => number,
  ): RtpPorts {
    return new RtpPorts(settings.PARLEY_RTP_PORT_MIN, settings.PARLEY_RTP_PORT_MAX, random);
  }

  /** An even RTP port (its RTCP port is the next one), or null when every pair is held. */
  allocate(): number | null {
    if (this.#free === 0) return null;
    const index = this.#ring[this.#head];
    this.#head = this.#head + 1 === this.capacity ? 0 : this.#head + 1;
    this.#free--;
    this.#held[index] = 1;
    return this.min + 2 * index;
  }

  /** Returns a held port to the back of the queue; false when `port` was not held (never allocated, or released). */
  release(port: number): boolean {
    const offset = port - this.min;
    if (!Number.isInteger(port) || offset < 0 || offset % 2 !== 0) return false;
    const index = offset / 2;
    if (index >= this.capacity || this.#held[index] === 0) return false;
    this.#held[index] = 0;
    let tail = this.#head + this.#free;
    if (tail >= this.capacity) tail -= this.capacity;
    this.#ring[tail] = index;
    this.#free++;
    return true;
  }

  isHeld(port: number): boolean {
    const offset = port - this.min;
    return offset >= 0 && offset % 2 === 0 && offset / 2 < this.capacity && this.#held[offset / 2] === 1;
  }

  get available(): number {
    return this.#free;
  }

  get inUse(): number {
    return this.capacity - this.#free;
  }
}

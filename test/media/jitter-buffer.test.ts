import t from 'tap';
import { JitterBuffer, JB_LOST, JB_NONE } from '../../src/media/jitter-buffer.js';

/** Seeded PRNG (mulberry32) so every run sees the same network. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

interface Arrival {
  at: number;
  seq: number;
  ts: number;
}

/**
 * A G.711 stream of `frames` packets through a network: transit = 30 ms + exponential jitter of mean
 * `meanJitterMs`, `loss` of packets dropped, `dup` duplicated (a copy a little later). Sorting by arrival time
 * reorders packets whose jitter differs by more than 20 ms.
 */
function network(
  frames: number,
  opts: { seed: number; meanJitterMs: number; loss: number; dup: number; seq0: number; ts0: number },
) {
  const r = rng(opts.seed);
  const arrivals: Arrival[] = [];
  const dropped = new Set<number>();
  for (let i = 0; i < frames; i++) {
    const seq = (opts.seq0 + i) & 0xffff;
    const ts = (opts.ts0 + i * 160) >>> 0;
    if (r() < opts.loss) {
      dropped.add(i);
      continue;
    }
    const at = i * 20 + 30 - Math.log(1 - r()) * opts.meanJitterMs;
    arrivals.push({ at, seq, ts });
    if (r() < opts.dup) arrivals.push({ at: at + r() * 30, seq, ts });
  }
  arrivals.sort((a, b) => a.at - b.at);
  return { arrivals, dropped };
}

/** A packet of `length` payload bytes at the start of `payload` (push reads the payload where it lies). */
function push(
  jb: JitterBuffer,
  seq: number,
  ts: number,
  payload: Uint8Array,
  at: number,
  length = payload.length,
): boolean {
  return jb.push({ sequenceNumber: seq, timestamp: ts, payloadOffset: 0, payloadLength: length }, payload, at);
}

/** The first byte of the frame pop() just released, read in place. */
function firstByte(jb: JitterBuffer): number {
  return jb.store[jb.releasedOffset];
}

function payloadFor(i: number): Uint8Array {
  const p = new Uint8Array(160);
  p[0] = i & 0xff;
  p[1] = (i >> 8) & 0xff;
  return p;
}

/** Feeds arrivals, pops after each push and on a 5 ms tick; returns the released sequence (frame index or 'L'). */
function run(jb: JitterBuffer, arrivals: Arrival[], seq0: number, endMs: number) {
  const released: (number | 'L')[] = [];
  const drain = (now: number) => {
    for (;;) {
      const n = jb.pop(now);
      if (n === JB_NONE) return;
      if (n === JB_LOST) released.push('L');
      else released.push(jb.store[jb.releasedOffset] | (jb.store[jb.releasedOffset + 1] << 8));
    }
  };
  let k = 0;
  for (let now = 0; now <= endMs; now += 5) {
    while (k < arrivals.length && arrivals[k].at <= now) {
      const a = arrivals[k++];
      const idx = (a.seq - seq0) & 0xffff;
      push(jb, a.seq, a.ts, payloadFor(idx), a.at);
      drain(a.at);
    }
    drain(now);
  }
  return released;
}

t.test(
  'reordering, duplication and 5% loss: every frame released once, in order; each loss concealed once',
  async (t) => {
    const frames = 3000;
    const seq0 = 65000; // wraps during the run
    const { arrivals, dropped } = network(frames, {
      seed: 1,
      meanJitterMs: 8,
      loss: 0.05,
      dup: 0.05,
      seq0,
      ts0: 0xffff0000,
    });
    const reordered = arrivals.filter((a, i) => i > 0 && ((a.seq - arrivals[i - 1].seq) & 0xffff) > 0x8000).length;
    t.ok(reordered > 50, `the network reorders (${reordered} packets overtaken)`);
    const jb = new JitterBuffer({ clockRate: 8000, ticksPerFrame: 160, maxPayloadBytes: 160 });
    const released = run(jb, arrivals, seq0, frames * 20 + 500);
    t.equal(released.length, frames, 'one output per frame');
    let inOrder = true;
    let lostMatches = 0;
    let lateLost = 0;
    for (let i = 0; i < frames; i++) {
      const r = released[i];
      if (r === 'L') {
        if (dropped.has(i)) lostMatches++;
        else lateLost++;
      } else if (r !== i) inOrder = false;
    }
    t.ok(inOrder, 'released frames are in sequence order');
    t.equal(lostMatches, dropped.size, 'every dropped packet is reported lost exactly at its place');
    t.ok(dropped.size > 100 && dropped.size < 200, `about 5% dropped (${dropped.size})`);
    t.ok(lateLost <= frames * 0.01, `few packets arrive after their deadline (${lateLost})`);
    t.ok(
      jb.stats.duplicates + jb.stats.late >= 100,
      `duplicates discarded (${jb.stats.duplicates} dup, ${jb.stats.late} late)`,
    );
    t.equal(jb.depth, 0, 'nothing left behind');
  },
);

t.test('target delay adapts to measured jitter within 20..200 ms', async (t) => {
  const calm = network(1500, { seed: 2, meanJitterMs: 0.5, loss: 0, dup: 0, seq0: 1, ts0: 1 });
  const jbCalm = new JitterBuffer({ clockRate: 8000, ticksPerFrame: 160, maxPayloadBytes: 160, initialDelayMs: 100 });
  run(jbCalm, calm.arrivals, 1, 1500 * 20 + 500);
  t.equal(jbCalm.targetDelayMs, 20, `a clean network decays to the minimum (jitter ${jbCalm.jitterMs.toFixed(2)} ms)`);

  const rough = network(1500, { seed: 3, meanJitterMs: 25, loss: 0, dup: 0, seq0: 1, ts0: 1 });
  const jbRough = new JitterBuffer({ clockRate: 8000, ticksPerFrame: 160, maxPayloadBytes: 160 });
  const released = run(jbRough, rough.arrivals, 1, 1500 * 20 + 1000);
  t.ok(jbRough.jitterMs > 10, `jitter measured (${jbRough.jitterMs.toFixed(1)} ms)`);
  t.ok(
    jbRough.targetDelayMs > 50 && jbRough.targetDelayMs <= 200,
    `delay grows with jitter (${jbRough.targetDelayMs.toFixed(1)} ms)`,
  );
  const late = released.filter((r) => r === 'L').length;
  t.ok(late < 1500 * 0.05, `adapted delay keeps late losses low (${late})`);

  const storm = network(600, { seed: 4, meanJitterMs: 400, loss: 0, dup: 0, seq0: 1, ts0: 1 });
  const jbStorm = new JitterBuffer({ clockRate: 8000, ticksPerFrame: 160, maxPayloadBytes: 160 });
  run(jbStorm, storm.arrivals, 1, 600 * 20 + 5000);
  t.equal(jbStorm.targetDelayMs, 200, 'capped at 200 ms');
});

t.test('at_deadline releases in-order frames only at their deadline; on_arrival at once', async (t) => {
  const paced = new JitterBuffer({
    clockRate: 8000,
    ticksPerFrame: 160,
    maxPayloadBytes: 160,
    release: 'at_deadline',
    initialDelayMs: 40,
  });
  push(paced, 10, 1600, payloadFor(0), 1000);
  t.equal(paced.pop(1000), JB_NONE, 'held');
  t.equal(paced.pop(1039), JB_NONE, 'still held just before target delay');
  t.equal(paced.pop(1040), 160, 'released at arrival + target');
  const eager = new JitterBuffer({ clockRate: 8000, ticksPerFrame: 160, maxPayloadBytes: 160 });
  push(eager, 10, 1600, payloadFor(0), 1000);
  t.equal(eager.pop(1000), 160, 'released on arrival');
  t.equal(eager.pop(1000), JB_NONE, 'nothing more, and nothing missing');
  t.equal(eager.pop(5000), JB_NONE, 'silence from the peer is not loss');
  push(eager, 12, 1920, payloadFor(2), 1040);
  t.equal(eager.pop(1040), JB_NONE, 'gap: waits for 11');
  push(eager, 11, 1760, payloadFor(1), 1045);
  t.equal(eager.pop(1045), 160);
  t.equal(firstByte(eager), 1);
  t.equal(eager.pop(1045), 160);
  t.equal(firstByte(eager), 2);
});

t.test('a sequence jump beyond RFC 3550 MAX_DROPOUT restarts the stream; oversize payloads are rejected', async (t) => {
  const jb = new JitterBuffer({ clockRate: 8000, ticksPerFrame: 160, maxPayloadBytes: 160 });
  push(jb, 100, 0, payloadFor(1), 0);
  t.equal(jb.pop(0), 160);
  push(jb, 30000, 999999, payloadFor(7), 20);
  t.equal(jb.pop(20), 160, 'new stream released at once, no 30000 losses');
  t.equal(firstByte(jb), 7);
  t.equal(jb.stats.resyncs, 1);
  t.equal(jb.stats.lost, 0);
  t.notOk(push(jb, 30001, 0, new Uint8Array(400), 40));
  t.equal(jb.stats.rejected, 1);
});

t.test('the payload is read where it lies in the packet and released in place', async (t) => {
  const jb = new JitterBuffer({ clockRate: 8000, ticksPerFrame: 160, maxPayloadBytes: 160 });
  const packet = new Uint8Array(12 + 160 + 4);
  packet.fill(0xee);
  for (let i = 0; i < 160; i++) packet[12 + i] = i;
  t.ok(jb.push({ sequenceNumber: 7, timestamp: 0xfffffff0, payloadOffset: 12, payloadLength: 160 }, packet, 0));
  packet.fill(0); // the caller reuses its buffer: the jitter buffer kept its own copy
  t.equal(jb.pop(0), 160);
  t.same(
    Array.from(jb.store.subarray(jb.releasedOffset, jb.releasedOffset + 160)),
    Array.from({ length: 160 }, (_, i) => i),
  );
  t.equal(jb.lastTimestamp, 0xfffffff0);
  t.ok(jb.push({ sequenceNumber: 8, timestamp: 0x90, payloadOffset: 12, payloadLength: 160 }, packet, 20));
  t.equal(jb.pop(20), 160, 'a timestamp that wrapped past 2^32 follows on');
  t.equal(jb.lastTimestamp, 0x90);
});

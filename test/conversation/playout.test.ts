import t from 'tap';
import { Playout, type PlayoutOwner } from '../../src/conversation/playout.js';
import { audioBlockPool } from '../../src/media/audio-block-pool.js';
import { TimeStretch } from '../../src/media/time-stretch.js';

class Owner implements PlayoutOwner {
  state = 'queued';
  constructor(readonly name: string) {}
}

interface Sent {
  owner: string;
  firstSample: number;
  playedEnd: number;
  /** Clock ticks run before this frame went out. */
  atTick: number;
}

function setup(speed = 1) {
  const sent: Sent[] = [];
  const drained: string[] = [];
  let ticks = 0;
  let accept = true;
  const playout = new Playout<Owner>({
    engineRate: 8000,
    outputFormat: 'pcm_8000',
    speed,
    noise: null,
    sink: {
      frame(owner, pcm, _encoded, playedEnd) {
        if (!accept) return false;
        sent.push({ owner: owner.name, firstSample: pcm[0], playedEnd, atTick: ticks });
        return true;
      },
      drained: (owner) => drained.push(owner.name),
    },
  });
  const tick = () => {
    ticks++;
    playout.tick();
  };
  return { playout, sent, drained, tick, block: (b: boolean) => (accept = !b) };
}

/** `frames` 20 ms frames at 8 kHz, each filled with its index + base. */
function audio(frames: number, base = 1): Int16Array {
  const pcm = new Int16Array(frames * 160);
  for (let f = 0; f < frames; f++) pcm.fill(base + f, f * 160, (f + 1) * 160);
  return pcm;
}

t.test('audio reaching an idle playout sends its first frame at once, then one frame per tick', async (t) => {
  const { playout, sent, drained, tick } = setup();
  const a = new Owner('a');
  tick();
  t.equal(sent.length, 0, 'nothing queued, nothing sent');
  playout.enqueue(a, audio(5));
  t.same(sent, [{ owner: 'a', firstSample: 1, playedEnd: 160, atTick: 1 }], 'the first frame before the next tick');
  playout.enqueue(a, audio(2, 6));
  t.equal(sent.length, 1, 'audio for a busy playout waits for the clock');
  for (let i = 0; i < 6; i++) tick();
  t.same(
    sent.map((s) => s.firstSample),
    [1, 2, 3, 4, 5, 6, 7],
    'every frame once, in order',
  );
  t.same(
    sent.map((s) => s.atTick),
    [1, 2, 3, 4, 5, 6, 7],
    'one frame per tick after the first',
  );
  t.same(drained, ['a'], 'drained once, after its last frame');
  tick();
  t.equal(sent.length, 7, 'nothing more');
});

t.test('a held frame (client backed up) is not an idle playout: new audio waits for the clock', async (t) => {
  const { playout, sent, tick, block } = setup();
  const a = new Owner('a');
  block(true);
  playout.enqueue(a, audio(1));
  t.equal(sent.length, 0, 'refused, held');
  t.equal(playout.idle, false);
  playout.enqueue(a, audio(1, 2));
  t.equal(sent.length, 0, 'no second attempt outside the clock');
  block(false);
  tick();
  tick();
  t.same(
    sent.map((s) => [s.firstSample, s.atTick]),
    [
      [1, 1],
      [2, 2],
    ],
    'the held frame first, on the clock',
  );
});

t.test('with time-stretch, the first stretched audio also goes out at once', async (t) => {
  const { playout, sent, tick } = setup(1.2);
  const a = new Owner('a');
  playout.enqueue(a, audio(10));
  t.equal(sent.length, 1, 'first frame at once');
  t.equal(sent[0].atTick, 0);
  playout.finish(a);
  for (let i = 0; i < 20; i++) tick();
  const total = sent.at(-1)!.playedEnd;
  t.ok(
    total > 10 * 160 * 0.75 && total < 10 * 160,
    `the stretched audio played, shorter than the input (${total} samples)`,
  );
  t.same(
    sent.slice(1).map((s) => s.atTick),
    sent.slice(1).map((_, i) => i + 1),
    'the rest one per tick',
  );
});

t.test(
  'with time-stretch, engine chunks of any length play exactly what the stretcher makes of their 40 ms pieces',
  async (t) => {
    const rate = 8000;
    const speed = 1.25;
    const piece = (rate * 40) / 1000;
    const frames: number[] = [];
    const playout = new Playout<Owner>({
      engineRate: rate,
      outputFormat: 'pcm_8000',
      speed,
      noise: null,
      sink: {
        frame(_owner, pcm) {
          frames.push(...pcm);
          return true;
        },
        drained: () => undefined,
      },
    });
    // A reference stretcher fed the same pieces: the playout must queue its output, sample for sample.
    const reference = new TimeStretch({ sampleRate: rate, maxInput: piece, speed });
    const refOut = new Int16Array(reference.maxOutput(piece) * 2);
    const expected: number[] = [];
    const owner = new Owner('a');
    let seed = 7;
    const lengths = [800, 100, 2000, 333, 6000, 1];
    for (const length of lengths) {
      const chunk = Int16Array.from({ length }, () => ((seed = (seed * 1103515245 + 12345) >>> 0) >> 17) - 16384);
      playout.enqueue(owner, chunk);
      for (let i = 0; i < length; i += piece) {
        const m = reference.process(chunk.slice(i, Math.min(length, i + piece)), refOut);
        expected.push(...refOut.subarray(0, m));
      }
    }
    playout.finish(owner);
    expected.push(...refOut.subarray(0, reference.flush(refOut)));
    for (let i = 0; i < 200 && frames.length < expected.length; i++) playout.tick();
    t.ok(
      expected.length > 0.75 * lengths.reduce((a, b) => a + b) && expected.length < lengths.reduce((a, b) => a + b),
      'the audio was stretched',
    );
    t.same(frames.slice(0, expected.length), expected, 'the same samples in the same order');
    t.ok(
      frames.slice(expected.length).every((v) => v === 0),
      'then silence to the end of the last frame',
    );
  },
);

t.test(
  "queued audio sits in the worker's block pool: given back once played, on barge-in and on destroy",
  async (t) => {
    const pool = audioBlockPool(8000);
    const base = pool.stats().blocksInUse;
    const { playout, sent, tick } = setup();
    const a = new Owner('a');
    const b = new Owner('b');
    playout.enqueue(a, audio(60)); // 1.2 s: two blocks of 1 s
    t.equal(pool.stats().blocksInUse - base, 2);
    for (let i = 0; i < 60; i++) tick();
    t.equal(sent.length, 60, 'all of it played');
    t.equal(pool.stats().blocksInUse - base, 0, 'played out: blocks back');
    playout.enqueue(b, audio(75));
    t.equal(pool.stats().blocksInUse - base, 2);
    t.equal(playout.clear(b), 74 * 160, 'barge-in drops what was not sent');
    t.equal(pool.stats().blocksInUse - base, 0, 'cleared: blocks back');
    playout.enqueue(a, audio(120));
    t.equal(pool.stats().blocksInUse - base, 3);
    playout.destroy();
    t.equal(pool.stats().blocksInUse - base, 0, 'destroyed: blocks back');
  },
);

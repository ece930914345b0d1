import t from 'tap';
import { Playout, type PlayoutOwner } from '../../src/conversation/playout.js';

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
  t.ok(total > 10 * 160 * 0.75 && total < 10 * 160, `the stretched audio played, shorter than the input (${total} samples)`);
  t.same(
    sent.slice(1).map((s) => s.atTick),
    sent.slice(1).map((_, i) => i + 1),
    'the rest one per tick',
  );
});

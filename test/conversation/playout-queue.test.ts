import t from 'tap';
import { PlayoutQueue } from '../../src/conversation/playout-queue.js';
import { AudioBlockPool, type BlockPoolClock } from '../../src/media/audio-block-pool.js';

const clock: BlockPoolClock = { now: () => 0, schedule: () => undefined };
/** Blocks of 100 samples: a few hundred samples already cross several blocks. */
const BLOCK = 100;

function ramp(from: number, n: number): Int16Array {
  return Int16Array.from({ length: n }, (_, i) => from + i);
}

function readAll<U>(q: PlayoutQueue<U>, owner: U, chunk = 37): number[] {
  const out: number[] = [];
  const dst = new Int16Array(chunk);
  for (let n = q.read(owner, dst, 0, chunk); n > 0; n = q.read(owner, dst, 0, chunk)) out.push(...dst.subarray(0, n));
  return out;
}

t.test(
  'samples come out in order across block boundaries, and every block goes back to the pool once read',
  async (t) => {
    const pool = new AudioBlockPool(BLOCK, clock);
    const q = new PlayoutQueue<string>(pool);
    q.push('a', ramp(0, 250));
    q.push('a', ramp(250, 1000), 10, 90); // part of a lent array: samples 260..339
    t.equal(q.samples, 330);
    t.equal(pool.stats().blocksInUse, 4, '330 samples in blocks of 100');
    const got = readAll(q, 'a');
    t.same(got, [...ramp(0, 250), ...ramp(260, 80)]);
    t.ok(q.isEmpty);
    t.equal(q.headOwner(), null);
    t.equal(pool.stats().blocksInUse, 0, 'all given back');
    q.push('a', ramp(5, 3));
    t.same(readAll(q, 'a'), [5, 6, 7], 'usable again after running empty');
  },
);

t.test("a read stops at the next owner's audio; that owner is then at the head", async (t) => {
  const q = new PlayoutQueue<string>(new AudioBlockPool(BLOCK, clock));
  q.push('a', ramp(0, 150));
  q.push('b', ramp(1000, 120));
  const dst = new Int16Array(400);
  t.equal(q.headOwner(), 'a');
  t.equal(q.read('b', dst, 0, 400), 0, 'b is not at the head');
  t.equal(q.read('a', dst, 0, 400), 150, "only a's samples");
  t.equal(q.headOwner(), 'b');
  t.equal(q.read('b', dst, 10, 400), 120);
  t.same([...dst.subarray(10, 130)], [...ramp(1000, 120)], 'written from the offset asked');
});

t.test('dropping an owner skips its audio wherever it is queued, and counts it', async (t) => {
  const pool = new AudioBlockPool(BLOCK, clock);
  const q = new PlayoutQueue<string>(pool);
  q.push('a', ramp(0, 130));
  q.push('b', ramp(1000, 170));
  q.push('a', ramp(2000, 40));
  q.push('c', ramp(3000, 30));
  t.ok(q.has('b'));
  t.equal(q.drop('b'), 170, "b's samples dropped");
  t.equal(q.drop('b'), 0, 'nothing left to drop');
  t.notOk(q.has('b'));
  t.equal(q.samples, 200);
  t.same(readAll(q, 'a'), [...ramp(0, 130), ...ramp(2000, 40)], 'a plays on past the dropped audio');
  t.equal(q.headOwner(), 'c');
  t.equal(q.drop('c'), 30);
  t.ok(q.isEmpty, 'dropped audio does not count as queued');
  t.equal(q.headOwner(), null);
  t.equal(pool.stats().blocksInUse, 0, 'the skipped blocks went back too');
});

t.test('dropping the owner being read mid-block leaves the next owner intact', async (t) => {
  const q = new PlayoutQueue<string>(new AudioBlockPool(BLOCK, clock));
  q.push('a', ramp(0, 90));
  q.push('b', ramp(500, 50));
  const dst = new Int16Array(40);
  t.equal(q.read('a', dst, 0, 40), 40);
  t.equal(q.drop('a'), 50, 'what a had left');
  t.same(readAll(q, 'b'), [...ramp(500, 50)]);
});

t.test('clear gives every block back, queued or half-read', async (t) => {
  const pool = new AudioBlockPool(BLOCK, clock);
  const q = new PlayoutQueue<string>(pool);
  q.push('a', ramp(0, 450));
  q.read('a', new Int16Array(120), 0, 120);
  t.equal(pool.stats().blocksInUse, 4);
  q.clear();
  t.equal(pool.stats().blocksInUse, 0);
  t.ok(q.isEmpty);
  t.notOk(q.has('a'));
});

import t from 'tap';
import {
  AudioBlockPool,
  SLAB_BYTES,
  SLAB_IDLE_RELEASE_MS,
  type BlockPoolClock,
} from '../../src/media/audio-block-pool.js';

/** A clock the test moves by hand; scheduled runs fire when it passes their time. */
class ManualClock implements BlockPoolClock {
  at = 0;
  private due: { at: number; run: () => void }[] = [];
  now(): number {
    return this.at;
  }
  schedule(run: () => void, ms: number): void {
    this.due.push({ at: this.at + ms, run });
  }
  advance(ms: number): void {
    this.at += ms;
    for (;;) {
      const i = this.due.findIndex((d) => d.at <= this.at);
      if (i < 0) return;
      this.due.splice(i, 1)[0].run();
    }
  }
  get pending(): number {
    return this.due.length;
  }
}

const BLOCK = 8000; // 1 s at 8 kHz: 16,000 bytes

t.test('blocks are views of 2 MiB slabs: 131 blocks of 1 s at 8 kHz, 65 at 16 kHz', async (t) => {
  const narrow = new AudioBlockPool(8000, new ManualClock());
  const wide = new AudioBlockPool(16000, new ManualClock());
  t.equal(narrow.blocksPerSlab, Math.floor(SLAB_BYTES / 16000));
  t.equal(narrow.blocksPerSlab, 131);
  t.equal(wide.blocksPerSlab, 65);
  const a = narrow.take();
  const b = narrow.take();
  t.equal(a.length, 8000);
  t.equal(a.buffer, b.buffer, 'one buffer behind both');
  t.equal(a.buffer.byteLength, 131 * 16000);
  t.not(a.byteOffset, b.byteOffset);
});

t.test('a steady workload reuses returned blocks: no new slab after the first round', async (t) => {
  const pool = new AudioBlockPool(BLOCK, new ManualClock());
  const sessions = 40;
  // Each session holds a 30-block turn while its previous 30-block turn plays back: 60 blocks each, 2400 in all.
  let playing: Int16Array[][] = [];
  let carvedAfterFirstRound = -1;
  for (let round = 0; round < 6; round++) {
    const turns = Array.from({ length: sessions }, () => Array.from({ length: 30 }, () => pool.take()));
    for (const blocks of playing) for (const b of blocks) pool.give(b);
    playing = turns;
    if (round === 1) carvedAfterFirstRound = pool.stats().slabsCarved;
  }
  const s = pool.stats();
  t.equal(s.slabsCarved, carvedAfterFirstRound, 'rounds 3-6 carved nothing');
  t.equal(s.slabsCarved, Math.ceil((sessions * 60) / 131), 'exactly the concurrent need, in slabs');
  t.equal(s.blocksInUse, sessions * 30);
  t.equal(s.slabsReleased, 0);
});

t.test('blocks of different owners never alias while both are out', async (t) => {
  const pool = new AudioBlockPool(BLOCK, new ManualClock());
  const out: { owner: number; block: Int16Array }[] = [];
  // Interleaved takes and gives (churn), each owner writing its own pattern over its whole block.
  for (let step = 0; step < 2000; step++) {
    if (out.length > 0 && step % 3 === 2) {
      const { owner, block } = out.splice((step * 7919) % out.length, 1)[0];
      if (
        !t.ok(
          block.every((v) => v === owner),
          `block of owner ${owner} intact when given back`,
        )
      )
        t.bailout('aliasing');
      pool.give(block);
    } else {
      const block = pool.take();
      block.fill(step);
      out.push({ owner: step, block });
    }
  }
  const corrupted = out.filter(({ owner, block }) => !block.every((v) => v === owner));
  t.same(
    corrupted.map((o) => o.owner),
    [],
    'every block still out holds its own pattern',
  );
  const buffers = [...new Set(out.map((o) => o.block.buffer))];
  const places = new Set(out.map(({ block }) => `${buffers.indexOf(block.buffer)}:${block.byteOffset}`));
  t.equal(places.size, out.length, 'no two owners share a block');
  t.equal(pool.stats().blocksInUse, out.length);
});

t.test(
  'a block given back twice, or one not of the pool, throws (a second owner would corrupt the first)',
  async (t) => {
    const pool = new AudioBlockPool(BLOCK, new ManualClock());
    const a = pool.take();
    pool.give(a);
    t.throws(() => pool.give(a), /given back twice/);
    t.throws(() => pool.give(new Int16Array(BLOCK)), /not a block of this pool/);
    t.throws(
      () => pool.give(pool.take().subarray(0, 100)),
      /not a block of this pool/,
      'a view of a block is not the block',
    );
    const b = pool.take();
    const c = pool.take();
    t.not(b, c, 'two takes, two blocks');
    t.equal(pool.stats().blocksInUse, 3);
  },
);

t.test('retention: a wholly free slab is released after SLAB_IDLE_RELEASE_MS, kept if used again before', async (t) => {
  const clock = new ManualClock();
  const pool = new AudioBlockPool(BLOCK, clock);
  const per = pool.blocksPerSlab;
  // A burst: five slabs' worth out at once.
  const burst = Array.from({ length: per * 5 }, () => pool.take());
  t.equal(pool.stats().slabs, 5);
  // It ends: all but one block of the first slab come back.
  const kept = burst[0];
  for (const b of burst.slice(1)) pool.give(b);
  t.equal(pool.stats().slabs, 5, 'nothing released at once');
  clock.advance(SLAB_IDLE_RELEASE_MS - 1);
  t.equal(pool.stats().slabs, 5, 'nor before the idle time');
  // A slab used again in the meantime is no longer idle: take one block (from the oldest slab with a free one).
  const again = pool.take();
  t.equal(again.buffer, kept.buffer, 'taken from the oldest slab, which is still in use');
  clock.advance(1);
  const s = pool.stats();
  t.equal(s.slabs, 1, 'the four wholly free slabs are released');
  t.equal(s.slabsReleased, 4);
  t.equal(s.bytes, per * 16000, 'the bound: live blocks rounded up to whole slabs');
  t.equal(s.blocksInUse, 2);
  t.equal(clock.pending, 0, 'no sweep left scheduled');

  // Everything back: an idle pool holds nothing a minute later.
  pool.give(kept);
  pool.give(again);
  clock.advance(SLAB_IDLE_RELEASE_MS / 2);
  t.equal(pool.stats().slabs, 1);
  clock.advance(SLAB_IDLE_RELEASE_MS / 2);
  t.same(pool.stats().slabs, 0, 'idle: no slab kept');
  t.equal(pool.stats().bytes, 0);
  // And it works on afterwards.
  const fresh = pool.take();
  t.equal(fresh.length, BLOCK);
  t.equal(pool.stats().slabsCarved, 6);
  t.throws(() => pool.give(kept), /not a block of this pool/, "a block of a released slab is not the pool's any more");
});

t.test('a slab freed later than another is released on its own schedule', async (t) => {
  const clock = new ManualClock();
  const pool = new AudioBlockPool(BLOCK, clock);
  const per = pool.blocksPerSlab;
  const first = Array.from({ length: per }, () => pool.take());
  const second = Array.from({ length: per }, () => pool.take());
  const third = pool.take(); // keeps a third slab in use
  for (const b of second) pool.give(b);
  clock.advance(SLAB_IDLE_RELEASE_MS / 2);
  for (const b of first) pool.give(b);
  clock.advance(SLAB_IDLE_RELEASE_MS / 2);
  t.equal(pool.stats().slabs, 2, 'the slab free for a minute is gone, the one free for half a minute stays');
  clock.advance(SLAB_IDLE_RELEASE_MS / 2);
  t.equal(pool.stats().slabs, 1);
  t.equal(pool.stats().blocksInUse, 1);
  pool.give(third);
});

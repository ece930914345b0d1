import t from 'tap';
import { ownedTimer, slidingTimer } from '../../src/conversation/timer.js';
import { ManualTimers } from './harness.js';

t.test(
  'a sliding timer fires its delay after the last start, with one pending timer however often it is started',
  async (t) => {
    const timers = new ManualTimers();
    let fired = 0;
    const idle = slidingTimer(timers, 1000, () => fired++);
    t.equal(idle.armed, false);
    for (let i = 0; i < 100; i++) {
      idle.start();
      t.ok(timers.pending <= 1, 'never more than one pending timer');
      timers.advance(20);
    }
    // Now 2000 ms; the last start was at 1980 ms, so the deadline is 2980 ms.
    timers.advance(970);
    t.equal(fired, 0, 'not before the deadline');
    t.equal(idle.armed, true);
    timers.advance(10);
    t.equal(fired, 1, 'at the deadline');
    t.equal(idle.armed, false);
    t.equal(timers.pending, 0, 'nothing left pending');
    timers.advance(5000);
    t.equal(fired, 1, 'once');
  },
);

t.test('a sliding timer fires exactly when an owned timer started at the same moments does', async (t) => {
  const timers = new ManualTimers();
  const firedAt: Record<string, number[]> = { owned: [], sliding: [] };
  const owned = ownedTimer(timers, 300, () => firedAt.owned.push(timers.now()));
  const sliding = slidingTimer(timers, 300, () => firedAt.sliding.push(timers.now()));
  const starts = [0, 50, 120, 700, 990, 1000, 2500];
  let at = 0;
  for (const s of starts) {
    timers.advance(s - at);
    at = s;
    owned.start();
    sliding.start();
  }
  timers.advance(1000);
  t.same(firedAt.sliding, firedAt.owned);
  t.equal(firedAt.owned.length, 3, 'three quiet spells of 300 ms');
});

t.test('a cancelled sliding timer does not fire; started again it counts from then', async (t) => {
  const timers = new ManualTimers();
  let fired = 0;
  const idle = slidingTimer(timers, 100, () => fired++);
  idle.start();
  timers.advance(50);
  idle.cancel();
  t.equal(timers.pending, 0);
  timers.advance(500);
  t.equal(fired, 0);
  idle.start();
  timers.advance(99);
  t.equal(fired, 0);
  timers.advance(1);
  t.equal(fired, 1);
  const disabled = slidingTimer(timers, null, () => fired++);
  disabled.start();
  t.equal(disabled.armed, false, 'a disabled timer is a no-op');
  t.equal(timers.pending, 0);
});

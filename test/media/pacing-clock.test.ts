import t from 'tap';
import { PacingClock, type PacedStream, type TimerApi } from '../../src/media/pacing-clock.js';

/** An injected clock: time moves only when the test says; the one timer fires when time reaches it. */
function fakeTime() {
  let now = 1000;
  let pending: { fn: () => void; at: number } | undefined;
  let armed = 0;
  const timers: TimerApi = {
    set: (fn, ms) => {
      armed++;
      pending = { fn, at: now + ms };
      return pending;
    },
    clear: (h) => {
      if (pending === h) pending = undefined;
    },
  };
  /** Advances time in 1 ms steps, firing the timer when due (as an event loop would). */
  const advance = (ms: number) => {
    const end = now + ms;
    while (now < end) {
      now++;
      while (pending && pending.at <= now) {
        const p = pending;
        pending = undefined;
        p.fn();
      }
    }
  };
  /** Jumps time without firing (a stall: the event loop was blocked). */
  const stall = (ms: number) => {
    now += ms;
  };
  return { now: () => now, timers, advance, stall, timersArmed: () => armed, hasTimer: () => pending !== undefined };
}

function counter(): PacedStream & { frames: number[] } {
  const frames: number[] = [];
  return { frames, tick: (f) => frames.push(f) };
}

t.test('50 frames per second against the injected clock, one timer for every stream', async (t) => {
  const time = fakeTime();
  const clock = new PacingClock({ now: time.now, timers: time.timers });
  const a = counter();
  const b = counter();
  clock.register(a);
  clock.register(b);
  time.advance(10_000);
  t.equal(a.frames.length, 500, '10 s = 500 frames');
  t.equal(b.frames.length, 500);
  t.same(a.frames.slice(0, 5), [0, 1, 2, 3, 4], 'frame numbers count up from 0');
  t.equal(time.timersArmed(), 501, 'one timer re-armed per frame, shared by both streams');
  t.equal(clock.stats.skipped, 0);
});

t.test('no drift: a timer that fires late does not lose frames, the deadline schedule absorbs it', async (t) => {
  const time = fakeTime();
  // A timer that always fires 3 ms late (as setTimeout does under load).
  const lateTimers: TimerApi = { set: (fn, ms) => time.timers.set(fn, ms + 3), clear: time.timers.clear };
  const clock = new PacingClock({ now: time.now, timers: lateTimers });
  const a = counter();
  clock.register(a);
  time.advance(60_000);
  t.ok(Math.abs(a.frames.length - 3000) <= 1, `60 s = 3000 frames despite late timers (${a.frames.length})`);
});

t.test('after a stall: bounded catch-up, no burst, schedule re-anchored, frame numbers continuous', async (t) => {
  const time = fakeTime();
  const clock = new PacingClock({ now: time.now, timers: time.timers, maxCatchUpFrames: 3 });
  const a = counter();
  clock.register(a);
  time.advance(1000);
  t.equal(a.frames.length, 50);
  time.stall(500); // the frames due at +20 ... +500 ms: 25 overdue
  time.advance(1);
  t.equal(a.frames.length, 53, 'only 3 frames run at once after the stall');
  t.equal(clock.stats.skipped, 22, 'the rest skipped');
  t.equal(clock.stats.stalls, 1);
  time.advance(19);
  t.equal(a.frames.length, 53, 'no further burst');
  time.advance(1);
  t.equal(a.frames.length, 54, 'next frame a period after the stall');
  time.advance(1000);
  t.equal(a.frames.length, 104, 'back to 50 frames per second');
  t.same(
    a.frames,
    Array.from({ length: 104 }, (_, i) => i),
    'frame numbers (RTP timestamps) continuous',
  );

  // A short hiccup within the bound is fully caught up.
  time.stall(60); // three frames due: within the bound
  time.advance(1);
  t.equal(a.frames.length, 107, 'all three run');
  t.equal(clock.stats.skipped, 22, 'nothing skipped for a short hiccup');
});

t.test(
  'register and unregister: late joiners count from 0, removal inside a tick, clock stops with the last stream',
  async (t) => {
    const time = fakeTime();
    const order: string[] = [];
    const clock = new PacingClock({
      now: time.now,
      timers: time.timers,
      onFrameStart: () => order.push('start'),
      onFrameEnd: () => order.push('end'),
    });
    const a = counter();
    const selfRemoving: PacedStream & { n: number } = {
      n: 0,
      tick() {
        this.n++;
        if (this.n === 3) clock.unregister(this);
      },
    };
    clock.register(a);
    clock.register(selfRemoving);
    time.advance(100);
    t.equal(a.frames.length, 5);
    t.equal(selfRemoving.n, 3, 'removed itself during its third tick');
    t.equal(clock.streamCount, 1);
    t.same(order.slice(0, 4), ['start', 'end', 'start', 'end'], 'batch hooks around each frame');
    const late = counter();
    clock.register(late);
    time.advance(40);
    t.same(late.frames, [0, 1]);
    t.throws(() => clock.register(late), 'double registration refused');
    clock.unregister(a);
    clock.unregister(late);
    t.notOk(clock.isRunning, 'stopped with its last stream');
    t.notOk(time.hasTimer(), 'no timer left armed');
    const before = a.frames.length;
    time.advance(200);
    t.equal(a.frames.length, before);
    clock.register(a);
    t.ok(clock.isRunning, 'restarts with a new stream');
    clock.stop();
    t.notOk(time.hasTimer());
  },
);

t.test('real timers: the clock runs and stops (no timing asserted)', async (t) => {
  const clock = new PacingClock();
  const a = counter();
  clock.register(a);
  await new Promise((r) => setTimeout(r, 100));
  clock.unregister(a);
  t.ok(a.frames.length >= 1, `frames ran (${a.frames.length})`);
  t.notOk(clock.isRunning);
});

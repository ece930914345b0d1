// Timer values derived from T1, T2, T4 (RFC 3261 Table 4, RFC 6026) and the manual clock they run on.
import t from 'tap';
import {
  backoff,
  DEFAULT_TIMERS,
  initialDuration,
  ManualClock,
  TimerSet,
  type TimerName,
} from '../../../sip/transaction/index.js';

t.test('RFC 3261 Table 4 and RFC 6026 durations from the defaults T1=500, T2=4000, T4=5000', async (t) => {
  const unreliable: Record<TimerName, number> = {
    A: 500,
    B: 32000,
    D: 32000,
    E: 500,
    F: 32000,
    G: 500,
    H: 32000,
    I: 5000,
    J: 32000,
    K: 5000,
    L: 32000,
    M: 32000,
  };
  const reliable: Partial<Record<TimerName, number>> = {
    B: 32000,
    D: 0,
    F: 32000,
    H: 32000,
    I: 0,
    J: 0,
    K: 0,
    L: 32000,
    M: 32000,
  };
  for (const [name, ms] of Object.entries(unreliable))
    t.equal(initialDuration(name as TimerName, DEFAULT_TIMERS, false), ms, `Timer ${name} over UDP`);
  for (const [name, ms] of Object.entries(reliable))
    t.equal(initialDuration(name as TimerName, DEFAULT_TIMERS, true), ms, `Timer ${name} over TCP`);
  const fast = { T1: 100, T2: 400, T4: 1000 };
  t.equal(initialDuration('B', fast, false), 6400, 'B follows T1');
  t.equal(initialDuration('D', fast, false), 32000, 'D stays at least 32 s');
  t.equal(backoff('A', 8000, DEFAULT_TIMERS), 16000, 'A doubles without a cap');
  t.equal(backoff('E', 4000, DEFAULT_TIMERS), 4000, 'E is capped at T2');
  t.equal(backoff('G', 1000, DEFAULT_TIMERS), 2000);
});

t.test('ManualClock fires in deadline order, including timers set by timers, and honours cancellation', async (t) => {
  const clock = new ManualClock();
  const fired: string[] = [];
  clock.setTimeout(() => fired.push(`b@${clock.now()}`), 200);
  const c = clock.setTimeout(() => fired.push('cancelled'), 150);
  clock.setTimeout(() => {
    fired.push(`a@${clock.now()}`);
    clock.setTimeout(() => fired.push(`a2@${clock.now()}`), 50);
  }, 100);
  clock.setTimeout(() => fired.push(`same@${clock.now()}`), 200);
  clock.clearTimeout(c);
  clock.advance(199);
  t.same(fired, ['a@100', 'a2@150']);
  clock.advance(1);
  t.same(fired, ['a@100', 'a2@150', 'b@200', 'same@200'], 'equal deadlines fire in the order they were set');
  t.equal(clock.now(), 200);
  t.equal(clock.pendingCount, 0);
});

t.test('TimerSet restarts a running timer instead of stacking it', async (t) => {
  const clock = new ManualClock();
  const fired: string[] = [];
  const set = new TimerSet<'X' | 'Y'>(clock, (n) => fired.push(`${n}@${clock.now()}`));
  set.start('X', 100);
  clock.advance(50);
  set.start('X', 100);
  set.start('Y', 10);
  set.cancel('Y');
  t.ok(set.running('X'));
  t.notOk(set.running('Y'));
  clock.advance(200);
  t.same(fired, ['X@150']);
  t.notOk(set.running('X'));
});

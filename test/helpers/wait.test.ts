// until(): polls a condition, sync or async, until it holds; on timeout fails naming what it waited for (a
// function's text read at the timeout); an error the condition throws ends the wait.
import t from 'tap';
import { until, WaitTimeoutError } from './wait.js';

t.test('resolves once the condition holds, checking at once and then again', async (t) => {
  let checks = 0;
  await until(() => ++checks === 1, { what: 'the first check' });
  t.equal(checks, 1, 'a condition that holds is checked once');
  checks = 0;
  await until(() => ++checks === 3, { what: 'the third check', intervalMs: 0 });
  t.equal(checks, 3, 'and checked again until it holds');
});

t.test('an async condition is awaited', async (t) => {
  let checks = 0;
  await until(
    async () => {
      await Promise.resolve();
      return ++checks === 2;
    },
    { what: 'the second check', intervalMs: 0 },
  );
  t.equal(checks, 2);
});

t.test('on timeout it fails with a WaitTimeoutError naming what it waited for', async (t) => {
  const err = await until(() => false, { what: 'a thing that never happens', timeoutMs: 30, intervalMs: 5 }).catch(
    (e: unknown) => e,
  );
  t.ok(err instanceof WaitTimeoutError);
  t.match((err as Error).message, /timed out after 30 ms waiting for a thing that never happens/);

  let seen = 0;
  const late = await until(() => (seen++, false), {
    what: () => `the count to reach 1000 (at ${seen})`,
    timeoutMs: 30,
    intervalMs: 5,
  }).catch((e: unknown) => e);
  t.match(
    (late as Error).message,
    new RegExp(`\\(at ${seen}\\)$`),
    'a function is read at the timeout, showing the state then',
  );
  t.ok(seen > 1, 'after several checks');
});

t.test('an error thrown by the condition ends the wait with that error', async (t) => {
  let checks = 0;
  const err = await until(
    () => {
      checks++;
      throw new Error('the peer exited');
    },
    { what: 'never reached' },
  ).catch((e: unknown) => e);
  t.match(err, { message: 'the peer exited' });
  t.equal(checks, 1, 'not retried');
});

// The node's state as /readyz reads it: starting, ready once every listener accepts, draining from the first
// SIGTERM (never ready again), stopping at the end; a drain that begins during start-up is not undone by the start.
import t from 'tap';
import { Readiness } from '../src/readiness.js';

t.test('starting, ready, draining, stopping', async (t) => {
  const r = new Readiness();
  t.same([r.state, r.ready, r.draining], ['starting', false, false]);
  r.markReady();
  await r.whenReady;
  t.same([r.state, r.ready, r.draining], ['ready', true, false]);
  r.markDraining();
  t.same([r.state, r.ready, r.draining], ['draining', false, true]);
  r.markStopping();
  t.same([r.state, r.ready, r.draining], ['stopping', false, true]);
});

t.test('a drain during start-up stays a drain once the listeners accept', async (t) => {
  const r = new Readiness();
  r.markDraining();
  r.markReady();
  t.same([r.state, r.ready, r.draining], ['draining', false, true]);
});

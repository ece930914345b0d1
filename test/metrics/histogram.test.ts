// The fixed-bucket histogram the hot paths fill: a value goes to the first bucket whose bound it does not exceed
// (Prometheus `le`), past the last one to the overflow bucket; sum and count follow; bounds must ascend.
import t from 'tap';
import { FixedHistogram, SpanTimer } from '../../src/metrics/histogram.js';

t.test('values land in the first bucket whose bound they do not exceed', async (t) => {
  const h = new FixedHistogram([0.1, 1, 10]);
  for (const v of [0, 0.1, 0.2, 1, 5, 10, 11, 1000]) h.observe(v);
  t.same(h.snapshot(), { counts: [2, 2, 2, 2], sum: 1027.3, count: 8 });
});

t.test('bounds that do not ascend are refused', async (t) => {
  t.throws(() => new FixedHistogram([1, 1]), RangeError);
  t.throws(() => new FixedHistogram([2, 1]), RangeError);
});

t.test('a snapshot is a copy: later observations do not change it', async (t) => {
  const h = new FixedHistogram([1]);
  h.observe(0.5);
  const before = h.snapshot();
  h.observe(2);
  t.same(before, { counts: [1, 0], sum: 0.5, count: 1 });
  t.same(h.snapshot(), { counts: [1, 1], sum: 2.5, count: 2 });
});

t.test('a span timer observes the seconds between start and end on its clock', async (t) => {
  const h = new FixedHistogram([0.001, 0.01]);
  let nowMs = 100;
  const span = new SpanTimer(h, () => nowMs);
  span.start();
  nowMs += 5;
  span.end();
  t.same(h.snapshot(), { counts: [0, 1, 0], sum: 0.005, count: 1 });
});

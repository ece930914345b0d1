// prefixView: the per-frame path gets the same view back for a length it has seen, never a new one.
import t from 'tap';
import { prefixView } from '../../src/media/prefix-views.js';

t.test('a length seen before returns the same view; the full length returns the buffer itself', async (t) => {
  const whole = new Int16Array(8);
  const cache = new Map<number, Int16Array>();
  const a = prefixView(cache, whole, 3);
  t.equal(a.length, 3);
  t.equal(prefixView(cache, whole, 3), a, 'same object for the same length');
  t.equal(prefixView(cache, whole, 8), whole);
  t.equal(cache.size, 1, 'the full length is not cached');
  whole[2] = 42;
  t.equal(a[2], 42, 'the view aliases the buffer');
});

import t from 'tap';
import { SampleFifo } from '../../src/media/pipeline.js';
import { LossConcealer } from '../../src/media/plc.js';

t.test('SampleFifo: wraps around, reads exact frames, refuses overflow, discards oldest', async (t) => {
  const f = new SampleFifo(10);
  f.write(Int16Array.from([1, 2, 3, 4, 5, 6, 7]));
  const out = new Int16Array(10);
  t.equal(f.read(out, 5), 5);
  t.same(Array.from(out.subarray(0, 5)), [1, 2, 3, 4, 5]);
  f.write(Int16Array.from([8, 9, 10, 11, 12, 13, 14]));
  t.equal(f.length, 9);
  t.throws(() => f.write(Int16Array.from([1, 2])), RangeError);
  t.equal(f.discard(2), 2);
  t.equal(f.read(out, 10), 7);
  t.same(Array.from(out.subarray(0, 7)), [8, 9, 10, 11, 12, 13, 14]);
  t.equal(f.read(out, 1), 0);
});

t.test('LossConcealer: faded repeat of the last frame, silence after 60 ms, reset on good audio', async (t) => {
  const plc = new LossConcealer(160);
  const good = new Int16Array(160).fill(9000);
  const out = new Int16Array(160);
  plc.process(good, out);
  const lost = [0, 1, 2, 3].map(() => {
    plc.conceal(out);
    return [out[0], out[159]];
  });
  t.equal(lost[0][0], 9000, 'starts at the last level');
  t.ok(lost[0][1] < 9000 && lost[0][1] > lost[1][0] - 100, 'fades within the frame, continuous into the next');
  t.ok(lost[2][1] < 100, 'near zero by the end of the third');
  t.same(lost[3], [0, 0], 'silence afterwards');
  plc.process(good, out);
  plc.conceal(out);
  t.equal(out[0], 9000, 'a good frame restarts the fade');
});

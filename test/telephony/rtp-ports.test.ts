// RTP port allocation: even ports with RTCP above, never one port twice while held, released ports reused last,
// exhaustion reported, the range from the settings.
import t from 'tap';
import { ConfigError, loadSettings } from '../../src/config.js';
import { RtpPorts } from '../../src/telephony/rtp-ports.js';

t.test('even ports inside the range, RTCP above each, every pair once until exhausted', async (t) => {
  const ports = new RtpPorts(40001, 40011);
  t.equal(ports.capacity, 5, '40002, 40004, 40006, 40008, 40010 (RTCP 40011 still inside)');
  const got: number[] = [];
  for (let p = ports.allocate(); p !== null; p = ports.allocate()) got.push(p);
  t.same([...got].sort(), [40002, 40004, 40006, 40008, 40010]);
  t.equal(ports.allocate(), null, 'exhausted');
  t.equal(ports.available, 0);
  t.equal(ports.inUse, 5);
  for (const p of got) t.ok(ports.isHeld(p));
  t.equal(new RtpPorts(40000, 40010).capacity, 5, '40010 has no RTCP port inside the range');
  t.throws(() => new RtpPorts(40001, 40002), RangeError);
});

t.test('a released port comes back only after every other free port', async (t) => {
  const ports = new RtpPorts(30000, 30019); // 10 pairs
  const first = ports.allocate() as number;
  t.ok(ports.release(first));
  const next: number[] = [];
  for (let i = 0; i < 9; i++) next.push(ports.allocate() as number);
  t.notOk(next.includes(first), 'the nine other ports first');
  t.equal(ports.allocate(), first, 'then the released one');
  t.equal(ports.allocate(), null);
  // Release two in order: they come back in that order.
  t.ok(ports.release(next[4]));
  t.ok(ports.release(next[1]));
  t.equal(ports.allocate(), next[4]);
  t.equal(ports.allocate(), next[1]);
});

t.test('a port is never handed out twice while held, over many calls', async (t) => {
  const ports = new RtpPorts(20000, 20199); // 100 pairs
  const held = new Set<number>();
  let seed = 7;
  const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  let duplicates = 0;
  for (let i = 0; i < 20_000; i++) {
    if (held.size > 0 && (rnd() < 0.45 || held.size === 100)) {
      const victim = [...held][Math.floor(rnd() * held.size)];
      held.delete(victim);
      ports.release(victim);
    } else {
      const p = ports.allocate();
      if (p === null) continue;
      if (held.has(p) || p % 2 !== 0 || p < 20000 || p + 1 > 20199) duplicates++;
      held.add(p);
    }
  }
  t.equal(duplicates, 0);
  t.equal(ports.inUse, held.size);
});

t.test('releasing what is not held is reported, not counted', async (t) => {
  const ports = new RtpPorts(30000, 30009);
  const p = ports.allocate() as number;
  t.ok(ports.release(p));
  t.notOk(ports.release(p), 'twice');
  t.notOk(ports.release(p + 1), 'an RTCP port');
  t.notOk(ports.release(29998), 'below the range');
  t.notOk(ports.release(30010), 'above the range');
  t.notOk(ports.release(30000.5));
  t.equal(ports.available, 5);
  const all = [1, 2, 3, 4, 5].map(() => ports.allocate());
  t.equal(new Set(all).size, 5, 'the queue was not corrupted by the refused releases');
});

t.test('the range comes from PARLEY_RTP_PORT_MIN/MAX; the initial order is shuffled', async (t) => {
  const ports = RtpPorts.fromSettings(loadSettings({}));
  t.equal(ports.min, 40000);
  t.equal(ports.capacity, 5000, '40000..49999');
  const sequential = RtpPorts.fromSettings(
    loadSettings({ PARLEY_RTP_PORT_MIN: '50000', PARLEY_RTP_PORT_MAX: '50099' }),
    () => 0.999999,
  );
  const a = [sequential.allocate(), sequential.allocate(), sequential.allocate()];
  t.same(a, [50000, 50002, 50004], 'random() near 1 keeps the natural order');
  const shuffled = new RtpPorts(50000, 50099, () => 0);
  t.not(shuffled.allocate(), 50000, 'random() of 0 moves the first port away');
  const err = t.throws(() =>
    loadSettings({ PARLEY_RTP_PORT_MIN: '40001', PARLEY_RTP_PORT_MAX: '40002' }),
  ) as ConfigError;
  t.equal(err.problems[0].setting, 'PARLEY_RTP_PORT_MIN');
});

// The per-source INVITE token bucket: burst, refill, Retry-After, independence of sources, bounded memory.
import t from 'tap';
import { loadSettings } from '../../src/config.js';
import { InviteRateLimit } from '../../src/telephony/invite-rate-limit.js';

function clock(): { now: () => number; advance(ms: number): void } {
  let ms = 1_000;
  return {
    now: () => ms,
    advance: (d) => {
      ms += d;
    },
  };
}

function drain(limit: InviteRateLimit, source: string, max = 1_000_000): number {
  let allowed = 0;
  while (allowed < max && limit.check(source).allowed) allowed++;
  return allowed;
}

t.test('defaults from the settings: 20 per second, bursts of 40', async (t) => {
  const settings = loadSettings({});
  t.equal(settings.PARLEY_SIP_INVITE_RATE_PER_SEC, 20);
  t.equal(settings.PARLEY_SIP_INVITE_BURST, 40);
  const c = clock();
  const limit = InviteRateLimit.fromSettings(settings, c.now);
  t.equal(drain(limit, '203.0.113.5'), 40, 'a burst of 40 at one instant');
  t.same(limit.check('203.0.113.5'), { allowed: false, retryAfterSec: 1 });
  c.advance(50);
  t.same(limit.check('203.0.113.5'), { allowed: true }, 'one token back after 1/20 s');
  t.equal(limit.check('203.0.113.5').allowed, false);
  c.advance(1000);
  t.equal(drain(limit, '203.0.113.5'), 20, 'a second refills 20');
  const custom = loadSettings({ PARLEY_SIP_INVITE_RATE_PER_SEC: '0.5', PARLEY_SIP_INVITE_BURST: '3' });
  t.equal(drain(InviteRateLimit.fromSettings(custom, c.now), '203.0.113.5'), 3);
  t.throws(() => loadSettings({ PARLEY_SIP_INVITE_RATE_PER_SEC: '0' }), /PARLEY_SIP_INVITE_RATE_PER_SEC/);
  t.throws(() => loadSettings({ PARLEY_SIP_INVITE_BURST: '1.5' }), /PARLEY_SIP_INVITE_BURST/);
});

t.test('Retry-After is the whole seconds until the next token', async (t) => {
  const c = clock();
  const limit = new InviteRateLimit({ ratePerSec: 0.25, burst: 2, now: c.now });
  t.equal(drain(limit, '198.51.100.1'), 2);
  t.same(limit.check('198.51.100.1'), { allowed: false, retryAfterSec: 4 });
  c.advance(2500);
  t.same(limit.check('198.51.100.1'), { allowed: false, retryAfterSec: 2 }, '0.625 tokens: 1.5 s to go, rounded up');
  c.advance(1500);
  t.same(limit.check('198.51.100.1'), { allowed: true });
});

t.test('sources are limited independently; IPv4-mapped IPv6 is the IPv4 source', async (t) => {
  const c = clock();
  const limit = new InviteRateLimit({ ratePerSec: 1, burst: 5, now: c.now });
  t.equal(drain(limit, '192.0.2.1'), 5);
  t.equal(limit.check('::ffff:192.0.2.1').allowed, false, 'same source written as IPv4-mapped IPv6');
  t.equal(drain(limit, '192.0.2.2'), 5, 'another source has its own bucket');
  t.equal(drain(limit, '2001:db8::1'), 5);
});

t.test('a flood from many addresses cannot grow the table past its cap', async (t) => {
  const c = clock();
  const limit = new InviteRateLimit({ ratePerSec: 1, burst: 2, now: c.now, maxSources: 100 });
  for (let i = 0; i < 20_000; i++) {
    limit.check(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    if (limit.size > 100) break;
  }
  t.equal(limit.size, 100);
});

t.test('idle buckets are dropped as calls arrive; a bucket still refilling is kept', async (t) => {
  const c = clock();
  const limit = new InviteRateLimit({ ratePerSec: 10, burst: 20, now: c.now, maxSources: 1000 });
  for (let i = 0; i < 100; i++) limit.check(`192.0.2.${i}`);
  t.equal(limit.size, 100);
  c.advance(10_000); // every bucket full again
  for (let i = 0; i < 50; i++) limit.check(`198.51.100.${i}`);
  t.equal(limit.size, 50, 'each check dropped two idle buckets and added one');

  t.equal(drain(limit, '203.0.113.1'), 20);
  c.advance(500); // five tokens back, not full
  for (let i = 0; i < 200; i++) limit.check(`203.0.113.${100 + (i % 50)}`);
  t.equal(drain(limit, '203.0.113.1'), 5, 'the partly drained bucket survived the sweeps');
});

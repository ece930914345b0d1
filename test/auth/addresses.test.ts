// Client addresses behind proxies and address lists (ip_allowlist, PARLEY_TRUSTED_PROXIES).
import t from 'tap';
import {
  addressEntryProblem,
  addressList,
  clientAddress,
  listHas,
  parseTrustedProxies,
} from '../../src/auth/addresses.js';

t.test('entries: addresses and CIDR ranges of both families', async (t) => {
  for (const ok of ['10.0.0.1', '10.0.0.0/8', '0.0.0.0/0', '2001:db8::1', '2001:db8::/32', '::/0'])
    t.equal(addressEntryProblem(ok), null, ok);
  for (const bad of ['10.0.0', '10.0.0.0/33', '2001:db8::/129', 'example.com', '10.0.0.1/', '10.0.0.1/a', ''])
    t.ok(addressEntryProblem(bad), bad);
});

t.test('lists match addresses, ranges and IPv4-mapped IPv6', async (t) => {
  const list = addressList(['203.0.113.0/24', '198.51.100.7', '2001:db8::/48']);
  t.ok(listHas(list, '203.0.113.200'));
  t.ok(listHas(list, '::ffff:203.0.113.5'));
  t.ok(listHas(list, '198.51.100.7'));
  t.notOk(listHas(list, '198.51.100.8'));
  t.ok(listHas(list, '2001:db8:0:1::5'));
  t.notOk(listHas(list, '2001:db9::1'));
  t.notOk(listHas(list, 'garbage'));
});

t.test('X-Forwarded-For is believed only from trusted proxies, right to left', async (t) => {
  const trusted = parseTrustedProxies('127.0.0.1, 10.0.0.0/8');
  t.equal(clientAddress('192.0.2.1', '203.0.113.9', trusted), '192.0.2.1', 'untrusted peer: its own address');
  t.equal(clientAddress('127.0.0.1', undefined, trusted), '127.0.0.1');
  t.equal(clientAddress('::ffff:127.0.0.1', '203.0.113.9', trusted), '203.0.113.9');
  t.equal(
    clientAddress('127.0.0.1', '198.51.100.1, 203.0.113.9, 10.1.1.1', trusted),
    '203.0.113.9',
    'right-most untrusted hop',
  );
  t.equal(clientAddress('127.0.0.1', '10.2.2.2, 10.1.1.1', trusted), '10.2.2.2', 'all hops trusted: the left-most');
  t.equal(clientAddress('127.0.0.1', 'not-an-ip', trusted), '127.0.0.1', 'malformed header: the socket');
  t.throws(() => parseTrustedProxies('10.0.0.0/40'), /PARLEY_TRUSTED_PROXIES: '10.0.0.0\/40'/);
  t.equal(clientAddress('127.0.0.1', '203.0.113.9', parseTrustedProxies('')), '127.0.0.1', 'no trusted proxies');
});

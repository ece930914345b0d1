// The address classifier shared by save-time URL rules and the guarded client: every special-purpose range refused
// with its class, the IPv6 forms that embed an IPv4 address judged by that address, public addresses allowed; and
// host names judged by their text (numeric IPv4 forms as the URL parser writes them, empty labels, local names).
import t from 'tap';
import { addressClass, hostProblem, isPublicAddress } from '../../src/net/address-policy.js';

t.test('IPv4: each special-purpose range has its class; public unicast has none', async (t) => {
  const table: [string, string | null][] = [
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['100.127.255.254', 'carrier-grade NAT'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.0.0.8', 'IETF protocol assignment'],
    ['192.0.2.1', 'documentation'],
    ['192.88.99.1', '6to4 relay anycast'],
    ['192.168.1.1', 'private'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    // Public neighbours of those ranges.
    ['8.8.8.8', null],
    ['1.1.1.1', null],
    ['9.255.255.255', null],
    ['11.0.0.0', null],
    ['100.63.255.255', null],
    ['100.128.0.0', null],
    ['126.255.255.255', null],
    ['128.0.0.0', null],
    ['172.15.255.255', null],
    ['172.32.0.0', null],
    ['192.167.255.255', null],
    ['192.169.0.0', null],
    ['198.17.255.255', null],
    ['198.20.0.0', null],
    ['223.255.255.255', null],
  ];
  for (const [address, cls] of table) t.equal(addressClass(address), cls, `${address}: ${cls ?? 'public'}`);
});

t.test(
  'IPv6: special ranges refused, IPv4-embedding forms judged by their IPv4 address, global unicast allowed',
  async (t) => {
    const table: [string, string | null][] = [
      ['::', 'unspecified'],
      ['::1', 'loopback'],
      ['0:0:0:0:0:0:0:1', 'loopback'],
      // IPv4-mapped ::ffff:0:0/96, dotted and hex.
      ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
      ['::ffff:7f00:1', 'IPv4-mapped loopback'],
      ['::ffff:10.0.0.1', 'IPv4-mapped private'],
      ['::ffff:169.254.169.254', 'IPv4-mapped link-local'],
      ['::ffff:8.8.8.8', null],
      // IPv4-compatible ::/96 (deprecated) and IPv4-translated ::ffff:0:0:0/96.
      ['::127.0.0.1', 'IPv4-compatible'],
      ['::7f00:1', 'IPv4-compatible'],
      ['::8.8.8.8', 'IPv4-compatible'],
      ['::ffff:0:127.0.0.1', 'IPv4-translated'],
      ['::ffff:0:7f00:1', 'IPv4-translated'],
      // NAT64: the well-known prefix by its IPv4 address; the local-use prefix refused.
      ['64:ff9b::127.0.0.1', 'NAT64 loopback'],
      ['64:ff9b::7f00:1', 'NAT64 loopback'],
      ['64:ff9b::192.168.0.1', 'NAT64 private'],
      ['64:ff9b::8.8.8.8', null],
      ['64:ff9b:1::1', 'local-use NAT64'],
      ['64:ff9b:1:ffff::8.8.8.8', 'local-use NAT64'],
      // 6to4 by its embedded IPv4 address; Teredo refused.
      ['2002:7f00:1::', '6to4 loopback'],
      ['2002:a00:1::1', '6to4 private'],
      ['2002:808:808::1', null],
      ['2001::1', 'Teredo'],
      ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
      ['2001:2::1', 'IETF protocol assignment'],
      ['2001:10::1', 'IETF protocol assignment'],
      ['2001:db8::1', 'documentation'],
      ['3fff::1', 'documentation'],
      ['100::1', 'discard-only'],
      ['fc00::1', 'unique-local'],
      ['fd12:3456::1', 'unique-local'],
      ['fe80::1', 'link-local'],
      ['fe80::1%eth0', 'link-local'],
      ['fec0::1', 'site-local'],
      ['ff02::1', 'multicast'],
      ['ff05::1:3', 'multicast'],
      ['4000::1', 'reserved'],
      ['::2', 'IPv4-compatible'],
      // Global unicast.
      ['2606:4700:4700::1111', null],
      ['2a00:1450:4001:80b::200e', null],
      ['2001:4860:4860::8888', null],
      ['[2606:4700:4700::1111]', null],
    ];
    for (const [address, cls] of table) t.equal(addressClass(address), cls, `${address}: ${cls ?? 'public'}`);
  },
);

t.test('not an address: invalid', async (t) => {
  for (const bad of ['', 'localhost', '1.2.3', '1.2.3.4.5', '::g', '999.1.1.1'])
    t.equal(addressClass(bad), 'invalid', JSON.stringify(bad));
  t.equal(isPublicAddress('example.com'), false);
  t.equal(isPublicAddress('8.8.8.8'), true);
});

t.test('host names as the URL parser writes them: IP literals by class, names by form', async (t) => {
  const hostOf = (url: string) => new URL(url).hostname;
  // Numeric IPv4 forms the WHATWG parser turns into dotted quads.
  for (const url of [
    'http://2130706433/',
    'http://0x7f.1/',
    'http://127.1/',
    'http://0177.0.0.1/',
    'http://0x7f000001/',
  ]) {
    t.same(hostProblem(hostOf(url)), { kind: 'address', address: '127.0.0.1', class: 'loopback' }, url);
  }
  t.same(hostProblem(hostOf('https://[::127.0.0.1]/')), {
    kind: 'address',
    address: '::7f00:1',
    class: 'IPv4-compatible',
  });
  t.same(hostProblem(hostOf('https://[::ffff:0:127.0.0.1]/')), {
    kind: 'address',
    address: '::ffff:0:7f00:1',
    class: 'IPv4-translated',
  });
  t.same(hostProblem(hostOf('https://[64:ff9b::127.0.0.1]/')), {
    kind: 'address',
    address: '64:ff9b::7f00:1',
    class: 'NAT64 loopback',
  });
  t.same(hostProblem(hostOf('https://[2002:7f00:1::]/')), {
    kind: 'address',
    address: '2002:7f00:1::',
    class: '6to4 loopback',
  });
  for (const name of ['localhost..', 'a..example.com', '.example.com', 'example.com..']) {
    t.same(hostProblem(name), { kind: 'name', reason: 'empty label' }, name);
  }
  for (const name of ['localhost', 'localhost.', 'intranet', 'vm']) t.equal(hostProblem(name)?.kind, 'name', name);
  for (const name of ['app.localhost', 'printer.local', 'db.internal', 'nas.home.arpa', 'box.localdomain']) {
    t.same(hostProblem(name), { kind: 'name', reason: 'local name' }, name);
  }
  for (const ok of ['api.example.com', 'example.com.', 'hooks.example.com', '8.8.8.8', '[2606:4700:4700::1111]'])
    t.equal(hostProblem(ok), null, ok);
});

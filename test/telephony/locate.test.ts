// RFC 3263 server location against a real DNS server on loopback (NAPTR, SRV, A, AAAA), RFC 2782 SRV ordering,
// and failover across targets through real sip/ user agents (503, a refused TCP connection).
import { createServer } from 'node:net';
import t from 'tap';
import {
  createUserAgent,
  SipError,
  TransactionTimeoutError,
  TransportError,
  type LocalMedia,
} from '../../sip/index.js';
import {
  failover,
  isFailoverError,
  LocateError,
  Locator,
  orderSrv,
  targetUri,
  type SipTarget,
} from '../../src/telephony/locate.js';
import { startDnsServer, type DnsServer, type ZoneRecord } from './dns-server.js';

t.setTimeout(60_000);

// Documentation addresses (RFC 5737, RFC 3849): only ever resolved here, never sent to.
const ZONE: ZoneRecord[] = [
  {
    name: 'carrier.example',
    type: 'NAPTR',
    data: {
      order: 10,
      preference: 20,
      flags: 'S',
      services: 'SIP+D2U',
      regexp: '',
      replacement: '_sip._udp.carrier.example',
    },
  },
  {
    name: 'carrier.example',
    type: 'NAPTR',
    data: {
      order: 10,
      preference: 10,
      flags: 'S',
      services: 'SIP+D2T',
      regexp: '',
      replacement: '_sip._tcp.carrier.example',
    },
  },
  {
    name: 'carrier.example',
    type: 'NAPTR',
    data: {
      order: 20,
      preference: 10,
      flags: 'S',
      services: 'SIPS+D2T',
      regexp: '',
      replacement: '_sips._tcp.carrier.example',
    },
  },
  {
    name: 'carrier.example',
    type: 'NAPTR',
    data: { order: 5, preference: 10, flags: 'U', services: 'E2U+sip', regexp: '!^.*$!sip:x@y!', replacement: '.' },
  },
  {
    name: 'carrier.example',
    type: 'NAPTR',
    data: { order: 1, preference: 10, flags: 'S', services: 'SIP+D2U', regexp: '', replacement: '.' },
  },
  {
    name: '_sip._tcp.carrier.example',
    type: 'SRV',
    data: { priority: 20, weight: 0, port: 5080, target: 'b.carrier.example' },
  },
  {
    name: '_sip._tcp.carrier.example',
    type: 'SRV',
    data: { priority: 10, weight: 0, port: 5070, target: 'a.carrier.example' },
  },
  {
    name: '_sip._udp.carrier.example',
    type: 'SRV',
    data: { priority: 10, weight: 0, port: 5060, target: 'a.carrier.example' },
  },
  {
    name: '_sips._tcp.carrier.example',
    type: 'SRV',
    data: { priority: 10, weight: 0, port: 5061, target: 'a.carrier.example' },
  },
  { name: 'a.carrier.example', type: 'A', data: '192.0.2.10' },
  { name: 'a.carrier.example', type: 'AAAA', data: '2001:db8::10' },
  { name: 'b.carrier.example', type: 'A', data: '192.0.2.20' },
  // No NAPTR: SRV per transport.
  {
    name: '_sip._udp.srv.example',
    type: 'SRV',
    data: { priority: 10, weight: 0, port: 5062, target: 'host.srv.example' },
  },
  {
    name: '_sip._tcp.srv.example',
    type: 'SRV',
    data: { priority: 10, weight: 0, port: 5063, target: 'host.srv.example' },
  },
  { name: '_sip._tcp.srv.example', type: 'SRV', data: { priority: 20, weight: 0, port: 5064, target: '.' } },
  { name: 'host.srv.example', type: 'A', data: '192.0.2.40' },
  // Priorities.
  {
    name: '_sip._udp.prio.example',
    type: 'SRV',
    data: { priority: 30, weight: 50, port: 5060, target: 'p30.prio.example' },
  },
  {
    name: '_sip._udp.prio.example',
    type: 'SRV',
    data: { priority: 10, weight: 1, port: 5060, target: 'p10.prio.example' },
  },
  {
    name: '_sip._udp.prio.example',
    type: 'SRV',
    data: { priority: 20, weight: 90, port: 5060, target: 'p20.prio.example' },
  },
  { name: 'p10.prio.example', type: 'A', data: '192.0.2.51' },
  { name: 'p20.prio.example', type: 'A', data: '192.0.2.52' },
  { name: 'p30.prio.example', type: 'A', data: '192.0.2.53' },
  // Weights within one priority.
  {
    name: '_sip._udp.weighted.example',
    type: 'SRV',
    data: { priority: 10, weight: 10, port: 5060, target: 'light.weighted.example' },
  },
  {
    name: '_sip._udp.weighted.example',
    type: 'SRV',
    data: { priority: 10, weight: 90, port: 5060, target: 'heavy.weighted.example' },
  },
  { name: 'light.weighted.example', type: 'A', data: '192.0.2.61' },
  { name: 'heavy.weighted.example', type: 'A', data: '192.0.2.62' },
  // A/AAAA only.
  { name: 'plain.example', type: 'A', data: '192.0.2.30' },
  { name: 'plain.example', type: 'AAAA', data: '2001:db8::30' },
];

let dns: DnsServer;
t.before(async () => {
  dns = await startDnsServer(ZONE);
});
t.teardown(() => dns.close());

const locator = (opts: ConstructorParameters<typeof Locator>[0] = {}) =>
  new Locator({ servers: [dns.address], timeoutMs: 1000, tries: 1, ...opts });
const udp = (address: string, port: number): SipTarget => ({ transport: 'udp', address, port });
const tcp = (address: string, port: number): SipTarget => ({ transport: 'tcp', address, port });

t.test('a numeric host goes straight to its address, without DNS (RFC 3263 4.1, 4.2)', async (t) => {
  const before = dns.queries.length;
  const l = locator({ transports: ['udp', 'tcp', 'tls'] });
  t.same(await l.locate('sip:10.0.0.1'), [udp('10.0.0.1', 5060)]);
  t.same(await l.locate('sip:10.0.0.1:5080'), [udp('10.0.0.1', 5080)]);
  t.same(await l.locate('sip:agent@[2001:db8::1]:5070;transport=tcp'), [tcp('2001:db8::1', 5070)]);
  t.same(await l.locate('sips:10.0.0.1'), [{ transport: 'tls', address: '10.0.0.1', port: 5061 }], 'sips: TLS on 5061');
  t.same(await l.locate('sip:carrier.example;maddr=10.0.0.9'), [udp('10.0.0.9', 5060)], 'maddr names the host');
  t.equal(dns.queries.length, before, 'no DNS query');
});

t.test('an explicit port skips NAPTR and SRV: A and AAAA only (RFC 3263 4.2)', async (t) => {
  const before = dns.queries.length;
  t.same(await locator().locate('sip:a.carrier.example:5090'), [udp('192.0.2.10', 5090), udp('2001:db8::10', 5090)]);
  const asked = dns.queries
    .slice(before)
    .map((q) => q.split(' ')[1])
    .sort();
  t.same(asked, ['A', 'AAAA']);
  t.same(await locator().locate('sip:a.carrier.example:5090;transport=tcp'), [
    tcp('192.0.2.10', 5090),
    tcp('2001:db8::10', 5090),
  ]);
  t.same(
    await locator({ families: [6, 4] }).locate('sip:a.carrier.example:5090'),
    [udp('2001:db8::10', 5090), udp('192.0.2.10', 5090)],
    'family order',
  );
});

t.test('NAPTR -> SRV -> A/AAAA: services we speak, by order and preference, SRV by priority', async (t) => {
  t.same(
    await locator().locate('sip:carrier.example'),
    [
      tcp('192.0.2.10', 5070),
      tcp('2001:db8::10', 5070),
      tcp('192.0.2.20', 5080),
      udp('192.0.2.10', 5060),
      udp('2001:db8::10', 5060),
    ],
    'TCP (preference 10) before UDP (20); SIPS discarded without TLS; the non-SIP and replacement-less NAPTRs ignored',
  );
  const withTls = await locator({ transports: ['udp', 'tcp', 'tls'] }).locate('sip:carrier.example');
  t.same(withTls.at(-1), { transport: 'tls', address: '2001:db8::10', port: 5061 }, 'SIPS+D2T (order 20) last');
  t.same(
    await locator({ transports: ['udp', 'tcp', 'tls'] }).locate('sips:carrier.example'),
    [
      { transport: 'tls', address: '192.0.2.10', port: 5061 },
      { transport: 'tls', address: '2001:db8::10', port: 5061 },
    ],
    'sips: only SIPS+D2T',
  );
  await t.rejects(locator().locate('sips:carrier.example'), LocateError, 'sips: without TLS: nothing to try');
});

t.test('a transport parameter without a port: SRV for that transport (RFC 3263 4.2)', async (t) => {
  const before = dns.queries.length;
  t.same(await locator().locate('sip:carrier.example;transport=tcp'), [
    tcp('192.0.2.10', 5070),
    tcp('2001:db8::10', 5070),
    tcp('192.0.2.20', 5080),
  ]);
  t.notOk(
    dns.queries.slice(before).some((q) => q.endsWith(' NAPTR')),
    'no NAPTR query',
  );
  t.same(
    await locator().locate('sip:plain.example;transport=tcp'),
    [tcp('192.0.2.30', 5060), tcp('2001:db8::30', 5060)],
    'no SRV: default port',
  );
});

t.test('no NAPTR: SRV for each transport we speak, UDP first; "." targets skipped', async (t) => {
  t.same(await locator().locate('sip:srv.example'), [udp('192.0.2.40', 5062), tcp('192.0.2.40', 5063)]);
  t.same(
    await locator({ transports: ['tcp'] }).locate('sip:srv.example'),
    [tcp('192.0.2.40', 5063)],
    'only the transports we speak',
  );
});

t.test('SRV priority orders targets whatever the weights', async (t) => {
  for (let i = 0; i < 20; i++) {
    const got = await locator().locate('sip:prio.example');
    t.same(
      got.map((x) => x.address),
      ['192.0.2.51', '192.0.2.52', '192.0.2.53'],
    );
  }
});

t.test('SRV weights: the heavier target comes first more often, both appear (RFC 2782)', async (t) => {
  const l = locator();
  const first = { heavy: 0, light: 0 };
  const RUNS = 200;
  for (let i = 0; i < RUNS; i++) {
    const got = await l.locate('sip:weighted.example;transport=udp');
    t.equal(got.length, 2);
    if (got[0].address === '192.0.2.62') first.heavy++;
    else first.light++;
  }
  // Expected share of heavy-first: 90/101 with RFC 2782's inclusive draw; 140 is more than 10 standard deviations below.
  t.ok(first.heavy > 140, `heavy first ${first.heavy} of ${RUNS}`);
  t.ok(first.light > 0, `light first ${first.light} of ${RUNS}`);
  t.ok(first.heavy > first.light);
});

t.test('orderSrv follows RFC 2782 step by step', async (t) => {
  const recs = [
    { priority: 10, weight: 10, name: 'light' },
    { priority: 10, weight: 0, name: 'zero' },
    { priority: 10, weight: 90, name: 'heavy' },
    { priority: 5, weight: 0, name: 'top' },
  ];
  // Pool within priority 10: zero (0), light (10), heavy (90); running sums 0, 10, 100.
  const draws =
    (...values: number[]) =>
    () =>
      values.shift() as number;
  t.same(
    orderSrv(recs, draws(0, 0, 0, 0)).map((r) => r.name),
    ['top', 'zero', 'light', 'heavy'],
    'draw 0 picks the zero-weight record',
  );
  t.same(
    orderSrv(recs, draws(0, 0.5, 0, 0)).map((r) => r.name),
    ['top', 'heavy', 'zero', 'light'],
    'draw 50 of 100 picks heavy',
  );
  t.same(
    orderSrv(recs, draws(0, 0.05, 0.99, 0)).map((r) => r.name),
    ['top', 'light', 'heavy', 'zero'],
    'draw 5 picks light, then 10 of 90 heavy',
  );
});

t.test('only A/AAAA: the default port, UDP for sip:, TLS on 5061 for sips:', async (t) => {
  t.same(await locator().locate('sip:plain.example'), [udp('192.0.2.30', 5060), udp('2001:db8::30', 5060)]);
  t.same(await locator({ transports: ['udp', 'tcp', 'tls'], families: [4] }).locate('sips:plain.example'), [
    { transport: 'tls', address: '192.0.2.30', port: 5061 },
  ]);
  t.same(
    await locator({ transports: ['tcp'] }).locate('sip:plain.example'),
    [tcp('192.0.2.30', 5060), tcp('2001:db8::30', 5060)],
    'TCP when UDP is not spoken',
  );
});

t.test('NXDOMAIN, SERVFAIL and bad URIs are LocateErrors', async (t) => {
  const missing = await locator()
    .locate('sip:missing.example')
    .catch((e: unknown) => e);
  t.ok(missing instanceof LocateError);
  t.match((missing as Error).message, /missing\.example.*no SIP server found/);
  dns.failing.add('broken.example');
  const failed = await locator()
    .locate('sip:broken.example')
    .catch((e: unknown) => e);
  t.ok(failed instanceof LocateError, 'SERVFAIL is an error, not "no records"');
  t.equal(((failed as LocateError).cause as { code?: string }).code, 'ESERVFAIL');
  await t.rejects(locator().locate('tel:+14155550100'), LocateError);
  await t.rejects(locator().locate('sip:'), LocateError);
  await t.rejects(locator().locate('sips:10.0.0.1;transport=udp'), LocateError, 'SIPS over UDP does not exist');
  await t.rejects(locator().locate('sips:10.0.0.1'), LocateError, 'TLS not spoken');
});

t.test('targetUri sends a request to exactly one target', async (t) => {
  t.equal(targetUri(udp('192.0.2.1', 5060)), 'sip:192.0.2.1:5060;transport=udp');
  t.equal(targetUri(tcp('2001:db8::1', 5070)), 'sip:[2001:db8::1]:5070;transport=tcp');
  t.equal(targetUri({ transport: 'tls', address: '192.0.2.1', port: 5061 }), 'sips:192.0.2.1:5061;transport=tcp');
});

t.test('failover: next target on 503, transport error or timeout; stops on other failures', async (t) => {
  const targets = [udp('192.0.2.1', 5060), udp('192.0.2.2', 5060), udp('192.0.2.3', 5060), udp('192.0.2.4', 5060)];
  const failures: unknown[] = [
    new SipError(503, 'Service Unavailable'),
    new TransportError('refused'),
    new TransactionTimeoutError('B'),
  ];
  const tried: string[] = [];
  const got = await failover(targets, async (target, i) => {
    tried.push(target.address);
    if (i < failures.length) throw failures[i];
    return `answered by ${target.address}`;
  });
  t.equal(got, 'answered by 192.0.2.4');
  t.same(tried, ['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.4']);

  tried.length = 0;
  const busy = await failover(targets, async (target) => {
    tried.push(target.address);
    throw new SipError(486, 'Busy Here');
  }).catch((e: unknown) => e);
  t.ok(busy instanceof SipError && busy.status === 486, 'a 486 is the answer, not a server failure');
  t.same(tried, ['192.0.2.1']);

  const last = await failover(targets.slice(0, 2), async (_, i) => {
    throw new SipError(503, `down ${i}`);
  }).catch((e: unknown) => e);
  t.equal((last as SipError).reason, 'down 1', 'all failed: the last failure');

  t.notOk(isFailoverError(new SipError(500, 'Server Internal Error')));
  t.notOk(isFailoverError(new Error('x')));
  await t.rejects(
    failover([], async () => 1),
    LocateError,
  );
  const aborted = new AbortController();
  aborted.abort(new Error('caller gave up'));
  await t.rejects(
    failover(targets, async () => 1, { signal: aborted.signal }),
    /caller gave up/,
  );
});

t.test('failover with real user agents: a 503, a refused TCP connection, then the one that answers', async (t) => {
  const media: LocalMedia = { address: '127.0.0.1', port: 30500, codecs: ['PCMU'], telephoneEvent: true };
  const caller = await createUserAgent({ host: '127.0.0.1', port: 0, transports: ['udp', 'tcp'] });
  const overloaded = await createUserAgent({ host: '127.0.0.1', port: 0, transports: ['udp'] });
  const callee = await createUserAgent({ host: '127.0.0.1', port: 0, transports: ['udp'] });
  t.teardown(() => caller.close());
  t.teardown(() => overloaded.close());
  t.teardown(() => callee.close());
  overloaded.on('invite', (_req, res) => res.send(503, 'Service Unavailable'));
  callee.on('invite', (req) => {
    callee.createUAS(req, { media: { ...media, port: 30502 } }).catch(() => undefined);
  });
  // A TCP port nobody listens on: bind, read the port, close.
  const closedPort = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
  const targets: SipTarget[] = [
    udp('127.0.0.1', overloaded.port),
    tcp('127.0.0.1', closedPort),
    udp('127.0.0.1', callee.port),
  ];
  const outcomes: string[] = [];
  const dialog = await failover(targets, async (target) => {
    try {
      return await caller.createUAC('sip:+14155550100@carrier.example', { media, proxy: targetUri(target) });
    } catch (err) {
      outcomes.push(err instanceof SipError ? `${err.status}` : (err as Error).name);
      throw err;
    }
  });
  t.same(outcomes, ['503', 'TransportError'], 'moved on after the 503 and the refused connection');
  t.equal(dialog.state, 'confirmed');
  t.equal(dialog.media?.remotePort, 30502);
  await dialog.bye();
});

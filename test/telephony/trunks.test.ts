// Trunks as configuration: the PARLEY_TRUNKS_FILE format, PARLEY_OUTBOUND_TRUNK, the implicit loopback trunk,
// and which trunk an inbound source address belongs to.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ConfigError, loadSettings } from '../../src/config.js';
import { IMPLICIT_TRUNK_NAME, loadTrunks } from '../../src/telephony/trunks.js';

const dir = mkdtempSync(join(tmpdir(), 'parley-trunks-'));
let n = 0;
function trunksFile(content: unknown): string {
  const file = join(dir, `trunks-${n++}.json`);
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}
function problemsOf(fn: () => unknown): { setting: string; message: string }[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

const CARRIER = {
  name: 'carrier',
  inbound: {
    sources: ['203.0.113.0/24', '198.51.100.7', '2001:db8:5::/48'],
    auth: { realm: 'parley', username: 'carrier', password: 'secret' },
    follow_redirects: true,
  },
  outbound: {
    uri: 'sip:sip.carrier.example;transport=tcp',
    auth: { username: 'acct', password: 'pw' },
    caller_id: '+14155550100',
  },
};

t.test('no trunks file: one implicit trunk trusting loopback only', async (t) => {
  const trunks = loadTrunks(loadSettings({}));
  for (const local of ['127.0.0.1', '127.9.9.9', '::1', '::ffff:127.0.0.1'])
    t.equal(trunks.matchInbound(local)?.name, IMPLICIT_TRUNK_NAME, local);
  for (const remote of ['10.0.0.1', '192.0.2.1', '::2', '2001:db8::1', 'not-an-address'])
    t.equal(trunks.matchInbound(remote), null, remote);
  t.equal(trunks.outbound(), null, 'no outbound trunk');
  t.equal(trunks.matchInbound('127.0.0.1')?.inbound?.auth, null, 'no digest challenge');
});

t.test('PARLEY_OUTBOUND_TRUNK alone: loopback inbound plus an outbound-only trunk', async (t) => {
  const trunks = loadTrunks(loadSettings({ PARLEY_OUTBOUND_TRUNK: 'sip:carrier.example:5080' }));
  t.equal(trunks.matchInbound('127.0.0.1')?.name, IMPLICIT_TRUNK_NAME);
  const out = trunks.outbound();
  t.equal(out?.name, 'outbound');
  t.same(out?.outbound, { uri: 'sip:carrier.example:5080', transport: null, auth: null, caller_id: null });
  t.equal(out?.inbound, null, 'the carrier is not trusted for inbound calls by this setting');
  const sips = problemsOf(() => loadTrunks(loadSettings({ PARLEY_OUTBOUND_TRUNK: 'sips:carrier.example' })));
  t.equal(sips[0].setting, 'PARLEY_OUTBOUND_TRUNK');
  t.match(sips[0].message, /TLS are not supported/);
});

t.test('a trunks file: defaults filled in, sources of both families matched, first trunk wins', async (t) => {
  const file = trunksFile({
    trunks: [CARRIER, { name: 'pbx', inbound: { sources: ['10.1.0.0/16', '203.0.113.9'] } }],
  });
  const trunks = loadTrunks(loadSettings({ PARLEY_TRUNKS_FILE: file }));
  t.equal(trunks.all().length, 2);
  t.equal(trunks.matchInbound('203.0.113.77')?.name, 'carrier');
  t.equal(trunks.matchInbound('203.0.113.9')?.name, 'carrier', 'overlapping sources: the first trunk in the file');
  t.equal(trunks.matchInbound('198.51.100.7')?.name, 'carrier');
  t.equal(trunks.matchInbound('198.51.100.8'), null);
  t.equal(trunks.matchInbound('2001:db8:5:ffff::1')?.name, 'carrier');
  t.equal(trunks.matchInbound('10.1.200.3')?.name, 'pbx');
  t.equal(trunks.matchInbound('127.0.0.1'), null, 'a file replaces the implicit loopback trunk');
  const carrier = trunks.outbound();
  t.equal(carrier?.name, 'carrier');
  t.same(carrier?.inbound, {
    sources: CARRIER.inbound.sources,
    auth: { realm: 'parley', username: 'carrier', password: 'secret' },
    follow_redirects: true,
    allow_refer: false,
    trust_asserted_identity: true,
  });
  t.same(carrier?.outbound, {
    uri: 'sip:sip.carrier.example;transport=tcp',
    transport: null,
    auth: { username: 'acct', password: 'pw' },
    caller_id: '+14155550100',
  });
  const pbx = trunks.matchInbound('10.1.0.1');
  t.same(pbx?.inbound, {
    sources: ['10.1.0.0/16', '203.0.113.9'],
    auth: null,
    follow_redirects: false,
    allow_refer: false,
    trust_asserted_identity: true,
  });
  t.equal(pbx?.outbound, null);
});

t.test('outbound URIs: host names and host:port become sip: URIs', async (t) => {
  const cases: Array<[string, string]> = [
    ['carrier.example', 'sip:carrier.example'],
    ['carrier.example:5080', 'sip:carrier.example:5080'],
    ['carrier.example:5080;transport=tcp', 'sip:carrier.example:5080;transport=tcp'],
    ['10.0.0.1', 'sip:10.0.0.1'],
    ['sip:10.0.0.1', 'sip:10.0.0.1'],
    ['[2001:db8::1]:5070', 'sip:[2001:db8::1]:5070'],
  ];
  for (const [given, uri] of cases) {
    const file = trunksFile({
      trunks: [{ name: 'out', outbound: { uri: given, transport: given.includes('tcp') ? 'tcp' : null } }],
    });
    t.equal(loadTrunks(loadSettings({ PARLEY_TRUNKS_FILE: file })).outbound()?.outbound?.uri, uri, given);
  }
});

t.test('a bad file stops start-up naming PARLEY_TRUNKS_FILE and the field', async (t) => {
  const bad: Array<[unknown, RegExp]> = [
    [
      { trunks: [{ name: 'carrier', inbound: { sources: ['203.0.113.0/33'] } }] },
      /trunks\[0\] \(carrier\)\.inbound\.sources\[0\]: '203\.0\.113\.0\/33' prefix length must be 0-32/,
    ],
    [
      { trunks: [{ name: 'carrier', inbound: { sources: ['carrier.example'] } }] },
      /sources\[0\]: 'carrier\.example' must be an IP address or CIDR range/,
    ],
    [{ trunks: [{ name: 'carrier', inbound: { sources: [] } }] }, /inbound\.sources: must list at least one/],
    [{ trunks: [{ name: 'carrier' }] }, /trunks\[0\] \(carrier\): needs an inbound or an outbound section/],
    [{ trunks: [{ name: 'a b', inbound: { sources: ['10.0.0.1'] } }] }, /trunks\[0\] \(a b\)\.name/],
    [
      {
        trunks: [
          { name: 'x', inbound: { sources: ['10.0.0.1'] } },
          { name: 'x', inbound: { sources: ['10.0.0.2'] } },
        ],
      },
      /trunks\[1\] \(x\)\.name: duplicate trunk name 'x'/,
    ],
    [
      { trunks: [{ name: 'x', inbound: { sources: ['10.0.0.1'], auth: { username: 'u' } } }] },
      /inbound\.auth\.password/,
    ],
    [
      { trunks: [{ name: 'x', inbound: { sources: ['10.0.0.1'], followRedirects: true } }] },
      /inbound: Unrecognized key.*followRedirects/,
    ],
    [
      { trunks: [{ name: 'x', outbound: { uri: 'sips:carrier.example' } }] },
      /outbound\.uri: 'sips:carrier\.example' must be a sip: URI or a host name/,
    ],
    [{ trunks: [{ name: 'x', outbound: { uri: 'tel:+14155550100' } }] }, /outbound\.uri/],
    [
      { trunks: [{ name: 'x', outbound: { uri: 'sip:carrier.example;transport=sctp' } }] },
      /transport must be udp or tcp/,
    ],
    [
      { trunks: [{ name: 'x', outbound: { uri: 'sip:carrier.example;transport=udp', transport: 'tcp' } }] },
      /outbound\.transport: 'tcp' contradicts the URI's transport=udp/,
    ],
    [{ trunks: [{ name: 'x', outbound: { uri: 'sip:+1415@carrier.example' } }] }, /no user part/],
    [
      { trunks: [{ name: 'x', outbound: { uri: 'carrier.example', caller_id: '4155550100' } }] },
      /outbound\.caller_id: must be an E\.164/,
    ],
    [
      {
        trunks: [
          { name: 'a', outbound: { uri: 'a.example' } },
          { name: 'b', outbound: { uri: 'b.example' } },
        ],
      },
      /trunks\[1\] \(b\)\.outbound: only one trunk may carry outbound calls \('a' already does\)/,
    ],
    [{ trunk: [] }, /\(file\): Unrecognized key/],
    ['{ not json', /cannot read .*trunks-\d+\.json/],
  ];
  for (const [content, message] of bad) {
    const file = trunksFile(content);
    const problems = problemsOf(() => loadTrunks(loadSettings({ PARLEY_TRUNKS_FILE: file })));
    t.equal(problems[0].setting, 'PARLEY_TRUNKS_FILE');
    t.match(problems.map((p) => p.message).join('\n'), message, String(message));
    t.match(problems[0].message, file, 'names the file');
  }
  const missing = problemsOf(() => loadTrunks(loadSettings({ PARLEY_TRUNKS_FILE: join(dir, 'absent.json') })));
  t.match(missing[0].message, /cannot read .*absent\.json/);
});

t.test(
  'PARLEY_OUTBOUND_TRUNK and a file: added when the file has no outbound trunk, refused when it has one',
  async (t) => {
    const inboundOnly = trunksFile({ trunks: [{ name: 'pbx', inbound: { sources: ['10.1.0.0/16'] } }] });
    const both = loadTrunks(
      loadSettings({ PARLEY_TRUNKS_FILE: inboundOnly, PARLEY_OUTBOUND_TRUNK: 'sip:carrier.example' }),
    );
    t.equal(both.outbound()?.outbound?.uri, 'sip:carrier.example');
    t.equal(both.matchInbound('10.1.2.3')?.name, 'pbx');
    const withOutbound = trunksFile({ trunks: [CARRIER] });
    const clash = problemsOf(() =>
      loadTrunks(loadSettings({ PARLEY_TRUNKS_FILE: withOutbound, PARLEY_OUTBOUND_TRUNK: 'sip:other.example' })),
    );
    t.equal(clash[0].setting, 'PARLEY_OUTBOUND_TRUNK');
    t.match(clash[0].message, /'carrier' .* already carries outbound calls/);
    const named = trunksFile({ trunks: [{ name: 'outbound', inbound: { sources: ['10.0.0.1'] } }] });
    t.equal(
      problemsOf(() =>
        loadTrunks(loadSettings({ PARLEY_TRUNKS_FILE: named, PARLEY_OUTBOUND_TRUNK: 'sip:x.example' })),
      )[0].setting,
      'PARLEY_OUTBOUND_TRUNK',
    );
  },
);

t.test('an empty trunk list accepts no inbound call at all', async (t) => {
  const trunks = loadTrunks(loadSettings({ PARLEY_TRUNKS_FILE: trunksFile({ trunks: [] }) }));
  t.equal(trunks.matchInbound('127.0.0.1'), null);
  t.equal(trunks.outbound(), null);
});

// RFC 4475 torture messages (test/fixtures/torture): every message either parses, or is rejected with the
// response RFC 4475 names when it arrives as a request, or is dropped when it is a response. Each goes
// through the parser and the transaction layer as it would from the wire; valid ones also round-trip.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { SipParseError } from '../../../sip/errors.js';
import {
  contactsOf,
  cseqOf,
  fromOf,
  parseMessage,
  serializeMessage,
  toOf,
  unescapeUriPart,
  uriEquals,
  parseUri,
  viasOf,
  type SipMessage,
  type SipUri,
} from '../../../sip/message/index.js';
import { StreamFramer } from '../../../sip/message/framer.js';
import { ManualClock, TransactionLayer } from '../../../sip/transaction/index.js';
import { RecordingTransport, UDP_SOURCE } from '../transaction/helpers.js';

const DIR = new URL('../../fixtures/torture/', import.meta.url).pathname;
const load = (kind: string, name: string) => readFileSync(join(DIR, kind, `${name}.sip`));

type Expect = 'accept' | 'drop' | number;

/** RFC 4475 section per message and what a UAS (this stack's transaction layer) does with it. */
const EXPECTED: Record<string, [string, Expect]> = {
  wsinv: ['3.1.1.1', 'accept'],
  intmeth: ['3.1.1.2', 'accept'],
  esc01: ['3.1.1.3', 'accept'],
  escnull: ['3.1.1.4', 'accept'],
  esc02: ['3.1.1.5', 'accept'],
  lwsdisp: ['3.1.1.6', 'accept'],
  longreq: ['3.1.1.7', 'accept'],
  dblreq: ['3.1.1.8', 'accept'],
  semiuri: ['3.1.1.9', 'accept'],
  transports: ['3.1.1.10', 'accept'],
  mpart01: ['3.1.1.11', 'accept'],
  unreason: ['3.1.1.12', 'accept'],
  noreason: ['3.1.1.13', 'accept'],
  badinv01: ['3.1.2.1', 400],
  clerr: ['3.1.2.2', 400],
  ncl: ['3.1.2.3', 400],
  scalar02: ['3.1.2.4', 400],
  scalarlg: ['3.1.2.5', 'drop'],
  quotbal: ['3.1.2.6', 400],
  ltgtruri: ['3.1.2.7', 400],
  lwsruri: ['3.1.2.8', 400],
  lwsstart: ['3.1.2.9', 400],
  trws: ['3.1.2.10', 400],
  escruri: ['3.1.2.11', 400],
  baddate: ['3.1.2.12', 400],
  regbadct: ['3.1.2.13', 400],
  badaspec: ['3.1.2.14', 400],
  baddn: ['3.1.2.15', 400],
  badvers: ['3.1.2.16', 505],
  mismatch01: ['3.1.2.17', 400],
  mismatch02: ['3.1.2.18', 400],
  bigcode: ['3.1.2.19', 'drop'],
  badbranch: ['3.2.1', 'accept'],
  insuf: ['3.3.1', 400],
  unkscm: ['3.3.2', 416],
  novelsc: ['3.3.3', 416],
  unksm2: ['3.3.4', 'accept'],
  bext01: ['3.3.5', 420],
  invut: ['3.3.6', 415],
  regaut01: ['3.3.7', 'accept'],
  multi01: ['3.3.8', 400],
  mcl01: ['3.3.9', 400],
  bcast: ['3.3.10', 'drop'],
  zeromf: ['3.3.11', 'accept'],
  cparam01: ['3.3.12', 'accept'],
  cparam02: ['3.3.13', 'accept'],
  regescrt: ['3.3.14', 'accept'],
  sdp01: ['3.3.15', 'accept'],
  inv2543: ['3.4.1', 'accept'],
};

t.test('all 49 messages of RFC 4475 are present as fixtures', async (t) => {
  const files = ['valid', 'invalid'].flatMap((k) => readdirSync(join(DIR, k)).map((f) => f.replace(/\.sip$/, '')));
  t.same(files.sort(), Object.keys(EXPECTED).sort());
  t.equal(files.length, 49);
});

/** Feed raw bytes as a UDP datagram to a transaction layer; report what happened. */
function deliver(raw: Buffer) {
  const clock = new ManualClock();
  const transport = new RecordingTransport(clock);
  const handed: SipMessage[] = [];
  const dropped: string[] = [];
  const layer = new TransactionLayer(
    transport,
    {
      request: (req) => handed.push(req),
      strayResponse: (res) => handed.push(res),
      dropped: (why) => dropped.push(why),
    },
    { clock, validate: { acceptedContentTypes: ['application/sdp', 'multipart/mixed', 'text/plain'] } },
  );
  try {
    layer.receive(parseMessage(raw), UDP_SOURCE);
  } catch (err) {
    if (!(err instanceof SipParseError)) throw err;
    layer.receiveInvalid(err, UDP_SOURCE);
  }
  const statuses = transport.sent.map((s) => (s.msg.kind === 'response' ? s.msg.status : 0)).filter((s) => s !== 100);
  return { handed, dropped, statuses, sent: transport.sent };
}

for (const [name, [section, expect]] of Object.entries(EXPECTED)) {
  const kind = expect === 'accept' ? 'valid' : 'invalid';
  t.test(
    `RFC 4475 ${section} ${name}: ${expect === 'accept' ? 'accepted' : expect === 'drop' ? 'dropped' : `answered ${expect}`}`,
    async (t) => {
      const raw = load(kind, name);
      const r = deliver(raw);
      if (expect === 'accept') {
        t.equal(r.handed.length, 1, 'handed to the TU');
        t.same(r.statuses, [], 'no error response');
      } else if (expect === 'drop') {
        t.equal(r.handed.length, 0, 'not handed up');
        t.same(r.sent, [], 'nothing sent');
        t.ok(r.dropped.length > 0, `dropped: ${r.dropped[0]}`);
      } else {
        t.equal(r.handed.length, 0, 'not handed to the TU');
        t.same(r.statuses, [expect], `answered ${expect}`);
      }
    },
  );
}

t.test('valid messages serialize to equivalent messages', async (t) => {
  for (const name of Object.keys(EXPECTED).filter((n) => EXPECTED[n][1] === 'accept')) {
    const a = parseMessage(load('valid', name));
    const b = parseMessage(serializeMessage(a));
    t.equal(b.kind, a.kind, name);
    if (a.kind === 'request' && b.kind === 'request') {
      t.equal(b.method, a.method, `${name} method`);
      t.ok(uriEquals(a.uri, b.uri), `${name} Request-URI`);
    }
    if (a.kind === 'response' && b.kind === 'response')
      t.same([b.status, b.reason], [a.status, a.reason], `${name} status line`);
    const names = (m: SipMessage) =>
      [...new Set(m.headers.entries().map(([n]) => n))].filter((n) => n !== 'Content-Length');
    t.same(names(b), names(a), `${name} header names`);
    for (const n of names(a)) t.same(b.headers.getAll(n), a.headers.getAll(n), `${name} ${n}`);
    t.same(b.body, a.body, `${name} body`);
    t.same(serializeMessage(b), serializeMessage(a), `${name} serialization is a fixed point`);
  }
});

t.test(
  'valid messages framed from a stream, in any two chunks, parse as from a datagram (RFC 3261 18.3)',
  async (t) => {
    // inv2543 (3.4.1) has no Content-Length: over a stream that is a framing error, as the datagram-only RFC 2543 allowed.
    for (const name of Object.keys(EXPECTED).filter((n) => EXPECTED[n]![1] === 'accept' && n !== 'inv2543')) {
      const raw = load('valid', name);
      const expected = serializeMessage(parseMessage(raw));
      const problems: string[] = [];
      for (let cut = 1; cut < raw.length; cut += 7) {
        const framed: SipMessage[] = [];
        const framer = new StreamFramer({
          message: (m) => framed.push(m),
          invalid: (err) => problems.push(`${cut}: invalid ${err.message}`),
          fatal: (err) => problems.push(`${cut}: fatal ${err.message}`),
          ping: () => undefined,
          pong: () => undefined,
        });
        framer.push(raw.subarray(0, cut));
        framer.push(raw.subarray(cut));
        // dblreq (3.1.1.8) holds a second, complete message past the first's Content-Length: on a stream it is one.
        if (framed.length !== (name === 'dblreq' ? 2 : 1)) problems.push(`${cut}: ${framed.length} messages`);
        else if (!serializeMessage(framed[0]!).equals(expected))
          problems.push(`${cut}: differs from the datagram parse`);
      }
      t.same(problems, [], name);
    }
  },
);

t.test('parsed details of the valid messages', async (t) => {
  const wsinv = parseMessage(load('valid', 'wsinv'));
  t.equal(viasOf(wsinv).length, 3, 'wsinv: one Via and a folded comma list of two');
  t.same(
    viasOf(wsinv).map((v) => [v.transport, v.host, v.params.get('branch')]),
    [
      ['UDP', '192.0.2.2', '390skdjuw'],
      ['TCP', 'spindle.example.com', 'z9hG4bK9ikj8'],
      ['UDP', '192.168.255.111', 'z9hG4bK30239'],
    ],
  );
  t.equal(toOf(wsinv).params.get('tag'), '1918181833n');
  t.equal(fromOf(wsinv).displayName, 'J Rosenberg \\"', 'escapes in a quoted display name');
  t.same(cseqOf(wsinv), { seq: 9, method: 'INVITE' }, 'leading zeros, folded');
  t.equal(wsinv.headers.get('Max-Forwards'), '0068');
  t.equal(wsinv.headers.get('Subject'), '', 'empty compact-form Subject');
  t.equal(wsinv.headers.get('NewFangledHeader'), 'newfangled value continued newfangled value');
  t.equal(wsinv.headers.get('UnknownHeaderWithUnusualValue'), ';;,,;;,;', 'unknown header kept verbatim');
  const [contact] = contactsOf(wsinv);
  t.equal(contact.displayName, 'Quoted string ""');
  t.same(
    [...contact.params],
    [
      ['newparam', 'newvalue'],
      ['secondparam', null],
      ['q', '0.33'],
    ],
  );
  t.equal(wsinv.body.length, 150);

  const intmeth = parseMessage(load('valid', 'intmeth'));
  t.ok(intmeth.kind === 'request' && intmeth.method === "!interesting-Method0123456789_*+`.%indeed'~");
  const iu = (intmeth.kind === 'request' ? intmeth.uri : undefined) as SipUri;
  t.equal(iu.user, "1_unusual.URI~(to-be!sure)&isn't+it$/crazy?,/;;*");
  t.equal(iu.password, "&it+has=1,weird!*pas$wo~d_too.(doesn't-it)");
  t.equal(toOf(intmeth).displayName, 'BEL:\x07 NUL:\x00 DEL:\x7f', 'quoted-pairs of control characters');
  t.equal(fromOf(intmeth).displayName, "token1~` token2'+_ token3*%!.-");
  t.equal(fromOf(intmeth).params.get("fromparam''~+*_!.-%"), '"работающий"');
  t.equal(intmeth.headers.get("extensionHeader-!.%*+_`'~"), '\ufeff大停電');
  t.equal(intmeth.headers.get('Call-ID'), 'intmeth.word%ZK-!.*_+\'@word`~)(><:\\/"][?}{');

  const esc01 = parseMessage(load('valid', 'esc01'));
  t.equal(unescapeUriPart((esc01 as { uri: SipUri }).uri.user!), 'sips:user@example.com');
  t.ok(uriEquals(toOf(esc01).uri, parseUri('sip:user@example.com')), 'escaped user equals unescaped');
  const escUri = contactsOf(esc01)[0].uri as SipUri;
  t.equal(escUri.params.get('n%61me'), 'v%61lue%25%34%31', 'escapes kept as on the wire');
  t.equal(unescapeUriPart(escUri.params.get('n%61me')!), 'value%41', 'unescaped once, not recursively');

  const escnull = parseMessage(load('valid', 'escnull'));
  t.equal(unescapeUriPart((toOf(escnull).uri as SipUri).user!), 'null-\x00-null');
  t.equal(contactsOf(escnull).length, 2, 'two distinct contacts');

  const esc02 = parseMessage(load('valid', 'esc02'));
  t.ok(esc02.kind === 'request' && esc02.method === 'RE%47IST%45R', 'not REGISTER');
  t.equal(contactsOf(esc02).length, 2, 'C%6Fntact is another header');
  t.equal(toOf(esc02).displayName, '%Z%45');

  const dblreq = parseMessage(load('valid', 'dblreq'));
  t.equal(dblreq.body.length, 0, 'octets past Content-Length ignored');
  const semiuri = parseMessage(load('valid', 'semiuri'));
  t.equal(unescapeUriPart((semiuri as { uri: SipUri }).uri.user!), 'user;par=u@example.net');
  t.equal(semiuri.headers.getAll('Accept').length, 6, 'folded comma list');
  t.same(
    viasOf(parseMessage(load('valid', 'transports'))).map((v) => v.transport),
    ['UDP', 'SCTP', 'TLS', 'UNKNOWN', 'TCP'],
  );
  const mpart = parseMessage(load('valid', 'mpart01'));
  t.equal(mpart.body.length, 553);
  t.ok(mpart.body.includes(Buffer.from([0x05, 0x00, 0x04, 0x81])), 'binary part with NUL octets intact');
  const unreason = parseMessage(load('valid', 'unreason'));
  t.ok(unreason.kind === 'response' && unreason.reason === '= 2**3 * 5**2 но сто девяносто девять - простое');
  const noreason = parseMessage(load('valid', 'noreason'));
  t.ok(noreason.kind === 'response' && noreason.status === 100 && noreason.reason === '');
  t.equal(viasOf(parseMessage(load('valid', 'longreq'))).length, 34, 'longreq: 34 Vias under every case of the name');
  const inv2543 = parseMessage(load('valid', 'inv2543'));
  t.equal(inv2543.body.length, 105, 'no Content-Length over UDP: the body runs to the end of the datagram');
  t.equal(toOf(inv2543).params.get('user'), 'phone', 'addr-spec parameters belong to the header');
});

t.test('invalid messages only ever raise SipParseError', async (t) => {
  for (const name of Object.keys(EXPECTED).filter((n) => EXPECTED[n][1] !== 'accept')) {
    try {
      parseMessage(load('invalid', name));
    } catch (err) {
      t.ok(err instanceof SipParseError, `${name}: ${(err as Error).message}`);
    }
  }
});

// Parser and serializer: RFC 3261 syntax features and round trips (serialize(parse(x)) parses equivalent).
import t, { type Test } from 'tap';
import {
  parseMessage,
  serializeMessage,
  parseNameAddr,
  parseUri,
  serializeUri,
  parseVia,
  topVia,
  viasOf,
  fromOf,
  toOf,
  cseqOf,
  callIdOf,
  contactsOf,
  createResponse,
  uriEquals,
  Headers,
  type SipMessage,
} from '../../../sip/message/index.js';
import { SipParseError } from '../../../sip/errors.js';

const CRLF = '\r\n';
const lines = (...l: string[]) => l.join(CRLF);

/** Structural equality of two messages, as the RFC means "equivalent". */
function equivalent(t: Test, a: SipMessage, b: SipMessage): void {
  t.equal(a.kind, b.kind);
  if (a.kind === 'request' && b.kind === 'request') {
    t.equal(a.method, b.method);
    t.ok(uriEquals(a.uri, b.uri), 'same Request-URI');
  }
  if (a.kind === 'response' && b.kind === 'response') {
    t.equal(a.status, b.status);
    t.equal(a.reason, b.reason);
  }
  const names = (m: SipMessage) =>
    m.headers
      .entries()
      .map(([n]) => n)
      .filter((n) => n !== 'Content-Length');
  t.same(names(a), names(b), 'same header names in order');
  for (const n of new Set(names(a))) t.same(a.headers.getAll(n), b.headers.getAll(n), `same ${n} values`);
  t.same(a.body, b.body, 'same body');
}

const invite = lines(
  'INVITE sip:bob@biloxi.example.com SIP/2.0',
  'v: SIP/2.0/UDP pc33.atlanta.example.com;branch=z9hG4bK776asdhds;rport',
  'Via: SIP/2.0/TCP [2001:db8::9:1]:5070;branch=z9hG4bKfirst, SIP/2.0/UDP 192.0.2.1:5061;branch=z9hG4bKsecond;received=198.51.100.7',
  'Max-Forwards: 70',
  't: "Bob \\"the\\" Builder" <sip:bob@biloxi.example.com>',
  'f: Alice <sip:alice@atlanta.example.com>;tag=1928301774',
  'i: a84b4c76e66710@pc33.atlanta.example.com',
  'CSeq: 314159',
  '  INVITE',
  'm: <sip:alice@[2001:db8::1]:5080;transport=tcp>;expires=60, sip:alice@192.0.2.1',
  'Subject: folded',
  '\tacross lines',
  'c: application/sdp',
  'l: 12',
  '',
  'v=0\r\no=- 1\r\n',
);

t.test('parses compact forms, folding, quoted escapes, IPv6 and comma lists', async (t) => {
  const m = parseMessage(invite);
  t.equal(m.kind, 'request');
  if (m.kind !== 'request') return;
  t.equal(m.method, 'INVITE');
  t.equal(serializeUri(m.uri), 'sip:bob@biloxi.example.com');
  const vias = viasOf(m);
  t.equal(vias.length, 3, 'one Via field plus a comma list of two');
  t.equal(vias[0].params.get('rport'), null, 'rport without value');
  t.equal(vias[1].host, '[2001:db8::9:1]');
  t.equal(vias[1].port, 5070);
  t.equal(vias[2].params.get('received'), '198.51.100.7');
  t.equal(topVia(m).params.get('branch'), 'z9hG4bK776asdhds');
  t.equal(toOf(m).displayName, 'Bob "the" Builder', 'quoted-pair escapes undone');
  t.equal(fromOf(m).params.get('tag'), '1928301774');
  t.equal(callIdOf(m), 'a84b4c76e66710@pc33.atlanta.example.com');
  t.same(cseqOf(m), { seq: 314159, method: 'INVITE' }, 'folded CSeq');
  const contacts = contactsOf(m);
  t.equal(contacts.length, 2);
  t.equal(contacts[0].params.get('expires'), '60');
  const c0 = contacts[0].uri;
  t.ok('host' in c0 && c0.host === '[2001:db8::1]' && c0.port === 5080 && c0.params.get('transport') === 'tcp');
  t.equal(m.headers.get('Subject'), 'folded across lines', 'folding becomes one SP');
  t.equal(m.body.toString(), 'v=0\r\no=- 1\r\n');
});

t.test('serializing what was parsed gives an equivalent message', async (t) => {
  const a = parseMessage(invite);
  const bytes = serializeMessage(a);
  const b = parseMessage(bytes);
  equivalent(t, a, b);
  t.match(bytes.toString(), /^Content-Length: 12\r$/m, 'Content-Length from the body');
  t.same(serializeMessage(b), bytes, 'serialization is stable');
});

t.test('responses: reason phrases, empty reason, Content-Length framing', async (t) => {
  const r = parseMessage(
    lines('SIP/2.0 180 Ringing  loud', 'Via: SIP/2.0/UDP h;branch=z9hG4bKx', 'Content-Length: 0', '', ''),
  );
  t.equal(r.kind, 'response');
  if (r.kind === 'response') {
    t.equal(r.status, 180);
    t.equal(r.reason, 'Ringing  loud');
  }
  const e = parseMessage(lines('SIP/2.0 100 ', 'Content-Length: 0', '', ''));
  t.ok(e.kind === 'response' && e.reason === '');
  const trailing = parseMessage(lines('OPTIONS sip:h SIP/2.0', 'Content-Length: 2', '', 'abEXTRA'));
  t.equal(trailing.body.toString(), 'ab', 'octets past Content-Length dropped');
});

t.test('rejects malformed input with SipParseError carrying a status', async (t) => {
  const cases: Array<[string, string]> = [
    ['extra SP in Request-Line', lines('INVITE  sip:a@b SIP/2.0', 'Content-Length: 0', '', '')],
    ['<> around Request-URI', lines('INVITE <sip:a@b> SIP/2.0', 'Content-Length: 0', '', '')],
    ['header without colon', lines('INVITE sip:a@b SIP/2.0', 'Via SIP/2.0/UDP h', '', '')],
    ['negative Content-Length', lines('INVITE sip:a@b SIP/2.0', 'Content-Length: -1', '', '')],
    ['Content-Length beyond the datagram', lines('INVITE sip:a@b SIP/2.0', 'Content-Length: 99', '', 'x')],
    ['no blank line', 'INVITE sip:a@b SIP/2.0\r\nVia: x'],
    ['status code too long', lines('SIP/2.0 4294967301 Huge', 'Content-Length: 0', '', '')],
  ];
  for (const [name, raw] of cases) {
    t.throws(() => parseMessage(raw), SipParseError, name);
  }
  try {
    parseMessage(lines('INVITE sip:a@b SIP/2.0', 'Via: SIP/2.0/UDP h;branch=z9hG4bK1', 'Content-Length: 50', '', 'x'));
    t.fail('should throw');
  } catch (err) {
    t.ok(
      err instanceof SipParseError && err.status === 400 && err.partial?.headers.get('Via'),
      'partial message kept for the 400',
    );
  }
});

t.test('name-addr, addr-spec, URIs', async (t) => {
  const a = parseNameAddr('sip:+1650@ss1.example.net;user=phone');
  t.equal(a.params.get('user'), 'phone', 'addr-spec parameters belong to the header');
  const b = parseNameAddr('"caller"<sip:caller@example.com>;tag=323');
  t.equal(b.displayName, 'caller');
  t.throws(() => parseNameAddr('"unterminated <sip:a@b>'), SipParseError);
  t.throws(() => parseNameAddr('Bell, Alexander <sip:a@b>'), SipParseError, 'non-token display name');
  t.throws(() => parseNameAddr('< sip:a@b >'), SipParseError, 'spaces inside <>');
  t.throws(() => parseNameAddr('sip:a@b?Route=x'), SipParseError, 'addr-spec with headers must use <>');
  const u = parseUri('sips:alice:secret@[2001:db8::1]:5061;transport=tcp;lr?subject=hi&priority=urgent');
  t.ok('host' in u && u.user === 'alice' && u.password === 'secret' && u.port === 5061 && u.params.get('lr') === null);
  t.equal(serializeUri(u), 'sips:alice:secret@[2001:db8::1]:5061;transport=tcp;lr?subject=hi&priority=urgent');
  t.ok(
    uriEquals(parseUri('sip:%61lice@ATLANTA.com;transport=TCP'), parseUri('sip:alice@atlanta.com;transport=tcp')),
    'RFC 3261 19.1.4 equivalence',
  );
  t.notOk(
    uriEquals(parseUri('sip:alice@atlanta.com'), parseUri('sip:alice@atlanta.com:5060')),
    'explicit port differs',
  );
  t.equal(parseUri('tel:+1-201-555-0123').scheme, 'tel');
  const v = parseVia('SIP / 2.0 / UDP  192.0.2.2 : 5060 ; branch = z9hG4bK1 ; rport');
  t.same(
    [v.transport, v.host, v.port, v.params.get('branch'), v.params.get('rport')],
    ['UDP', '192.0.2.2', 5060, 'z9hG4bK1', null],
  );
});

t.test('createResponse copies the RFC 3261 8.2.6.2 headers and adds a To tag', async (t) => {
  const req = parseMessage(invite);
  if (req.kind !== 'request') throw new Error('not a request');
  const res = createResponse(req, 200, { toTag: 'abc' });
  t.equal(res.reason, 'OK');
  t.same(res.headers.getFields('Via'), req.headers.getFields('Via'));
  t.equal(toOf(res).params.get('tag'), 'abc');
  t.equal(toOf(res).displayName, 'Bob "the" Builder');
  t.equal(res.headers.get('CSeq'), req.headers.get('CSeq'));
  const trying = createResponse(req, 100, { toTag: 'abc' });
  t.equal(toOf(trying).params.get('tag'), undefined, 'no tag on 100');
});

t.test('Headers keeps order, prepends, replaces', async (t) => {
  const h = new Headers([
    ['Via', 'a'],
    ['To', 't'],
    ['v', 'b'],
  ]);
  h.prepend('Via', 'top');
  t.same(h.getAll('Via'), ['top', 'a', 'b']);
  h.set('Via', 'only');
  t.same(h.entries(), [
    ['Via', 'only'],
    ['To', 't'],
  ]);
  t.equal(h.delete('via'), 1);
  t.equal(h.has('Via'), false);
});

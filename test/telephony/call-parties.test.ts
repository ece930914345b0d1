// Dialled and calling numbers from INVITEs as peers send them: carriers' header shapes (written out as they come
// on the wire, parsed by sip/message), and live INVITEs from SIPp and baresip.
import t from 'tap';
import { parseMessage, type SipRequest } from '../../sip/message/index.js';
import { ANONYMOUS, callerNumber, dialledNumber, toE164 } from '../../src/telephony/call-parties.js';
import { baresipInvite, sippInvite } from './sip-peers.js';

t.setTimeout(60_000);

/** An INVITE as a carrier sends it, with `headers` after the mandatory ones. */
function invite(requestUri: string, from: string, to: string, headers: string[] = []): SipRequest {
  const text = [
    `INVITE ${requestUri} SIP/2.0`,
    'Via: SIP/2.0/UDP 203.0.113.5:5060;branch=z9hG4bK776asdhds',
    'Max-Forwards: 69',
    `From: ${from};tag=1928301774`,
    `To: ${to}`,
    'Call-ID: a84b4c76e66710@203.0.113.5',
    'CSeq: 314159 INVITE',
    'Contact: <sip:203.0.113.5:5060>',
    ...headers,
    'Content-Length: 0',
    '',
    '',
  ].join('\r\n');
  const msg = parseMessage(Buffer.from(text));
  if (msg.kind !== 'request') throw new Error('not a request');
  return msg;
}

const TRUSTED = { trustAssertedIdentity: true };
const UNTRUSTED = { trustAssertedIdentity: false };
const PARLEY = '<sip:+14155550100@parley.example>';

t.test('E.164 from the ways numbers are written', async (t) => {
  const cases: Array<[string, string | null]> = [
    ['+14155550100', '+14155550100'],
    ['+1-415-555-0100', '+14155550100'],
    ['+1 (415) 555.0100', '+14155550100'],
    ['%2B14155550100', '+14155550100'],
    ['14155550100', '+14155550100'],
    ['0014155550100', '+14155550100'],
    ['+14155550100;npdi;rn=+14155559999', '+14155550100'],
    ['5550100;phone-context=+1-415', '+14155550100'],
    ['5550100;phone-context=example.com', null],
    ['tel:+44-20-7946-0018', '+442079460018'],
    ['1000', null],
    ['04155550123', null],
    ['+0123456789', null],
    ['+1234567890123456', null],
    ['alice', null],
    ['*67', null],
  ];
  for (const [text, e164] of cases) t.equal(toE164(text), e164, text);
});

t.test('the dialled number: Request-URI user, else the To user', async (t) => {
  const from = '<sip:+14155550123@carrier.example>';
  t.equal(dialledNumber(invite('sip:+14155550100@parley.example;user=phone', from, PARLEY)), '+14155550100');
  t.equal(
    dialledNumber(invite('sip:14155550100@203.0.113.1:5060', from, '<sip:14155550100@parley.example>')),
    '+14155550100',
    'E.164 without its plus',
  );
  t.equal(
    dialledNumber(invite('sip:+1-415-555-0100@parley.example;user=phone', from, PARLEY)),
    '+14155550100',
    'visual separators',
  );
  t.equal(
    dialledNumber(invite('sip:5550100;phone-context=+1-415@parley.example;user=phone', from, PARLEY)),
    '+14155550100',
    'phone-context',
  );
  t.equal(
    dialledNumber(invite('sip:+14155550100;npdi;rn=+14155559999@parley.example;user=phone', from, PARLEY)),
    '+14155550100',
    'number portability parameters',
  );
  t.equal(dialledNumber(invite('tel:+14155550100', from, '<tel:+14155550100>')), '+14155550100', 'tel: Request-URI');
  t.equal(
    dialledNumber(invite('sip:parley.example', from, '<tel:+1-415-555-0100>')),
    '+14155550100',
    'no user in the Request-URI: To',
  );
  t.equal(
    dialledNumber(invite('sip:agent@parley.example', from, '"Sales" <sip:+14155550100@parley.example>')),
    '+14155550100',
    'a name in the Request-URI: To',
  );
  t.equal(
    dialledNumber(invite('sip:1000@parley.example', from, '<sip:1000@parley.example>')),
    null,
    'an extension is no E.164 number',
  );
  t.equal(dialledNumber(invite('sip:parley.example', from, '<sip:parley.example>')), null);
});

t.test("the caller's number: From, or P-Asserted-Identity from a trusted trunk", async (t) => {
  t.equal(
    callerNumber(
      invite('sip:+14155550100@parley.example', '"+14155550123" <sip:+14155550123@carrier.example>', PARLEY),
      UNTRUSTED,
    ),
    '+14155550123',
  );
  t.equal(
    callerNumber(invite('sip:+14155550100@parley.example', '<tel:+1-415-555-0123>', PARLEY), UNTRUSTED),
    '+14155550123',
    'tel: From',
  );
  t.equal(
    callerNumber(invite('sip:+14155550100@parley.example', 'sip:14155550123@carrier.example', PARLEY), UNTRUSTED),
    '+14155550123',
    'addr-spec From without plus',
  );
  t.equal(
    callerNumber(invite('sip:+14155550100@parley.example', '<sip:04155550123@carrier.example>', PARLEY), UNTRUSTED),
    '04155550123',
    'a national number is kept as sent',
  );
  const pai = invite('sip:+14155550100@parley.example', '<sip:trunk-7@carrier.example>', PARLEY, [
    'P-Asserted-Identity: <sip:+14155550177@carrier.example;user=phone>, <tel:+14155550177>',
  ]);
  t.equal(callerNumber(pai, TRUSTED), '+14155550177', 'asserted identity of a trusted trunk');
  t.equal(callerNumber(pai, UNTRUSTED), ANONYMOUS, 'untrusted: only the From, which is no number');
  const both = invite('sip:+14155550100@parley.example', '<sip:+14155550123@carrier.example>', PARLEY, [
    'P-Asserted-Identity: "Reception" <sip:reception@carrier.example>',
    'P-Asserted-Identity: <tel:+14155550178>',
  ]);
  t.equal(callerNumber(both, TRUSTED), '+14155550178', 'the asserted value that names a number');
  const odd = invite('sip:+14155550100@parley.example', '<sip:+14155550123@carrier.example>', PARLEY, [
    'P-Asserted-Identity: <<garbage',
  ]);
  t.equal(callerNumber(odd, TRUSTED), '+14155550123', 'an unreadable assertion asserts nothing');
});

t.test('a withheld caller is anonymous', async (t) => {
  const withheld: Array<[string, string[]]> = [
    ['<sip:+14155550123@carrier.example>', ['Privacy: id']],
    ['<sip:+14155550123@carrier.example>', ['Privacy: header;user']],
    ['<sip:+14155550123@carrier.example>', ['Privacy: ID', 'P-Asserted-Identity: <tel:+14155550123>']],
    ['"Anonymous" <sip:anonymous@anonymous.invalid>', []],
    ['<sip:anonymous@carrier.example>', []],
    ['<sip:Anonymous@203.0.113.5>', []],
    ['<sip:+14155550123@anonymous.invalid>', []],
    ['<sip:carrier.example>', []],
    ['<sip:restricted@carrier.example>', []],
    ['<tel:anonymous>', []],
  ];
  for (const [from, headers] of withheld) {
    t.equal(
      callerNumber(invite('sip:+14155550100@parley.example', from, PARLEY, headers), TRUSTED),
      ANONYMOUS,
      `${from} ${headers.join(' ')}`,
    );
  }
  t.equal(
    callerNumber(
      invite('sip:+14155550100@parley.example', '<sip:+14155550123@carrier.example>', PARLEY, ['Privacy: none']),
      TRUSTED,
    ),
    '+14155550123',
    'Privacy: none withholds nothing',
  );
  t.equal(
    callerNumber(
      invite('sip:+14155550100@parley.example', '"Anonymous" <sip:anonymous@anonymous.invalid>', PARLEY, [
        'P-Asserted-Identity: <tel:+14155550123>',
      ]),
      TRUSTED,
    ),
    '+14155550123',
    'an anonymous From with a trusted asserted identity and no Privacy: the asserted number',
  );
});

t.test('SIPp: the dialled number from its Request-URI; its From (sip:sipp@...) names no number', async (t) => {
  const req = await sippInvite('+14155550100');
  t.equal(dialledNumber(req), '+14155550100');
  t.equal(callerNumber(req, TRUSTED), ANONYMOUS);
  const national = await sippInvite('14155550100');
  t.equal(dialledNumber(national), '+14155550100');
});

t.test("baresip: an account named by its number is the caller's number", async (t) => {
  const req = await baresipInvite('sip:+14155550123@127.0.0.1', (port) => `sip:+14155550100@127.0.0.1:${port}`);
  t.equal(dialledNumber(req), '+14155550100');
  t.equal(callerNumber(req, TRUSTED), '+14155550123');
  const named = await baresipInvite('sip:alice@127.0.0.1', (port) => `sip:0014155550100@127.0.0.1:${port}`);
  t.equal(dialledNumber(named), '+14155550100', 'international prefix 00');
  t.equal(callerNumber(named, TRUSTED), ANONYMOUS, 'a user name is no number');
});

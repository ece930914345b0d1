// Fuzz test of the parser, framer and request/response checks: random bytes, mutated RFC 4475 messages and
// random header soups, from a fixed seed, bounded in count. Nothing may throw anything but SipParseError,
// and whatever parses must serialize to something that parses again to the same headers.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { SipParseError } from '../../../sip/errors.js';
import {
  contactsOf,
  createResponse,
  cseqOf,
  fromOf,
  parseMessage,
  serializeMessage,
  StreamFramer,
  toOf,
  validateRequest,
  validateResponse,
  viasOf,
  type SipMessage,
} from '../../../sip/message/index.js';
import { ManualClock, TransactionLayer } from '../../../sip/transaction/index.js';
import { RecordingTransport, UDP_SOURCE } from '../transaction/helpers.js';

const SEED = 0x5eed4475;
const RANDOM_CASES = 1500;
const MUTATIONS_PER_FIXTURE = 60;
const SOUP_CASES = 1500;

/** mulberry32: small, fast, deterministic. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const DIR = new URL('../../fixtures/torture/', import.meta.url).pathname;
const corpus = ['valid', 'invalid'].flatMap((k) => readdirSync(join(DIR, k)).map((f) => readFileSync(join(DIR, k, f))));
const INTERESTING = Buffer.from('\r\n \t:;,<>"\\%@[]?=/\x00\xff0123456789zSIP');

function mutate(src: Buffer, r: () => number): Buffer {
  let b = Buffer.from(src);
  const ops = 1 + Math.floor(r() * 4);
  for (let i = 0; i < ops; i++) {
    const at = Math.floor(r() * (b.length + 1));
    switch (Math.floor(r() * 6)) {
      case 0:
        if (b.length > 0) b[Math.min(at, b.length - 1)] ^= 1 << Math.floor(r() * 8);
        break;
      case 1:
        b = Buffer.concat([
          b.subarray(0, at),
          Buffer.from([INTERESTING[Math.floor(r() * INTERESTING.length)]]),
          b.subarray(at),
        ]);
        break;
      case 2:
        b = Buffer.concat([b.subarray(0, at), b.subarray(Math.min(b.length, at + 1 + Math.floor(r() * 8)))]);
        break;
      case 3:
        b = b.subarray(0, at);
        break;
      case 4: {
        const len = Math.floor(r() * 40);
        b = Buffer.concat([b.subarray(0, at), b.subarray(at, at + len), b.subarray(at)]);
        break;
      }
      case 5: {
        const digits = String(Math.floor(r() * 1e12));
        b = Buffer.concat([b.subarray(0, at), Buffer.from(digits), b.subarray(at)]);
        break;
      }
    }
  }
  return b;
}

const NAMES = [
  'Via',
  'v',
  'To',
  't',
  'From',
  'f',
  'Call-ID',
  'i',
  'CSeq',
  'Contact',
  'm',
  'Max-Forwards',
  'Content-Length',
  'l',
  'Route',
  'Require',
  'X-Odd',
];
const PIECES = [
  'SIP/2.0/UDP',
  'host',
  '[2001:db8::1]',
  ':5060',
  ';branch=z9hG4bK',
  ';rport',
  '<sip:a@b>',
  '"q\\"x"',
  ',',
  ';tag=',
  ' ',
  '\t',
  'sip:',
  'tel:+1',
  '%41',
  '%',
  '?',
  '&',
  '=',
  '99999999999',
  '-1',
  '1 INVITE',
  'INVITE',
];

function soup(r: () => number): Buffer {
  const pick = <T>(a: T[]) => a[Math.floor(r() * a.length)];
  const lines = [
    r() < 0.5
      ? `INVITE ${pick(['sip:a@b', 'sip:[::1]:5060', 'x:y', '<sip:a>'])} SIP/2.0`
      : `SIP/2.0 ${Math.floor(r() * 900)} ${pick(['OK', '', 'x y'])}`,
  ];
  const n = Math.floor(r() * 12);
  for (let i = 0; i < n; i++) {
    let v = '';
    const k = Math.floor(r() * 6);
    for (let j = 0; j < k; j++) v += pick(PIECES);
    lines.push(`${pick(NAMES)}${pick([':', ' :', ': ', ':\r\n '])}${v}`);
  }
  const body = r() < 0.3 ? 'x'.repeat(Math.floor(r() * 20)) : '';
  return Buffer.from(lines.join('\r\n') + '\r\n\r\n' + body);
}

/** Exercise everything that reads a message; only SipParseError may escape. */
function exercise(t: Test, input: Buffer, layer: TransactionLayer, stats: { parsed: number; rejected: number }): void {
  let msg: SipMessage;
  try {
    msg = parseMessage(input);
  } catch (err) {
    if (!(err instanceof SipParseError)) throw err;
    stats.rejected++;
    layer.receiveInvalid(err, UDP_SOURCE);
    return;
  }
  stats.parsed++;
  for (const read of [
    () => viasOf(msg),
    () => fromOf(msg),
    () => toOf(msg),
    () => cseqOf(msg),
    () => contactsOf(msg),
  ]) {
    try {
      read();
    } catch (err) {
      if (!(err instanceof SipParseError)) throw err;
    }
  }
  if (msg.kind === 'request') validateRequest(msg);
  else validateResponse(msg);
  const again = parseMessage(serializeMessage(msg));
  if (again.headers.size !== msg.headers.size + (msg.headers.has('Content-Length') ? 0 : 1)) {
    t.fail('re-parsed message has other headers');
  }
  layer.receive(msg, UDP_SOURCE);
}

t.test('random, mutated and souped messages never throw anything but SipParseError', async (t) => {
  const r = rng(SEED);
  const clock = new ManualClock();
  const layer = new TransactionLayer(
    new RecordingTransport(clock),
    {
      // the TU answers everything, so every transaction runs to its end on the clock
      request: (req, tx) => {
        tx?.respond(createResponse(req, 486, { toTag: 'fz' }));
      },
      strayResponse: () => undefined,
    },
    { clock },
  );
  const stats = { parsed: 0, rejected: 0 };
  let cases = 0;
  for (let i = 0; i < RANDOM_CASES; i++, cases++) {
    const len = Math.floor(r() * 512);
    const b = Buffer.alloc(len);
    for (let j = 0; j < len; j++) b[j] = r() < 0.7 ? 0x20 + Math.floor(r() * 95) : Math.floor(r() * 256);
    exercise(t, b, layer, stats);
  }
  for (const src of corpus) {
    for (let i = 0; i < MUTATIONS_PER_FIXTURE; i++, cases++) exercise(t, mutate(src, r), layer, stats);
  }
  for (let i = 0; i < SOUP_CASES; i++, cases++) exercise(t, soup(r), layer, stats);
  clock.advance(64_000); // run every transaction the fuzz created to its end
  t.equal(cases, RANDOM_CASES + corpus.length * MUTATIONS_PER_FIXTURE + SOUP_CASES);
  t.ok(stats.parsed > 500, `a good share parsed (${stats.parsed})`);
  t.ok(stats.rejected > 500, `a good share rejected (${stats.rejected})`);
  t.equal(layer.serverCount, 0, 'every server transaction ended');
});

t.test('the stream framer survives mutated streams in random chunks', async (t) => {
  const r = rng(SEED + 1);
  let messages = 0;
  let problems = 0;
  for (let round = 0; round < 200; round++) {
    const framer = new StreamFramer({
      message: () => {
        messages++;
      },
      invalid: (err) => {
        t.ok(err instanceof SipParseError);
        problems++;
      },
      fatal: (err) => {
        t.ok(err instanceof SipParseError);
        problems++;
      },
      ping: () => undefined,
      pong: () => undefined,
    });
    const parts: Buffer[] = [];
    for (let i = 0; i < 4; i++) {
      const src = corpus[Math.floor(r() * corpus.length)];
      parts.push(r() < 0.5 ? src : mutate(src, r), Buffer.from(r() < 0.3 ? '\r\n\r\n' : ''));
    }
    const stream = Buffer.concat(parts);
    for (let at = 0; at < stream.length;) {
      const n = 1 + Math.floor(r() * 300);
      framer.push(stream.subarray(at, at + n));
      at += n;
    }
  }
  t.ok(messages > 100, `messages framed (${messages})`);
  t.ok(problems > 0, `problems reported through handlers (${problems})`);
});

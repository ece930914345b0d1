// Two sip/ user agents on real sockets (port 0) calling each other over UDP and TCP: answer with a
// negotiated SDP answer, 488 for an offer that cannot be met, 480 without a listener, digest
// challenge by the UA's DigestServer, hold/resume by re-INVITE, INFO DTMF, REFER with NOTIFY
// sipfrag, BYE, and typed errors (SipError, TransactionTimeoutError).
import t from 'tap';
import dgram from 'node:dgram';
import {
  createUserAgent,
  DigestServer,
  SipError,
  TransactionTimeoutError,
  type Dialog,
  type LocalMedia,
  type UserAgent,
} from '../../../sip/index.js';
import { ManualClock } from '../../../sip/transaction/index.js';
import { until } from '../../helpers/wait.js';

t.setTimeout(60_000); // real sockets: two user agents per test

const media = (port: number): LocalMedia => ({
  address: '127.0.0.1',
  port,
  codecs: ['PCMU', 'PCMA'],
  telephoneEvent: true,
});

async function pair(
  t: { teardown(fn: () => unknown): void },
  opts: { auth?: DigestServer } = {},
): Promise<{ a: UserAgent; b: UserAgent; answered: Dialog[] }> {
  const a = await createUserAgent({ host: '127.0.0.1', port: 0, transports: ['udp', 'tcp'] });
  const b = await createUserAgent({ host: '127.0.0.1', port: 0, transports: ['udp', 'tcp'], auth: opts.auth });
  t.teardown(() => a.close());
  t.teardown(() => b.close());
  const answered: Dialog[] = [];
  b.on('invite', (req) => {
    b.createUAS(req, { media: media(30410) }).then(
      (d) => answered.push(d),
      () => undefined,
    );
  });
  return { a, b, answered };
}

t.test('call, negotiate, BYE over UDP and TCP', async (t) => {
  const { a, b, answered } = await pair(t);
  for (const param of ['', ';transport=tcp']) {
    const dialog = await a.createUAC(`sip:agent@127.0.0.1:${b.port}${param}`, {
      media: { ...media(30420), codecs: ['PCMA', 'PCMU'] },
    });
    t.equal(dialog.media?.codec.name, 'PCMA', `answerer kept the offerer's first codec${param}`);
    t.equal(dialog.media?.remotePort, 30410);
    t.equal(dialog.media?.telephoneEvent?.payloadType, 101);
    await until(() => answered.length > 0 && answered.at(-1)!.callId === dialog.callId, {
      what: 'UAS dialog',
      timeoutMs: 5_000,
    });
    const uas = answered.at(-1)!;
    await until(() => !uas.awaitingAck, { what: 'ACK at the UAS', timeoutMs: 5_000 });
    const ended = new Promise((r) => uas.once('ended', r));
    await dialog.bye();
    t.same(await ended, { reason: 'bye_received' }, `UAS saw the BYE${param}`);
    t.equal(dialog.state, 'terminated');
  }
});

t.test('through a TCP proxy: the Contact names TCP, so the BYE comes back over TCP', async (t) => {
  const { a, b, answered } = await pair(t);
  const dialog = await a.createUAC(`sip:agent@example.invalid`, {
    media: media(30420),
    proxy: `sip:127.0.0.1:${b.port};transport=tcp`,
  });
  await until(() => answered.length > 0 && answered.at(-1)!.callId === dialog.callId, {
    what: 'UAS dialog',
    timeoutMs: 5_000,
  });
  const uas = answered.at(-1)!;
  await until(() => !uas.awaitingAck, { what: 'ACK at the UAS', timeoutMs: 5_000 });
  const contact = uas.data.remoteTarget;
  t.equal(
    'params' in contact ? contact.params.get('transport') : undefined,
    'tcp',
    'the caller advertised its TCP contact',
  );
  const ended = new Promise((r) => dialog.once('ended', r));
  await uas.bye();
  t.same(await ended, { reason: 'bye_received' }, 'the caller got the BYE');
});

t.test('488 for an offer without a common codec; 480 when nobody listens', async (t) => {
  const { a, b } = await pair(t);
  const err = await a
    .createUAC(`sip:agent@127.0.0.1:${b.port}`, {
      localSdp:
        'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 4000 RTP/AVP 18\r\na=rtpmap:18 G729/8000\r\n',
    })
    .catch((e: unknown) => e);
  t.ok(err instanceof SipError && err.status === 488, '488 Not Acceptable Here');
  const lonely = await createUserAgent({ host: '127.0.0.1', port: 0, transports: ['udp'] });
  t.teardown(() => lonely.close());
  const busy = await a
    .createUAC(`sip:agent@127.0.0.1:${lonely.port}`, { media: media(30420) })
    .catch((e: unknown) => e);
  t.ok(busy instanceof SipError && busy.status === 480, '480 without an invite listener');
});

t.test('digest: the UAS challenges, the UAC answers, a wrong password is refused', async (t) => {
  const auth = new DigestServer({ realm: 'parley.test', lookup: (u) => (u === 'trunk' ? { password: 'pw' } : null) });
  const { a, b, answered } = await pair(t, { auth });
  const dialog = await a.createUAC(`sip:agent@127.0.0.1:${b.port}`, {
    media: media(30420),
    auth: { username: 'trunk', password: 'pw' },
  });
  t.equal(dialog.state, 'confirmed');
  await until(() => answered.length === 1, { what: 'answered', timeoutMs: 5_000 });
  await dialog.bye();
  const err = await a
    .createUAC(`sip:agent@127.0.0.1:${b.port}`, { media: media(30420), auth: { username: 'trunk', password: 'nope' } })
    .catch((e: unknown) => e);
  t.ok(err instanceof SipError && err.status === 401, 'wrong password ends in 401');
  const none = await a.createUAC(`sip:agent@127.0.0.1:${b.port}`, { media: media(30420) }).catch((e: unknown) => e);
  t.ok(none instanceof SipError && none.status === 401, 'no credentials: 401');
});

t.test('hold and resume by re-INVITE, INFO DTMF, REFER with NOTIFY sipfrag', async (t) => {
  const { a, b, answered } = await pair(t);
  const dialog = await a.createUAC(`sip:agent@127.0.0.1:${b.port}`, { media: media(30420) });
  await until(() => answered.length === 1, { what: 'answered', timeoutMs: 5_000 });
  const uas = answered[0];
  const modified: Array<[string | undefined, boolean | undefined]> = [];
  uas.on('modified', (e) => modified.push([e.media?.direction, e.media?.remoteHold]));
  const hold = await dialog.reinvite({ direction: 'sendonly' });
  t.equal(hold.status, 200);
  t.equal(dialog.media?.direction, 'sendonly', 'we hold');
  const resume = await dialog.reinvite({ direction: 'sendrecv' });
  t.equal(resume.status, 200);
  t.equal(dialog.media?.direction, 'sendrecv');
  t.same(
    modified,
    [
      ['recvonly', true],
      ['sendrecv', false],
    ],
    'the UAS saw hold then resume',
  );

  const digits: string[] = [];
  uas.on('info', (e) => {
    if (e.dtmf) digits.push(e.dtmf.digit);
  });
  t.equal((await dialog.info('Signal=7\r\nDuration=160\r\n')).status, 200);
  t.same(digits, ['7']);

  const notifies: Array<[number | undefined, string | undefined]> = [];
  dialog.on('notify', (e) => notifies.push([e.sipfrag?.status, e.subscriptionState?.state]));
  uas.on('refer', (e) => {
    t.equal(e.referredBy, '<sip:parley@127.0.0.1>');
    e.notify(200, 'OK').catch((err: Error) => t.fail(err.message));
  });
  const refer = await dialog.refer('sip:other@127.0.0.1:5099', { referredBy: '<sip:parley@127.0.0.1>' });
  t.equal(refer.status, 202);
  await until(() => notifies.length === 2, { what: 'two NOTIFYs', timeoutMs: 5_000 });
  t.same(notifies, [
    [100, 'active'],
    [200, 'terminated'],
  ]);
  await uas.bye();
  await until(() => dialog.state === 'terminated', { what: 'UAC saw BYE', timeoutMs: 5_000 });
});

t.test('nobody at the address: TransactionTimeoutError from Timer B', async (t) => {
  const sock = dgram.createSocket('udp4');
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  t.teardown(() => sock.close());
  const port = (sock.address() as { port: number }).port;
  const ua = await createUserAgent({
    host: '127.0.0.1',
    port: 0,
    transports: ['udp'],
    timers: { T1: 20, T2: 80, T4: 100 },
  });
  t.teardown(() => ua.close());
  let received = 0;
  sock.on('message', () => {
    received++;
  });
  const err = await ua.createUAC(`sip:void@127.0.0.1:${port}`, { media: media(30420) }).catch((e: unknown) => e);
  t.ok(err instanceof TransactionTimeoutError, `TransactionTimeoutError, got ${String(err)}`);
  t.ok(received >= 5, `INVITE retransmitted on Timer A (${received} sends)`);
});

t.test(
  'a caller that never ACKs nor answers the BYE: the UAS dialog ends (ack_timeout), no process crash',
  async (t) => {
    const sock = dgram.createSocket('udp4');
    await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
    t.teardown(() => sock.close());
    const port = (sock.address() as { port: number }).port;
    const received: string[] = [];
    sock.on('message', (m) => received.push(m.toString('latin1').split('\r\n')[0]!));
    const clock = new ManualClock();
    const ua = await createUserAgent({ host: '127.0.0.1', port: 0, transports: ['udp'], clock });
    t.teardown(() => ua.close());
    const ended: string[] = [];
    ua.on('invite', (req) => {
      ua.createUAS(req, { media: media(30410) }).then(
        (d) => d.on('ended', (e) => ended.push(e.reason)),
        () => undefined,
      );
    });
    const offer = 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 4000 RTP/AVP 0\r\n';
    const invite = [
      `INVITE sip:agent@127.0.0.1:${ua.port} SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${port};branch=z9hG4bKnoack`,
      'From: <sip:caller@127.0.0.1>;tag=c1',
      `To: <sip:agent@127.0.0.1:${ua.port}>`,
      'Call-ID: noack@127.0.0.1',
      'CSeq: 1 INVITE',
      `Contact: <sip:caller@127.0.0.1:${port}>`,
      'Max-Forwards: 70',
      'Content-Type: application/sdp',
      `Content-Length: ${offer.length}`,
      '',
      offer,
    ].join('\r\n');
    sock.send(invite, ua.port, '127.0.0.1');
    await until(() => received.includes('SIP/2.0 200 OK'), { what: '200 OK at the caller', timeoutMs: 5_000 });
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    t.teardown(() => process.off('unhandledRejection', onRejection));
    clock.advance(32_000); // RFC 3261 13.3.1.4: no ACK within 64*T1
    t.same(ended, ['ack_timeout']);
    await until(() => received.some((l) => l.startsWith('BYE ')), { what: 'BYE at the caller', timeoutMs: 5_000 });
    clock.advance(32_000); // Timer F: the BYE's transaction times out
    await new Promise((r) => setTimeout(r, 20));
    t.same(rejections, [], 'the failed BYE crashed nothing');
  },
);

t.test('TCP: a dialog keeps its connection open however idle; it closes once the call ended', async (t) => {
  const opts = {
    host: '127.0.0.1',
    port: 0,
    transports: ['tcp' as const],
    timers: { T1: 10, T2: 40, T4: 50 },
    tcpIdleTimeoutMs: 40,
  };
  const a = await createUserAgent(opts);
  const b = await createUserAgent(opts);
  t.teardown(() => a.close());
  t.teardown(() => b.close());
  const answered: Dialog[] = [];
  b.on('invite', (req) => {
    b.createUAS(req, { media: media(30410) }).then(
      (d) => answered.push(d),
      () => undefined,
    );
  });
  const dialog = await a.createUAC(`sip:agent@127.0.0.1:${b.port};transport=tcp`, { media: media(30420) });
  await until(() => answered.length === 1 && !answered[0]!.awaitingAck, { what: 'ACK at the UAS', timeoutMs: 5_000 });
  // Every transaction of the call ends within 64*T1 = 640 ms; the idle timeout is 40 ms.
  await new Promise((r) => setTimeout(r, 1500));
  t.equal(a.tcpConnectionCount, 1, 'the caller kept its connection');
  t.equal(b.tcpConnectionCount, 1, 'the callee kept it');
  const ended = new Promise((r) => answered[0]!.once('ended', r));
  await dialog.bye();
  t.same(await ended, { reason: 'bye_received' }, 'the BYE went over it');
  await until(() => a.tcpConnectionCount === 0 && b.tcpConnectionCount === 0, {
    what: 'the connection closed after the call',
    timeoutMs: 5_000,
  });
});

t.test('CANCEL: the caller aborts a ringing call, the callee sees it cancelled, the caller gets 487', async (t) => {
  const a = await createUserAgent({ host: '127.0.0.1', port: 0 });
  const b = await createUserAgent({ host: '127.0.0.1', port: 0 });
  t.teardown(() => a.close());
  t.teardown(() => b.close());
  let cancelled = false;
  const ringing = new Promise<void>((resolve) => {
    b.on('invite', (req, res) => {
      res.send(180, 'Ringing');
      res.cancelled.then(() => {
        cancelled = true;
      });
      resolve();
      void req;
    });
  });
  const abort = new AbortController();
  const provisional: number[] = [];
  const call = a
    .createUAC(`sip:agent@127.0.0.1:${b.port}`, {
      media: media(30420),
      signal: abort.signal,
      onProvisional: (r) => provisional.push(r.status),
    })
    .catch((e: unknown) => e);
  await ringing;
  await until(() => provisional.includes(180), { what: '180 Ringing at the caller', timeoutMs: 5_000 });
  abort.abort();
  const err = await call;
  t.ok(err instanceof SipError && err.status === 487, `487 Request Terminated, got ${String(err)}`);
  await until(() => cancelled, { what: 'the callee saw the CANCEL', timeoutMs: 5_000 });
});

t.test(
  'session timers when the caller asks: 422 below Min-SE, then the UAS refreshes at half the interval',
  async (t) => {
    const { ManualClock } = await import('../../../sip/index.js');
    const clock = new ManualClock();
    const a = await createUserAgent({ host: '127.0.0.1', port: 0 });
    const b = await createUserAgent({ host: '127.0.0.1', port: 0, clock });
    t.teardown(() => a.close());
    t.teardown(() => b.close());
    const answered: Dialog[] = [];
    b.on('invite', (req) => {
      b.createUAS(req, { media: media(30410) }).then(
        (d) => answered.push(d),
        () => undefined,
      );
    });
    const small = await a
      .createUAC(`sip:agent@127.0.0.1:${b.port}`, { media: media(30420), headers: [['Session-Expires', '30']] })
      .catch((e: unknown) => e);
    t.ok(small instanceof SipError && small.status === 422, '422 Session Interval Too Small');

    const dialog = await a.createUAC(`sip:agent@127.0.0.1:${b.port}`, {
      media: media(30420),
      headers: [['Session-Expires', '120;refresher=uas']],
    });
    await until(() => answered.length === 1 && !answered[0].awaitingAck, {
      what: 'answered and ACKed',
      timeoutMs: 5_000,
    });
    const refreshes: string[] = [];
    dialog.on('modified', (e) => refreshes.push(e.remoteSdp));
    clock.advance(59_000);
    await new Promise((r) => setTimeout(r, 100));
    t.same(refreshes, [], 'no refresh before half the interval');
    clock.advance(1_000);
    await until(() => refreshes.length === 1, { what: 'the UAS re-INVITEd at 60 s', timeoutMs: 5_000 });
    t.match(refreshes[0], /m=audio 30410 /, "the refresh carries the session's SDP");
    t.equal(answered[0].state, 'confirmed');
    t.equal(dialog.state, 'confirmed');
  },
);

t.test('late offer: INVITE without SDP, offer in the 2xx, answer in the ACK', async (t) => {
  const { a, b, answered } = await pair(t);
  const dialog = await a.createUAC(`sip:agent@127.0.0.1:${b.port}`, {
    media: { ...media(30420), codecs: ['PCMA'] },
    lateOffer: true,
  });
  t.equal(dialog.media?.codec.name, 'PCMA', "the caller answered the callee's offer with its only codec");
  t.equal(dialog.media?.remotePort, 30410);
  await until(() => answered.length === 1, { what: 'answered', timeoutMs: 5_000 });
  const uas = answered[0];
  await until(() => uas.media !== null, { what: 'the ACK brought the answer to the callee', timeoutMs: 5_000 });
  t.equal(uas.media?.codec.name, 'PCMA');
  t.equal(uas.media?.remotePort, 30420);
  t.match(uas.localSdp, /m=audio 30410 RTP\/AVP 0 8 101/, 'the callee offered its codecs');
  await dialog.bye();
});

t.test(
  'OPTIONS: 200 with Allow and Accept while the UA takes calls, 503 once it does not (RFC 3261 11.2)',
  async (t) => {
    const sock = dgram.createSocket('udp4');
    await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
    t.teardown(() => sock.close());
    const port = (sock.address() as { port: number }).port;
    const responses: string[] = [];
    sock.on('message', (m) => responses.push(m.toString('latin1')));
    const ua = await createUserAgent({ host: '127.0.0.1', port: 0, transports: ['udp'] });
    t.teardown(() => ua.close());
    const options = (n: number) =>
      [
        `OPTIONS sip:127.0.0.1:${ua.port} SIP/2.0`,
        `Via: SIP/2.0/UDP 127.0.0.1:${port};branch=z9hG4bKopt${n}`,
        'From: <sip:probe@127.0.0.1>;tag=p1',
        `To: <sip:127.0.0.1:${ua.port}>`,
        `Call-ID: options-${n}@127.0.0.1`,
        `CSeq: ${n} OPTIONS`,
        'Max-Forwards: 70',
        'Content-Length: 0',
        '',
        '',
      ].join('\r\n');
    sock.send(options(1), ua.port, '127.0.0.1');
    await until(() => responses.length === 1, { what: 'the first answer', timeoutMs: 5_000 });
    t.match(responses[0], /^SIP\/2\.0 200 OK\r\n/);
    t.match(responses[0], /\r\nAllow: [^\r]*INVITE/);
    t.match(responses[0], /\r\nAccept: application\/sdp\r\n/);
    ua.acceptingCalls = false;
    sock.send(options(2), ua.port, '127.0.0.1');
    await until(() => responses.length === 2, { what: 'the second answer', timeoutMs: 5_000 });
    t.match(responses[1], /^SIP\/2\.0 503 Service Unavailable\r\n/);
  },
);

import t from 'tap';
import { parseMessage } from '../../../sip/message/parser.js';
import { parseNameAddr, parseCSeq } from '../../../sip/message/address.js';
import { serializeUri } from '../../../sip/message/uri.js';
import type { SipRequest, SipResponse, Uri } from '../../../sip/message/types.js';
import { Headers } from '../../../sip/message/headers.js';
import {
  acceptRemoteCSeq,
  buildInDialogRequest,
  createUacDialog,
  createUasDialog,
  requestTarget,
} from '../../../sip/dialog/dialog-state.js';
import { Dialog, type DialogSender, type Respond } from '../../../sip/dialog/dialog.js';
import { ManualClock } from '../../../sip/dialog/timers.js';
import { parseSipfrag } from '../../../sip/dialog/refer.js';
import { uasSessionTimer } from '../../../sip/dialog/session-timer.js';
import type { LocalMedia } from '../../../sip/sdp/offer-answer.js';

const OFFER =
  [
    'v=0',
    'o=peer 1 1 IN IP4 10.0.0.1',
    's=-',
    'c=IN IP4 10.0.0.1',
    't=0 0',
    'm=audio 4000 RTP/AVP 0 101',
    'a=rtpmap:101 telephone-event/8000',
    'a=fmtp:101 0-15',
  ].join('\r\n') + '\r\n';

function invite(extra: string[] = [], cseq = 7): SipRequest {
  const text = [
    'INVITE sip:agent@127.0.0.1:15060 SIP/2.0',
    'Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1',
    'Record-Route: <sip:p1.example.com;lr>',
    'Record-Route: <sip:p2.example.com;lr>',
    'From: "Caller" <sip:caller@10.0.0.1>;tag=from1',
    'To: <sip:agent@127.0.0.1>',
    'Call-ID: call-1@10.0.0.1',
    `CSeq: ${cseq} INVITE`,
    'Contact: <sip:caller@10.0.0.1:5060>',
    'Max-Forwards: 70',
    ...extra,
    'Content-Type: application/sdp',
    `Content-Length: ${Buffer.byteLength(OFFER)}`,
    '',
    OFFER,
  ].join('\r\n');
  return parseMessage(text) as SipRequest;
}

function inDialog(method: string, cseq: number, extra: string[] = [], body = ''): SipRequest {
  const text = [
    `${method} sip:agent@127.0.0.1:15060 SIP/2.0`,
    'Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK' + method + cseq,
    'From: <sip:caller@10.0.0.1>;tag=from1',
    'To: <sip:agent@127.0.0.1>;tag=local1',
    'Call-ID: call-1@10.0.0.1',
    `CSeq: ${cseq} ${method}`,
    'Max-Forwards: 70',
    ...extra,
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n');
  return parseMessage(text) as SipRequest;
}

function response(status: number, cseq: string, extra: string[] = [], body = ''): SipResponse {
  const text = [
    `SIP/2.0 ${status} X`,
    'Via: SIP/2.0/UDP 127.0.0.1;branch=z9hG4bKx',
    'From: <sip:me@127.0.0.1>;tag=mine',
    'To: <sip:you@10.0.0.2>;tag=yours',
    'Call-ID: c2',
    `CSeq: ${cseq}`,
    ...extra,
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n');
  return parseMessage(text) as SipResponse;
}

class RecordingSender implements DialogSender {
  sent: Array<{ req: SipRequest; hop: string }> = [];
  acks: SipRequest[] = [];
  retransmits = 0;
  answer: (req: SipRequest) => SipResponse = (req) => response(200, req.headers.get('CSeq') ?? '1 X');
  async request(req: SipRequest, hop: Uri): Promise<SipResponse> {
    this.sent.push({ req, hop: serializeUri(hop) });
    return this.answer(req);
  }
  sendAck(ack: SipRequest): void {
    this.acks.push(ack);
  }
  retransmitResponse(): void {
    this.retransmits++;
  }
}

const localMedia: LocalMedia = { address: '127.0.0.1', port: 30400, codecs: ['PCMU', 'PCMA'], telephoneEvent: true };
const contact = parseNameAddr('<sip:agent@127.0.0.1:15060>');

function uasDialog(clock = new ManualClock(), sender = new RecordingSender()) {
  const data = createUasDialog(invite(), 'local1', contact);
  const dialog = new Dialog({ data, sender, clock, localMedia, localSdp: '', remoteSdp: OFFER, media: null });
  return { dialog, sender, clock, data };
}

function collect(): {
  respond: Respond;
  got: Array<{ status: number; headers: Array<[string, string]>; body?: Buffer }>;
} {
  const got: Array<{ status: number; headers: Array<[string, string]>; body?: Buffer }> = [];
  return {
    got,
    respond: (status, _reason, opts) => {
      got.push({ status, headers: opts?.headers ?? [], body: opts?.body });
    },
  };
}

t.test('UAS dialog: id, route set in Record-Route order, remote target, remote CSeq', async (t) => {
  const d = createUasDialog(invite(), 'local1', contact);
  t.same(d.id, { callId: 'call-1@10.0.0.1', localTag: 'local1', remoteTag: 'from1' });
  t.same(
    d.routeSet.map((r) => serializeUri(r.uri)),
    ['sip:p1.example.com;lr', 'sip:p2.example.com;lr'],
  );
  t.equal(serializeUri(d.remoteTarget), 'sip:caller@10.0.0.1:5060');
  t.equal(d.remoteSeq, 7);
  const bye = buildInDialogRequest(d, 'BYE');
  t.equal(serializeUri(bye.uri), 'sip:caller@10.0.0.1:5060', 'loose routing: Request-URI is the remote target');
  t.same(bye.headers.getAll('Route'), ['<sip:p1.example.com;lr>', '<sip:p2.example.com;lr>']);
  t.match(bye.headers.get('To'), /^"?Caller"? <sip:caller@10\.0\.0\.1>;tag=from1$/);
  t.match(bye.headers.get('From') ?? '', /;tag=local1$/);
  const first = parseCSeq(bye.headers.get('CSeq')!).seq;
  const next = buildInDialogRequest(d, 'INFO');
  t.equal(parseCSeq(next.headers.get('CSeq')!).seq, first + 1, 'local CSeq grows by one');
  t.notOk(bye.headers.has('Contact'), 'BYE has no Contact');
  t.ok(buildInDialogRequest(d, 'REFER').headers.has('Contact'), 'REFER carries Contact');
});

t.test('UAC dialog: route set reversed, strict routing puts the first route in the Request-URI', async (t) => {
  const inv = invite([], 1);
  const res = response(200, '1 INVITE', [
    'Record-Route: <sip:p2.example.com>',
    'Record-Route: <sip:p1.example.com>',
    'Contact: <sip:callee@10.0.0.2:5070>',
  ]);
  const d = createUacDialog(inv, res, contact);
  t.same(
    d.routeSet.map((r) => serializeUri(r.uri)),
    ['sip:p1.example.com', 'sip:p2.example.com'],
  );
  t.equal(d.localSeq, 1);
  t.equal(d.id.localTag, 'from1');
  t.equal(d.id.remoteTag, 'yours');
  const target = requestTarget(d);
  t.equal(serializeUri(target.uri), 'sip:p1.example.com', 'strict route');
  t.same(target.routes, ['<sip:p2.example.com>', '<sip:callee@10.0.0.2:5070>']);
  const bye = buildInDialogRequest(d, 'BYE');
  t.equal(bye.headers.get('CSeq'), '2 BYE');
});

t.test('remote CSeq: lower or equal numbers get 500, ACK keeps the INVITE number', async (t) => {
  const d = createUasDialog(invite(), 'local1', contact);
  t.same(acceptRemoteCSeq(d, inDialog('INFO', 8)), { ok: true });
  t.same(acceptRemoteCSeq(d, inDialog('INFO', 8)), { ok: false, status: 500, reason: 'Server Internal Error' });
  t.same(acceptRemoteCSeq(d, inDialog('ACK', 7)), { ok: true });
  const { dialog } = uasDialog();
  const c = collect();
  dialog.handleRequest(inDialog('INFO', 3), c.respond);
  t.equal(c.got[0].status, 500, 'out-of-order request rejected by the dialog');
});

t.test('2xx retransmitted at T1, 2T1 ... capped at T2 until the ACK', async (t) => {
  const { dialog, sender, clock } = uasDialog();
  dialog.awaitAck(response(200, '7 INVITE'));
  const times: number[] = [];
  const orig = sender.retransmitResponse.bind(sender);
  sender.retransmitResponse = () => {
    times.push(clock.now());
    orig();
  };
  clock.advance(16_000);
  t.same(times, [500, 1500, 3500, 7500, 11500, 15500], 'intervals 500, 1000, 2000, 4000, 4000, 4000');
  dialog.handleAck(inDialog('ACK', 7));
  t.equal(dialog.awaitingAck, false);
  clock.advance(60_000);
  t.equal(sender.retransmits, 6, 'no retransmission after the ACK');
  t.equal(dialog.state, 'confirmed');
  t.equal(clock.pendingCount, 0);
});

t.test('no ACK within 64*T1: BYE and ended(ack_timeout)', async (t) => {
  const { dialog, sender, clock } = uasDialog();
  const ended: string[] = [];
  dialog.on('ended', (e) => ended.push(e.reason));
  dialog.awaitAck(response(200, '7 INVITE'));
  clock.advance(31_999);
  t.same(ended, []);
  clock.advance(1);
  t.same(ended, ['ack_timeout']);
  t.equal(sender.sent.at(-1)?.req.method, 'BYE');
  t.equal(sender.sent.at(-1)?.hop, 'sip:p1.example.com;lr', 'sent to the first route');
});

/** Runs `body`, then lets rejected promises surface; returns the unhandled rejections seen meanwhile. */
async function unhandledRejections(body: () => void): Promise<unknown[]> {
  const seen: unknown[] = [];
  const onRejection = (reason: unknown) => seen.push(reason);
  process.on('unhandledRejection', onRejection);
  try {
    body();
    await new Promise((resolve) => setTimeout(resolve, 10));
  } finally {
    process.off('unhandledRejection', onRejection);
  }
  return seen;
}

class FailingSender extends RecordingSender {
  override async request(req: SipRequest, hop: Uri): Promise<SipResponse> {
    this.sent.push({ req, hop: serializeUri(hop) });
    throw new Error(`${req.method} timed out`);
  }
}

t.test('the BYE after an ACK timeout fails: ended(ack_timeout), the failure reported, nothing thrown', async (t) => {
  await t.test('no error listener and no owner: the process is not crashed', async (t) => {
    const { dialog, sender, clock } = uasDialog(new ManualClock(), new FailingSender());
    const ended: string[] = [];
    dialog.on('ended', (e) => ended.push(e.reason));
    dialog.awaitAck(response(200, '7 INVITE'));
    t.same(await unhandledRejections(() => clock.advance(32_000)), [], 'no unhandled rejection');
    t.same(ended, ['ack_timeout']);
    t.equal(sender.sent.at(-1)?.req.method, 'BYE');
    t.equal(dialog.state, 'terminated');
  });
  await t.test('an error listener hears the failure', async (t) => {
    const { dialog, clock } = uasDialog(new ManualClock(), new FailingSender());
    const errors: string[] = [];
    dialog.on('error', (err) => errors.push(err.message));
    dialog.awaitAck(response(200, '7 INVITE'));
    t.same(await unhandledRejections(() => clock.advance(32_000)), []);
    t.same(errors, ['BYE timed out']);
  });
  await t.test('without a listener, the owner (unheardError) gets it', async (t) => {
    const clock = new ManualClock();
    const unheard: string[] = [];
    const data = createUasDialog(invite(), 'local1', contact);
    const dialog = new Dialog({
      data,
      sender: new FailingSender(),
      clock,
      localMedia,
      localSdp: '',
      remoteSdp: OFFER,
      media: null,
      unheardError: (err) => unheard.push(err.message),
    });
    dialog.awaitAck(response(200, '7 INVITE'));
    t.same(await unhandledRejections(() => clock.advance(32_000)), []);
    t.same(unheard, ['BYE timed out']);
  });
});

t.test('BYE received ends the dialog once; requests after it get 481', async (t) => {
  const { dialog } = uasDialog();
  const ended: string[] = [];
  dialog.on('ended', (e) => ended.push(e.reason));
  const c = collect();
  dialog.handleRequest(inDialog('BYE', 8), c.respond);
  dialog.handleRequest(inDialog('INFO', 9), c.respond);
  t.same(
    c.got.map((g) => g.status),
    [200, 481],
  );
  t.same(ended, ['bye_received']);
});

t.test('re-INVITE with hold, then resume: answered, target refreshed, modified events', async (t) => {
  const { dialog, data } = uasDialog();
  const events: Array<{ dir: string | undefined; hold: boolean | undefined }> = [];
  dialog.on('modified', (e) => events.push({ dir: e.media?.direction, hold: e.media?.remoteHold }));
  const hold = OFFER.replace('a=fmtp:101 0-15\r\n', 'a=fmtp:101 0-15\r\na=sendonly\r\n');
  const c = collect();
  dialog.handleRequest(
    inDialog('INVITE', 8, ['Contact: <sip:caller@10.0.0.9:5060>', 'Content-Type: application/sdp'], hold),
    c.respond,
  );
  t.equal(c.got[0].status, 200);
  t.match(c.got[0].body?.toString() ?? '', /a=recvonly/);
  t.equal(serializeUri(data.remoteTarget), 'sip:caller@10.0.0.9:5060', 'remote target refreshed');
  dialog.handleRequest(inDialog('INVITE', 9, ['Content-Type: application/sdp'], OFFER), c.respond);
  t.match(c.got[1].body?.toString() ?? '', /a=sendrecv/);
  t.same(events, [
    { dir: 'recvonly', hold: true },
    { dir: 'sendrecv', hold: false },
  ]);
  const g711 = OFFER.replace('RTP/AVP 0 101', 'RTP/AVP 18');
  dialog.handleRequest(inDialog('INVITE', 10, ['Content-Type: application/sdp'], g711), c.respond);
  t.equal(c.got[2].status, 488, 'an offer we cannot meet gets 488 and keeps the call');
  t.equal(dialog.state, 'confirmed');
});

t.test('our re-INVITE to hold: sendonly offer, ACK sent, answer applied', async (t) => {
  const { dialog, sender } = uasDialog();
  sender.answer = (req) => {
    if (req.method !== 'INVITE') return response(200, req.headers.get('CSeq')!);
    const answer = OFFER.replace('a=fmtp:101 0-15\r\n', 'a=fmtp:101 0-15\r\na=recvonly\r\n');
    return response(
      200,
      req.headers.get('CSeq')!,
      ['Contact: <sip:caller@10.0.0.1:5060>', 'Content-Type: application/sdp'],
      answer,
    );
  };
  const res = await dialog.reinvite({ direction: 'sendonly' });
  t.equal(res.status, 200);
  t.match(sender.sent[0].req.body.toString(), /a=sendonly/);
  t.equal(sender.acks.length, 1);
  t.equal(sender.acks[0].headers.get('CSeq'), `${parseCSeq(sender.sent[0].req.headers.get('CSeq')!).seq} ACK`);
  t.equal(dialog.media?.direction, 'sendonly');
});

t.test('INFO with application/dtmf-relay is parsed', async (t) => {
  const { dialog } = uasDialog();
  const infos: Array<string | undefined> = [];
  dialog.on('info', (e) => infos.push(e.dtmf?.digit));
  const c = collect();
  dialog.handleRequest(
    inDialog('INFO', 8, ['Content-Type: application/dtmf-relay'], 'Signal=5\r\nDuration=160\r\n'),
    c.respond,
  );
  dialog.handleRequest(
    inDialog('INFO', 9, ['Content-Type: application/dtmf-relay'], 'Signal=11\r\nDuration=100\r\n'),
    c.respond,
  );
  t.same(infos, ['5', '#']);
  t.same(
    c.got.map((g) => g.status),
    [200, 200],
  );
});

t.test('REFER received: 202, NOTIFY 100 Trying active, then final NOTIFY terminated', async (t) => {
  const { dialog, sender } = uasDialog();
  const refers: string[] = [];
  let notify: ((s: number, r: string) => Promise<void>) | null = null;
  dialog.on('refer', (e) => {
    refers.push(serializeUri(e.referTo.uri));
    notify = e.notify;
    t.equal(e.referredBy, '<sip:caller@10.0.0.1>');
  });
  const c = collect();
  dialog.handleRequest(
    inDialog('REFER', 8, [
      'Refer-To: <sip:third@10.0.0.3>',
      'Referred-By: <sip:caller@10.0.0.1>',
      'Contact: <sip:caller@10.0.0.1>',
    ]),
    c.respond,
  );
  t.equal(c.got[0].status, 202);
  t.same(refers, ['sip:third@10.0.0.3']);
  await new Promise((r) => setImmediate(r));
  const first = sender.sent[0].req;
  t.equal(first.method, 'NOTIFY');
  t.equal(first.headers.get('Event'), 'refer;id=8');
  t.match(first.headers.get('Subscription-State') ?? '', /^active;expires=\d+/);
  t.equal(first.headers.get('Content-Type'), 'message/sipfrag;version=2.0');
  t.same(parseSipfrag(first.body), { status: 100, reason: 'Trying' });
  await notify!(200, 'OK');
  const last = sender.sent[1].req;
  t.equal(last.headers.get('Subscription-State'), 'terminated;reason=noresource');
  t.equal(last.body.toString(), 'SIP/2.0 200 OK\r\n');
  await notify!(200, 'OK');
  t.equal(sender.sent.length, 2, 'nothing after the subscription ended');
  const bad = collect();
  dialog.handleRequest(inDialog('REFER', 9, []), bad.respond);
  t.equal(bad.got[0].status, 400, 'REFER without Refer-To');
});

t.test('REFER sent and NOTIFY received: sipfrag progress as notify events', async (t) => {
  const { dialog, sender } = uasDialog();
  sender.answer = (req) => response(202, req.headers.get('CSeq')!);
  const res = await dialog.refer('sip:third@10.0.0.3', { referredBy: '<sip:agent@127.0.0.1>' });
  t.equal(res.status, 202);
  t.equal(sender.sent[0].req.headers.get('Refer-To'), '<sip:third@10.0.0.3>');
  t.equal(sender.sent[0].req.headers.get('Referred-By'), '<sip:agent@127.0.0.1>');
  const seen: Array<[number | undefined, string | undefined]> = [];
  dialog.on('notify', (e) => seen.push([e.sipfrag?.status, e.subscriptionState?.state]));
  const c = collect();
  dialog.handleRequest(
    inDialog(
      'NOTIFY',
      8,
      ['Event: refer', 'Subscription-State: active;expires=60', 'Content-Type: message/sipfrag;version=2.0'],
      'SIP/2.0 100 Trying\r\n',
    ),
    c.respond,
  );
  dialog.handleRequest(
    inDialog(
      'NOTIFY',
      9,
      ['Event: refer', 'Subscription-State: terminated;reason=noresource', 'Content-Type: message/sipfrag'],
      'SIP/2.0 200 OK\r\n',
    ),
    c.respond,
  );
  t.same(seen, [
    [100, 'active'],
    [200, 'terminated'],
  ]);
});

t.test('session timers: 422 below Min-SE; UAC refreshes, we expire the session when it does not', async (t) => {
  t.same(uasSessionTimer(new Headers([['Session-Expires', '60']])), { kind: 'reject', minSeSec: 90 });
  t.same(uasSessionTimer(new Headers()), { kind: 'none' });
  const accepted = uasSessionTimer(
    new Headers([
      ['Session-Expires', '120'],
      ['Supported', 'timer'],
    ]),
  );
  t.same(accepted.kind === 'accept' && accepted.responseHeaders, [
    ['Session-Expires', '120;refresher=uac'],
    ['Require', 'timer'],
  ]);
  const noSupport = uasSessionTimer(new Headers([['Session-Expires', '120;refresher=uac']]));
  t.same(
    noSupport.kind === 'accept' && noSupport.timer,
    { intervalSec: 120, refresher: 'uas' },
    'UAC without timer support: we refresh',
  );

  const clock = new ManualClock();
  const sender = new RecordingSender();
  const data = createUasDialog(invite(), 'local1', contact);
  const dialog = new Dialog({
    data,
    sender,
    clock,
    localMedia,
    localSdp: '',
    remoteSdp: OFFER,
    media: null,
    sessionTimer: { intervalSec: 120, refresher: 'uac' },
  });
  const ended: string[] = [];
  dialog.on('ended', (e) => ended.push(e.reason));
  clock.advance(60_000);
  const c = collect();
  dialog.handleRequest(inDialog('UPDATE', 8, ['Session-Expires: 120;refresher=uac', 'Supported: timer']), c.respond);
  t.equal(c.got[0].status, 200, 'UPDATE refresh without SDP');
  clock.advance(87_999);
  t.same(ended, [], 'refresh pushed the deadline');
  clock.advance(1);
  t.same(ended, ['session_expired'], 'expires 120 - min(32, 120/3) = 88 s after the refresh');
  t.equal(sender.sent.at(-1)?.req.method, 'BYE');

  const clock2 = new ManualClock();
  const sender2 = new RecordingSender();
  const refresher = new Dialog({
    data: createUasDialog(invite(), 'local1', contact),
    sender: sender2,
    clock: clock2,
    localMedia,
    localSdp: OFFER,
    remoteSdp: OFFER,
    media: null,
    sessionTimer: { intervalSec: 120, refresher: 'uas' },
  });
  clock2.advance(60_000);
  await new Promise((r) => setImmediate(r));
  t.equal(sender2.sent[0]?.req.method, 'INVITE', 'we refresh at half the interval');
  t.match(sender2.sent[0]?.req.headers.get('Session-Expires') ?? '', /^120;refresher=uas/);
  t.equal(refresher.state, 'confirmed');
});

t.test('dialog FSM: one INVITE at a time each way, ACK wait, BYE ends everything', async (t) => {
  const { dialogTransition } = await import('../../../sip/dialog/dialog.fsm.js');
  t.same(dialogTransition('confirmed', 'send_reinvite'), { next: 'reinvite_sent', verdict: 'ok' });
  t.same(
    dialogTransition('reinvite_sent', 'receive_reinvite'),
    { next: 'reinvite_sent', verdict: 'reject_491' },
    'glare',
  );
  t.same(dialogTransition('reinvite_sent', 'send_reinvite'), { next: 'reinvite_sent', verdict: 'reject_491' });
  t.same(dialogTransition('reinvite_sent', 'reinvite_done'), { next: 'confirmed', verdict: 'ok' });
  t.same(dialogTransition('confirmed', 'sent_2xx'), { next: 'awaiting_ack', verdict: 'ok' });
  t.same(dialogTransition('awaiting_ack', 'receive_reinvite'), { next: 'awaiting_ack', verdict: 'reject_491' });
  t.same(dialogTransition('awaiting_ack', 'ack'), { next: 'confirmed', verdict: 'ok' });
  t.same(dialogTransition('confirmed', 'ack'), { next: 'confirmed', verdict: 'ignore' }, 'a retransmitted ACK');
  t.same(dialogTransition('awaiting_ack', 'ack_timeout'), { next: 'terminated', verdict: 'ok' });
  t.same(dialogTransition('reinvite_sent', 'bye'), { next: 'terminated', verdict: 'ok' });
  t.same(dialogTransition('terminated', 'receive_reinvite'), { next: 'terminated', verdict: 'reject_481' });
  t.same(dialogTransition('terminated', 'ack'), { next: 'terminated', verdict: 'ignore' });
});

t.test('a re-INVITE arriving while ours is pending gets 491', async (t) => {
  const { dialog, sender } = uasDialog();
  let release!: (r: SipResponse) => void;
  sender.answer = () => {
    throw new Error('unused');
  };
  sender.request = (req) => {
    sender.sent.push({ req, hop: '' });
    return new Promise<SipResponse>((r) => {
      release = r;
    });
  };
  const pending = dialog.reinvite({ direction: 'sendonly' });
  t.equal(dialog.fsm, 'reinvite_sent');
  const c = collect();
  dialog.handleRequest(inDialog('INVITE', 8, ['Content-Type: application/sdp'], OFFER), c.respond);
  t.equal(c.got[0].status, 491);
  const second = await dialog.reinvite({ direction: 'sendrecv' }).catch((e: { status?: number }) => e);
  t.equal((second as { status?: number }).status, 491, 'our second re-INVITE is refused too');
  release(
    response(
      200,
      `${parseCSeq(sender.sent[0].req.headers.get('CSeq')!).seq} INVITE`,
      ['Content-Type: application/sdp'],
      OFFER.replace('0-15\r\n', '0-15\r\na=recvonly\r\n'),
    ),
  );
  await pending;
  t.equal(dialog.fsm, 'confirmed');
});

// The transaction layer: matching (RFC 3261 17.1.3, 17.2.3 and the RFC 2543 fallback), retransmission
// absorption, CANCEL (9.1, 9.2), request validation, stray responses; then end to end over real UDP sockets.
import t from 'tap';
import {
  cseqOf,
  parseMessage,
  serializeMessage,
  toOf,
  viasOf,
  type SipRequest,
  type SipResponse,
} from '../../../sip/message/index.js';
import {
  ManualClock,
  TransactionLayer,
  type ServerTransaction,
  ServerInviteTransaction,
} from '../../../sip/transaction/index.js';
import { SipTransport, type Source } from '../../../sip/transport/index.js';
import { RecordingTransport, request, response, UDP, UDP_SOURCE } from './helpers.js';
import { until } from '../../helpers/wait.js';

function setup(opts: ConstructorParameters<typeof TransactionLayer>[2] = {}) {
  const clock = new ManualClock();
  const transport = new RecordingTransport(clock);
  const requests: Array<{ req: SipRequest; tx: ServerTransaction | undefined }> = [];
  const stray: SipResponse[] = [];
  const dropped: string[] = [];
  const layer = new TransactionLayer(
    transport,
    {
      request: (req, tx) => requests.push({ req, tx }),
      strayResponse: (res) => stray.push(res),
      dropped: (why) => dropped.push(why),
    },
    { clock, timers: { T1: 500 }, ...opts },
  );
  return { clock, transport, layer, requests, stray, dropped };
}

t.test('responses match client transactions by branch and CSeq method; unmatched go up as stray', async (t) => {
  const s = setup();
  const got: number[] = [];
  const invite = request('INVITE');
  const tx = s.layer.sendRequest(invite, UDP, { response: (r) => got.push(r.status) });
  t.equal(s.layer.clientCount, 1);
  s.layer.receive(response(invite, 180), UDP_SOURCE);
  t.equal(tx.state, 'proceeding');
  // a response with the same branch but CSeq method CANCEL belongs to another transaction
  const cancelRes = response(invite, 200);
  cancelRes.headers.set('CSeq', '1 CANCEL');
  s.layer.receive(cancelRes, UDP_SOURCE);
  t.same(got, [180]);
  t.equal(s.stray.length, 1);
  const twoVias = response(invite, 200);
  twoVias.headers.add('Via', 'SIP/2.0/UDP other.example.com;branch=z9hG4bKzz');
  s.layer.receive(twoVias, UDP_SOURCE);
  t.match(s.dropped.at(-1), /more than one Via/, 'RFC 3261 8.1.3.3');
  s.layer.receive(response(invite, 200), UDP_SOURCE);
  t.same(got, [180, 200]);
});

t.test('a request without Via or branch gets one', async (t) => {
  const s = setup();
  const req = request('OPTIONS');
  req.headers.delete('Via');
  s.layer.sendRequest(req, UDP, { response: () => undefined });
  const via = viasOf(s.transport.sent[0].msg)[0];
  t.match(via.params.get('branch'), /^z9hG4bK/);
  t.equal(via.host, '192.0.2.10');
  t.equal(via.params.get('rport'), null);
  t.throws(() => s.layer.sendRequest(request('ACK'), UDP, { response: () => undefined }), TypeError);
});

t.test('server side: INVITE gets 100 Trying, retransmissions are absorbed, ACK for non-2xx is matched', async (t) => {
  const s = setup();
  const invite = request('INVITE', { branch: 'z9hG4bKsrv1' });
  s.layer.receive(invite, UDP_SOURCE);
  t.equal(s.requests.length, 1);
  t.same(s.transport.lines(), ['100'], '100 Trying at once');
  s.layer.receive(request('INVITE', { branch: 'z9hG4bKsrv1' }), UDP_SOURCE);
  t.equal(s.requests.length, 1, 'retransmission not handed up');
  t.same(s.transport.lines(), ['100', '100'], 'retransmission answered with the last provisional');
  const tx = s.requests[0].tx!;
  tx.respond(response(invite, 486));
  s.layer.receive(request('ACK', { branch: 'z9hG4bKsrv1', toTag: 'bob1' }), UDP_SOURCE);
  t.equal(tx.state, 'confirmed', 'ACK matched to the INVITE transaction');
  t.equal(s.requests.length, 1, 'non-2xx ACK not handed up');
  // the ACK for a 2xx has its own branch: it goes to the TU
  const inv2 = request('INVITE', { branch: 'z9hG4bKsrv2', callId: 'c2' });
  s.layer.receive(inv2, UDP_SOURCE);
  s.requests[1].tx!.respond(response(inv2, 200));
  s.layer.receive(request('ACK', { branch: 'z9hG4bKack2', callId: 'c2', toTag: 'bob1' }), UDP_SOURCE);
  t.equal(s.requests.length, 3);
  t.equal(s.requests[2].req.method, 'ACK');
  t.equal(s.requests[2].tx, undefined, 'ACK for 2xx has no transaction');
  // different sent-by with the same branch is another transaction (17.2.3)
  s.layer.receive(request('OPTIONS', { via: 'SIP/2.0/UDP a.example.com;branch=z9hG4bKsame' }), UDP_SOURCE);
  s.layer.receive(request('OPTIONS', { via: 'SIP/2.0/UDP b.example.com;branch=z9hG4bKsame' }), UDP_SOURCE);
  t.equal(s.requests.length, 5);
});

t.test('RFC 2543 fallback: no magic cookie, matched on Request-URI, tags, Call-ID, CSeq and Via', async (t) => {
  const s = setup();
  const via = 'SIP/2.0/UDP old.example.com';
  const invite = request('INVITE', { via, callId: 'old-1' });
  s.layer.receive(invite, UDP_SOURCE);
  s.layer.receive(request('INVITE', { via, callId: 'old-1' }), UDP_SOURCE);
  t.equal(s.requests.length, 1, 'retransmission matched without a branch');
  s.layer.receive(request('INVITE', { via, callId: 'old-1', cseq: 2 }), UDP_SOURCE);
  t.equal(s.requests.length, 2, 'another CSeq is a new transaction');
  const tx = s.requests[0].tx!;
  tx.respond(response(invite, 404, 'tag404'));
  s.layer.receive(request('ACK', { via, callId: 'old-1', toTag: 'wrong' }), UDP_SOURCE);
  t.equal(tx.state, 'completed', 'ACK with another To tag does not match');
  s.layer.receive(request('ACK', { via, callId: 'old-1', toTag: 'tag404' }), UDP_SOURCE);
  t.equal(tx.state, 'confirmed', 'ACK with the response To tag matches');
});

t.test('CANCEL: 200 to the CANCEL and 487 to a pending INVITE; 481 when nothing matches (RFC 3261 9.2)', async (t) => {
  const s = setup();
  const invite = request('INVITE', { branch: 'z9hG4bKc1' });
  s.layer.receive(invite, UDP_SOURCE);
  const inviteTx = s.requests[0].tx as ServerInviteTransaction;
  const cancelled: SipRequest[] = [];
  inviteTx.handlers = { cancelled: (c) => cancelled.push(c) };
  inviteTx.respond(response(invite, 180, 'ringtag'));
  s.layer.receive(request('CANCEL', { branch: 'z9hG4bKc1' }), UDP_SOURCE);
  t.same(s.transport.lines(), ['100', '180', '200', '487']);
  const ok = s.transport.sent[2].msg;
  t.same(cseqOf(ok), { seq: 1, method: 'CANCEL' });
  t.equal(toOf(s.transport.sent[3].msg).params.get('tag'), 'ringtag', '487 keeps the provisional To tag');
  t.equal(cancelled.length, 1);
  t.equal(inviteTx.state, 'completed');
  t.equal(s.requests.length, 1, 'CANCEL handled by the layer');
  s.layer.receive(request('CANCEL', { branch: 'z9hG4bKnone' }), UDP_SOURCE);
  t.equal(s.transport.lines().at(-1), '481');
  s.layer.receive(request('CANCEL', { branch: 'z9hG4bKnone' }), UDP_SOURCE);
  t.equal(s.transport.lines().at(-1), '481', 'retransmitted CANCEL answered from its transaction');
});

t.test('client CANCEL waits for a provisional response and copies the INVITE identifiers (RFC 3261 9.1)', async (t) => {
  const s = setup();
  const invite = request('INVITE', { cseq: 5 });
  const tx = s.layer.sendRequest(invite, UDP, { response: () => undefined });
  t.ok(s.layer.cancel(tx as never));
  t.same(s.transport.lines(), ['INVITE'], 'no CANCEL before a provisional response');
  s.layer.receive(response(invite, 180), UDP_SOURCE);
  t.same(s.transport.lines(), ['INVITE', 'CANCEL']);
  const cancel = s.transport.sent[1].msg;
  t.same(cseqOf(cancel), { seq: 5, method: 'CANCEL' });
  t.equal(viasOf(cancel)[0].params.get('branch'), viasOf(invite)[0].params.get('branch'), 'same branch');
  t.equal(s.layer.clientCount, 2, 'CANCEL has its own transaction');
  s.layer.receive(response(invite, 487), UDP_SOURCE);
  t.notOk(s.layer.cancel(tx as never), 'too late after a final response');
});

t.test('invalid requests are answered before the TU sees them', async (t) => {
  const s = setup({ validate: { supported: ['timer'] } });
  const cases: Array<[SipRequest, number]> = [];
  const v7 = request('OPTIONS');
  v7.version = 'SIP/7.0';
  cases.push([v7, 505]);
  const tel = request('OPTIONS');
  tel.uri = { scheme: 'nobodyknowsthisscheme', opaque: 'totallyopaque' };
  cases.push([tel, 416]);
  const req = request('OPTIONS');
  req.headers.add('Require', 'timer, nothingSupportsThis');
  cases.push([req, 420]);
  const mismatch = request('OPTIONS');
  mismatch.headers.set('CSeq', '1 INVITE');
  cases.push([mismatch, 400]);
  for (const [r, status] of cases) {
    s.layer.receive(r, UDP_SOURCE);
    t.equal(s.transport.lines().at(-1), String(status), `answered ${status}`);
  }
  t.equal(
    s.transport.sent.at(-2)!.msg.headers.get('Unsupported'),
    'nothingSupportsThis',
    '420 lists the unsupported tag',
  );
  t.equal(s.requests.length, 0, 'none reached the TU');
  const badAck = request('ACK', { branch: 'z9hG4bKbadack' });
  badAck.headers.set('CSeq', '1 INVITE');
  s.layer.receive(badAck, UDP_SOURCE);
  t.equal(s.requests.length, 0, 'a malformed ACK is not handed up');
  t.match(s.dropped.at(-1), /ACK dropped/, 'and never answered');
  s.layer.receive(request('INVITE', { via: 'garbage' }), UDP_SOURCE);
  t.match(s.dropped.at(-1), /400/, 'malformed Via answered statelessly (sending it may fail)');
});

t.test(
  'end to end over real UDP sockets: retransmitted INVITE absorbed by the server layer, final response, ACK',
  async (t) => {
    t.setTimeout(15_000);
    const clockA = new ManualClock();
    const clockB = new ManualClock();
    let layerA: TransactionLayer;
    let layerB: TransactionLayer;
    const arrivals: string[] = [];
    const arrived = (what: string) => {
      arrivals.push(what);
    };
    const a = await SipTransport.listen({
      message: (m, src: Source) => {
        arrived(`A<-${m.kind === 'request' ? m.method : m.status}`);
        layerA.receive(m, src);
      },
    });
    const b = await SipTransport.listen({
      message: (m, src: Source) => {
        arrived(`B<-${m.kind === 'request' ? m.method : m.status}`);
        layerB.receive(m, src);
      },
    });
    t.teardown(async () => {
      await a.close();
      await b.close();
    });
    const tus: Array<{ req: SipRequest; tx: ServerTransaction | undefined }> = [];
    layerA = new TransactionLayer(a, { request: () => undefined }, { clock: clockA });
    layerB = new TransactionLayer(
      b,
      {
        request: (req, tx) => {
          tus.push({ req, tx });
        },
      },
      { clock: clockB },
    );
    const got: number[] = [];
    const invite = parseMessage(
      [
        `INVITE sip:bob@127.0.0.1:${b.port} SIP/2.0`,
        'Max-Forwards: 70',
        `To: <sip:bob@127.0.0.1:${b.port}>`,
        'From: <sip:alice@127.0.0.1>;tag=a',
        'Call-ID: e2e-1',
        'CSeq: 1 INVITE',
        'Content-Length: 0',
        '',
        '',
      ].join('\r\n'),
    ) as SipRequest;
    const tx = layerA.sendRequest(
      invite,
      { transport: 'UDP', address: '127.0.0.1', port: b.port },
      { response: (r) => got.push(r.status) },
    );
    await until(() => arrivals.includes('A<-100'), { what: () => `100 Trying at A (arrivals ${arrivals.join(', ')})` });
    t.equal(tus.length, 1);
    t.equal(tx.state, 'proceeding');
    // a retransmission by hand (as if Timer A fired before the 100 arrived) is absorbed by B's transaction
    await a.sendBytes(serializeMessage(invite), { transport: 'UDP', address: '127.0.0.1', port: b.port });
    await until(() => arrivals.filter((x) => x === 'A<-100').length === 2, {
      what: () => `a second 100 at A (arrivals ${arrivals.join(', ')})`,
    });
    t.equal(tus.length, 1, 'B handed the INVITE up once');
    tus[0].tx!.respond(response(tus[0].req, 603));
    await until(() => arrivals.includes('B<-ACK'), { what: () => `the ACK at B (arrivals ${arrivals.join(', ')})` });
    t.same(got, [100, 100, 603], 'provisional responses in Proceeding all go up (17.1.1.2)');
    t.equal(tus[0].tx!.state, 'confirmed', "the ACK built inside A's transaction matched B's");
    clockA.advance(32_000);
    clockB.advance(5_000);
    t.equal(layerA.clientCount, 0);
    t.equal(layerB.serverCount, 0);
  },
);

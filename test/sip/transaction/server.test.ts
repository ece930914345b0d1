// Server transactions (RFC 3261 17.2, RFC 6026 7.1) through every path on a manual clock.
import t from 'tap';
import { TransactionTimeoutError, TransportError } from '../../../sip/errors.js';
import {
  ManualClock,
  ServerInviteTransaction,
  ServerNonInviteTransaction,
  serverInviteTransition,
  serverNonInviteTransition,
} from '../../../sip/transaction/index.js';
import type { SipRequest } from '../../../sip/message/index.js';
import { context, RecordingTransport, request, response, settle, TCP_SOURCE, UDP_SOURCE } from './helpers.js';

function setup() {
  const clock = new ManualClock();
  const transport = new RecordingTransport(clock);
  const terminated: string[] = [];
  return { clock, transport, terminated, ctx: context(clock, transport, terminated) };
}

t.test(
  'INVITE: retransmissions get the last provisional; a non-2xx final is retransmitted on G (T1 doubling to T2) until H',
  async (t) => {
    const s = setup();
    const req = request('INVITE');
    const tx = new ServerInviteTransaction(s.ctx, 'k', req, UDP_SOURCE);
    const errors: Error[] = [];
    tx.handlers = { timeout: (e) => errors.push(e) };
    tx.receiveRequest();
    t.same(s.transport.lines(), [], 'nothing to resend before any response');
    t.ok(tx.respond(response(req, 100)));
    tx.receiveRequest();
    t.same(s.transport.lines(), ['100', '100'], 'retransmitted INVITE answered with the last provisional');
    t.ok(tx.respond(response(req, 180)));
    t.ok(tx.respond(response(req, 486)));
    t.equal(tx.state, 'completed');
    t.notOk(tx.respond(response(req, 200)), 'no second final response');
    s.clock.advance(40_000);
    // 17.2.1: G = 500, 1000, 2000, 4000, 4000 ... (cap T2); H at 64*T1 = 32000
    t.same(s.transport.times('486'), [0, 500, 1500, 3500, 7500, 11500, 15500, 19500, 23500, 27500, 31500]);
    t.equal(tx.state, 'terminated');
    t.ok(errors[0] instanceof TransactionTimeoutError && (errors[0] as TransactionTimeoutError).timer === 'H');
  },
);

t.test('INVITE: ACK moves Completed to Confirmed; Timer I (T4) absorbs ACK retransmissions', async (t) => {
  const s = setup();
  const req = request('INVITE');
  const tx = new ServerInviteTransaction(s.ctx, 'k', req, UDP_SOURCE);
  tx.respond(response(req, 404));
  tx.receiveRequest();
  t.same(s.transport.lines(), ['404', '404'], 'retransmitted INVITE in Completed gets the final response');
  s.clock.advance(600); // one G retransmission at 500
  tx.receiveAck(request('ACK') as SipRequest);
  t.equal(tx.state, 'confirmed');
  s.clock.advance(4000);
  tx.receiveAck(request('ACK') as SipRequest);
  t.equal(s.transport.lines().length, 3, 'G stopped by the ACK');
  s.clock.advance(1000);
  t.equal(tx.state, 'terminated', 'Timer I = T4');
  t.equal(s.clock.pendingCount, 0);
});

t.test('INVITE over TCP: no Timer G, Timer I is 0', async (t) => {
  const s = setup();
  const req = request('INVITE');
  const tx = new ServerInviteTransaction(s.ctx, 'k', req, TCP_SOURCE);
  tx.respond(response(req, 500));
  s.clock.advance(10_000);
  t.same(s.transport.lines(), ['500'], 'no retransmission over TCP');
  tx.receiveAck(request('ACK') as SipRequest);
  t.equal(tx.state, 'terminated');
});

t.test(
  'INVITE: 2xx moves to Accepted (RFC 6026): INVITE retransmissions absorbed, TU 2xx retransmissions sent, Timer L',
  async (t) => {
    const s = setup();
    const req = request('INVITE');
    const tx = new ServerInviteTransaction(s.ctx, 'k', req, UDP_SOURCE);
    const acks: SipRequest[] = [];
    tx.handlers = { ack: (a) => acks.push(a) };
    tx.respond(response(req, 100));
    tx.respond(response(req, 200));
    t.equal(tx.state, 'accepted');
    tx.receiveRequest();
    t.same(s.transport.lines(), ['100', '200'], 'retransmitted INVITE absorbed in Accepted');
    t.ok(tx.respond(response(req, 200)), 'TU retransmits its 2xx through the transaction');
    t.same(s.transport.lines(), ['100', '200', '200']);
    tx.receiveAck(request('ACK') as SipRequest);
    t.equal(acks.length, 1, 'ACK passed to the TU');
    s.clock.advance(5000);
    t.equal(s.transport.lines().length, 3, 'the transaction itself does not retransmit 2xx');
    s.clock.advance(64 * 500 - 5000);
    t.equal(tx.state, 'terminated', 'Timer L = 64*T1');
  },
);

t.test('INVITE: a transport error terminates and informs the TU', async (t) => {
  const s = setup();
  s.transport.failSends = true;
  const req = request('INVITE');
  const tx = new ServerInviteTransaction(s.ctx, 'k', req, UDP_SOURCE);
  const errors: Error[] = [];
  tx.handlers = { transportError: (e) => errors.push(e) };
  tx.respond(response(req, 486));
  await settle();
  t.equal(tx.state, 'terminated');
  t.ok(errors[0] instanceof TransportError);
  t.equal(s.clock.pendingCount, 0);
});

t.test(
  'non-INVITE: Trying discards retransmissions, Proceeding resends the provisional, Completed the final, Timer J',
  async (t) => {
    const s = setup();
    const req = request('BYE');
    const tx = new ServerNonInviteTransaction(s.ctx, 'k', req, UDP_SOURCE);
    tx.receiveRequest();
    t.same(s.transport.lines(), [], 'Trying: retransmission discarded');
    tx.respond(response(req, 100));
    t.equal(tx.state, 'proceeding');
    tx.receiveRequest();
    t.same(s.transport.lines(), ['100', '100']);
    tx.respond(response(req, 200));
    t.equal(tx.state, 'completed');
    tx.receiveRequest();
    t.same(s.transport.lines(), ['100', '100', '200', '200']);
    t.notOk(tx.respond(response(req, 500)), 'later responses refused');
    s.clock.advance(31_999);
    t.equal(tx.state, 'completed');
    s.clock.advance(1);
    t.equal(tx.state, 'terminated', 'Timer J = 64*T1 over UDP');
    t.same(s.terminated, ['k']);
  },
);

t.test('non-INVITE over TCP: Timer J is 0', async (t) => {
  const s = setup();
  const req = request('OPTIONS');
  const tx = new ServerNonInviteTransaction(s.ctx, 'k', req, TCP_SOURCE);
  tx.respond(response(req, 200));
  t.equal(tx.state, 'terminated');
});

t.test('transition tables: terminated and confirmed states ignore TU responses', async (t) => {
  t.equal(serverInviteTransition('terminated', 'request'), null);
  t.equal(serverInviteTransition('confirmed', 'tu_2xx'), null);
  t.equal(serverInviteTransition('completed', 'tu_2xx'), null);
  t.equal(serverNonInviteTransition('trying', 'request'), null, 'Trying discards retransmissions');
  t.equal(serverNonInviteTransition('completed', 'tu_2xx'), null);
});

// Client transactions (RFC 3261 17.1, RFC 6026 7.2) through every path, on a manual clock: retransmission
// schedules, timeouts, ACK for non-2xx, Accepted state, reliable transports, transport errors.
import t from 'tap';
import { TransactionTimeoutError, TransportError } from '../../../sip/errors.js';
import { cseqOf, toOf, viasOf, serializeUri, type SipResponse } from '../../../sip/message/index.js';
import {
  ClientInviteTransaction,
  ClientNonInviteTransaction,
  ManualClock,
  clientInviteTransition,
  clientNonInviteTransition,
} from '../../../sip/transaction/index.js';
import { context, RecordingTransport, request, response, settle, TCP, UDP } from './helpers.js';

function setup() {
  const clock = new ManualClock();
  const transport = new RecordingTransport(clock);
  const terminated: string[] = [];
  const ctx = context(clock, transport, terminated);
  const got: SipResponse[] = [];
  const errors: Error[] = [];
  const handlers = {
    response: (r: SipResponse) => got.push(r),
    timeout: (e: TransactionTimeoutError) => errors.push(e),
    transportError: (e: TransportError) => errors.push(e),
  };
  return { clock, transport, terminated, ctx, got, errors, handlers };
}

t.test('INVITE over UDP: Timer A doubles from T1, Timer B (64*T1) times out', async (t) => {
  const s = setup();
  const tx = new ClientInviteTransaction(s.ctx, 'k', request('INVITE'), UDP, s.handlers);
  tx.start();
  s.clock.advance(40_000);
  // 17.1.1.2: sends at 0, then A = 500, 1000, 2000, 4000, 8000, 16000 (no cap for INVITE), B at 32000
  t.same(s.transport.times('INVITE'), [0, 500, 1500, 3500, 7500, 15500, 31500]);
  t.equal(s.errors.length, 1);
  t.ok(s.errors[0] instanceof TransactionTimeoutError && s.errors[0].timer === 'B');
  t.equal(tx.state, 'terminated');
  t.same(s.terminated, ['k']);
  t.equal(s.clock.pendingCount, 0, 'no timer left behind');
});

t.test('INVITE over TCP: no retransmissions, Timer B still applies', async (t) => {
  const s = setup();
  const tx = new ClientInviteTransaction(s.ctx, 'k', request('INVITE'), TCP, s.handlers);
  tx.start();
  s.clock.advance(31_999);
  t.same(s.transport.times('INVITE'), [0]);
  t.equal(tx.state, 'calling');
  s.clock.advance(1);
  t.equal(tx.state, 'terminated');
  t.ok(s.errors[0] instanceof TransactionTimeoutError);
});

t.test(
  'INVITE: 1xx stops retransmissions, 2xx moves to Accepted, 2xx retransmissions reach the TU until Timer M',
  async (t) => {
    const s = setup();
    const req = request('INVITE');
    const tx = new ClientInviteTransaction(s.ctx, 'k', req, UDP, s.handlers);
    tx.start();
    s.clock.advance(600); // one retransmission at 500
    tx.receive(response(req, 180));
    t.equal(tx.state, 'proceeding');
    s.clock.advance(20_000);
    t.same(s.transport.times('INVITE'), [0, 500], 'no retransmission in Proceeding');
    t.equal(tx.state, 'proceeding', 'no Timer B in Proceeding');
    tx.receive(response(req, 183));
    tx.receive(response(req, 200));
    t.equal(tx.state, 'accepted');
    tx.receive(response(req, 200));
    tx.receive(response(req, 200, 'other-fork'));
    t.same(
      s.got.map((r) => r.status),
      [180, 183, 200, 200, 200],
      'every 2xx passed up (RFC 6026)',
    );
    t.notOk(s.transport.lines().includes('ACK'), 'the transaction does not ACK a 2xx');
    s.clock.advance(64 * 500 - 1);
    t.equal(tx.state, 'accepted');
    s.clock.advance(1);
    t.equal(tx.state, 'terminated', 'Timer M = 64*T1');
    tx.receive(response(req, 200));
    t.equal(s.got.length, 5, 'nothing after termination');
  },
);

t.test(
  'INVITE: a non-2xx final response is ACKed inside the transaction, retransmissions re-ACKed, Timer D',
  async (t) => {
    const s = setup();
    const req = request('INVITE', { cseq: 7 });
    const tx = new ClientInviteTransaction(s.ctx, 'k', req, UDP, s.handlers);
    tx.start();
    const busy = response(req, 486, 'busy-tag');
    tx.receive(busy);
    t.equal(tx.state, 'completed');
    t.same(
      s.got.map((r) => r.status),
      [486],
    );
    const ack = s.transport.sent.find((x) => x.msg.kind === 'request' && x.msg.method === 'ACK')!.msg;
    // RFC 3261 17.1.1.3
    t.ok(ack.kind === 'request' && serializeUri(ack.uri) === 'sip:bob@example.com', 'same Request-URI');
    t.same(cseqOf(ack), { seq: 7, method: 'ACK' });
    t.equal(toOf(ack).params.get('tag'), 'busy-tag', 'To from the response');
    const vias = viasOf(ack);
    t.equal(vias.length, 1);
    t.equal(vias[0].params.get('branch'), viasOf(req)[0].params.get('branch'), 'same branch as the INVITE');
    t.equal(ack.headers.get('Route'), '<sip:proxy.example.com;lr>', 'Route copied');
    tx.receive(busy);
    tx.receive(busy);
    t.equal(s.transport.lines().filter((l) => l === 'ACK').length, 3, 'each retransmission ACKed');
    t.equal(s.got.length, 1, 'retransmissions not passed up');
    s.clock.advance(31_999);
    t.equal(tx.state, 'completed');
    s.clock.advance(1);
    t.equal(tx.state, 'terminated', 'Timer D = 32 s over UDP');
    t.same(s.transport.times('INVITE'), [0], 'retransmissions stopped by the final response');
  },
);

t.test('INVITE over TCP: Timer D is 0, the transaction ends with the final response', async (t) => {
  const s = setup();
  const req = request('INVITE');
  const tx = new ClientInviteTransaction(s.ctx, 'k', req, TCP, s.handlers);
  tx.start();
  tx.receive(response(req, 603));
  t.equal(tx.state, 'terminated');
  t.same(s.transport.lines(), ['INVITE', 'ACK']);
  t.equal(s.clock.pendingCount, 0);
});

t.test('INVITE: a transport error terminates and informs the TU', async (t) => {
  const s = setup();
  s.transport.failSends = true;
  const tx = new ClientInviteTransaction(s.ctx, 'k', request('INVITE'), UDP, s.handlers);
  tx.start();
  await settle();
  t.equal(tx.state, 'terminated');
  t.ok(s.errors[0] instanceof TransportError);
  t.equal(s.clock.pendingCount, 0);
});

t.test('non-INVITE over UDP: Timer E doubles up to T2, Timer F times out', async (t) => {
  const s = setup();
  const tx = new ClientNonInviteTransaction(s.ctx, 'k', request('OPTIONS'), UDP, s.handlers);
  tx.start();
  s.clock.advance(40_000);
  // 17.1.2.2: E = 500, 1000, 2000, 4000, then T2 = 4000 each; F at 64*T1 = 32000
  t.same(s.transport.times('OPTIONS'), [0, 500, 1500, 3500, 7500, 11500, 15500, 19500, 23500, 27500, 31500]);
  t.ok(s.errors[0] instanceof TransactionTimeoutError && (s.errors[0] as TransactionTimeoutError).timer === 'F');
  t.equal(tx.state, 'terminated');
});

t.test('non-INVITE: in Proceeding Timer E fires every T2; a final response completes, Timer K absorbs', async (t) => {
  const s = setup();
  const req = request('BYE');
  const tx = new ClientNonInviteTransaction(s.ctx, 'k', req, UDP, s.handlers);
  tx.start();
  s.clock.advance(600);
  tx.receive(response(req, 100));
  t.equal(tx.state, 'proceeding');
  s.clock.advance(9000); // E was restarted at 500 with 1000 -> fires 1500 then every T2: 5500, 9500
  t.same(s.transport.times('BYE'), [0, 500, 1500, 5500, 9500]);
  tx.receive(response(req, 200));
  t.equal(tx.state, 'completed');
  tx.receive(response(req, 200));
  t.same(
    s.got.map((r) => r.status),
    [100, 200],
    'retransmitted final absorbed',
  );
  s.clock.advance(4999);
  t.equal(tx.state, 'completed');
  s.clock.advance(1);
  t.equal(tx.state, 'terminated', 'Timer K = T4');
  t.same(s.transport.times('BYE'), [0, 500, 1500, 5500, 9500], 'no retransmission after the final response');
});

t.test('non-INVITE over TCP: no retransmissions, Timer K is 0, Timer F still applies', async (t) => {
  const s = setup();
  const req = request('REGISTER');
  const a = new ClientNonInviteTransaction(s.ctx, 'a', req, TCP, s.handlers);
  a.start();
  a.receive(response(req, 401));
  t.equal(a.state, 'terminated');
  const b = new ClientNonInviteTransaction(s.ctx, 'b', request('OPTIONS'), TCP, s.handlers);
  b.start();
  s.clock.advance(32_000);
  t.equal(b.state, 'terminated');
  t.same(s.transport.lines(), ['REGISTER', 'OPTIONS']);
  t.ok(s.errors[0] instanceof TransactionTimeoutError);
});

t.test('non-INVITE: a transport error terminates', async (t) => {
  const s = setup();
  s.transport.failSends = true;
  const tx = new ClientNonInviteTransaction(s.ctx, 'k', request('OPTIONS'), UDP, s.handlers);
  tx.start();
  await settle();
  t.equal(tx.state, 'terminated');
  t.ok(s.errors[0] instanceof TransportError);
});

t.test('transition tables: terminated absorbs everything, ignored inputs return null', async (t) => {
  for (const i of [
    'timer_a',
    'timer_b',
    'timer_d',
    'timer_m',
    'response_1xx',
    'response_2xx',
    'response_300_699',
    'transport_error',
  ] as const) {
    t.equal(clientInviteTransition('terminated', i), null);
  }
  t.equal(clientInviteTransition('completed', 'response_2xx'), null, '2xx after a non-2xx final is ignored');
  t.equal(clientInviteTransition('accepted', 'response_300_699'), null);
  t.equal(clientNonInviteTransition('completed', 'response_2xx'), null);
  t.same(clientInviteTransition('calling', 'response_2xx')?.next, 'accepted');
});

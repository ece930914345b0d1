// INVITE client transaction (RFC 3261 17.1.1, RFC 6026 7.2): sends the INVITE, retransmits it over UDP on
// Timer A, ACKs non-2xx final responses itself (17.1.1.3), passes 1xx and every 2xx to the TU.
// Transitions are in client-invite.fsm.ts.
import { TransactionTimeoutError } from '../errors.js';
import { Headers } from '../message/headers.js';
import { serializeMessage } from '../message/serializer.js';
import { SIP_VERSION, type SipRequest, type SipResponse } from '../message/types.js';
import type { Target } from '../transport/types.js';
import {
  clientInviteTransition,
  type ClientInviteAction,
  type ClientInviteInput,
  type ClientInviteState,
} from './client-invite.fsm.js';
import { ClientMachine, type ClientTransactionHandlers } from './client-machine.js';
import type { TransactionContext } from './machine.js';
import { backoff, initialDuration } from './timers.js';

export { responseInput, type ClientTransactionHandlers } from './client-machine.js';

export class ClientInviteTransaction extends ClientMachine<ClientInviteState, ClientInviteInput, ClientInviteAction> {
  readonly kind = 'client-invite' as const;
  private intervalA = 0;
  private ackBytes: Buffer | undefined;
  /** Called on the first provisional response (CANCEL waits for it, RFC 3261 9.1). */
  onProvisional: (() => void) | undefined;

  constructor(
    ctx: TransactionContext,
    key: string,
    request: SipRequest,
    target: Target,
    handlers: ClientTransactionHandlers,
  ) {
    super('calling', ctx, key, request, target, handlers);
  }

  /** Send the INVITE; start Timer A (unreliable only) and Timer B (RFC 3261 17.1.1.2). */
  start(): void {
    this.intervalA = this.sendFirst('A', 'B');
  }

  protected transition(state: ClientInviteState, input: ClientInviteInput) {
    return clientInviteTransition(state, input);
  }

  protected execute(action: ClientInviteAction): void {
    switch (action.do) {
      case 'retransmit':
        this.sendBytes(this.prepared.bytes);
        this.intervalA = backoff('A', this.intervalA, this.ctx.timers);
        this.startTimer('A', this.intervalA);
        return;
      case 'pass_to_tu': {
        const res = this.response!;
        if (res.status < 200 && this.onProvisional) {
          const cb = this.onProvisional;
          this.onProvisional = undefined;
          cb();
        }
        this.handlers.response(res);
        return;
      }
      case 'send_ack':
        this.ackBytes ??= serializeMessage(buildAck(this.request, this.response!));
        this.sendBytes(this.ackBytes);
        return;
      case 'start':
        this.startTimer(action.timer, initialDuration(action.timer, this.ctx.timers, this.prepared.reliable));
        return;
      case 'cancel':
        this.timerSet.cancel(action.timer);
        return;
      case 'timeout':
        this.handlers.timeout?.(new TransactionTimeoutError('B'));
        return;
      case 'transport_failed':
        this.reportTransportError();
        return;
    }
  }

  protected onTerminated(): void {
    this.onProvisional = undefined;
    this.handlers.terminated?.();
  }
}

/**
 * The ACK for a non-2xx final response, built inside the transaction (RFC 3261 17.1.1.3): Request-URI,
 * Call-ID, From, CSeq number and Route of the INVITE; To of the response; only the INVITE's top Via.
 */
export function buildAck(invite: SipRequest, res: SipResponse): SipRequest {
  const headers = new Headers();
  const via = invite.headers.first('Via');
  if (via !== undefined) headers.add('Via', via);
  const maxForwards = invite.headers.get('Max-Forwards');
  headers.add('Max-Forwards', maxForwards ?? '70');
  for (const route of invite.headers.getFields('Route')) headers.add('Route', route);
  headers.add('From', invite.headers.get('From') ?? '');
  headers.add('To', res.headers.get('To') ?? invite.headers.get('To') ?? '');
  headers.add('Call-ID', invite.headers.get('Call-ID') ?? '');
  const seq = (invite.headers.get('CSeq') ?? '').trim().split(/\s+/)[0];
  headers.add('CSeq', `${seq} ACK`);
  return { kind: 'request', method: 'ACK', uri: invite.uri, version: SIP_VERSION, headers, body: Buffer.alloc(0) };
}

// Non-INVITE client transaction (RFC 3261 17.1.2): sends the request, retransmits it over UDP on Timer E
// (T1 doubling up to T2; every T2 once a provisional arrived), times out on Timer F, absorbs response
// retransmissions for Timer K. Transitions are in client-non-invite.fsm.ts.
import { TransactionTimeoutError } from '../errors.js';
import type { SipRequest } from '../message/types.js';
import type { Target } from '../transport/types.js';
import { ClientMachine, type ClientTransactionHandlers } from './client-machine.js';
import {
  clientNonInviteTransition,
  type ClientNonInviteAction,
  type ClientNonInviteInput,
  type ClientNonInviteState,
} from './client-non-invite.fsm.js';
import type { TransactionContext } from './machine.js';
import { backoff, initialDuration } from './timers.js';

export class ClientNonInviteTransaction extends ClientMachine<
  ClientNonInviteState,
  ClientNonInviteInput,
  ClientNonInviteAction
> {
  readonly kind = 'client-non-invite' as const;
  private intervalE = 0;

  constructor(
    ctx: TransactionContext,
    key: string,
    request: SipRequest,
    target: Target,
    handlers: ClientTransactionHandlers,
  ) {
    super('trying', ctx, key, request, target, handlers);
  }

  /** Send the request; start Timer E (unreliable only) and Timer F (RFC 3261 17.1.2.2). */
  start(): void {
    this.intervalE = this.sendFirst('E', 'F');
  }

  protected transition(state: ClientNonInviteState, input: ClientNonInviteInput) {
    return clientNonInviteTransition(state, input);
  }

  protected execute(action: ClientNonInviteAction): void {
    switch (action.do) {
      case 'retransmit':
        this.sendBytes(this.prepared.bytes);
        // 17.1.2.2: Trying: E doubles up to T2; Proceeding: E fires every T2.
        this.intervalE = action.interval === 'T2' ? this.ctx.timers.T2 : backoff('E', this.intervalE, this.ctx.timers);
        this.startTimer('E', this.intervalE);
        return;
      case 'pass_to_tu':
        this.handlers.response(this.response!);
        return;
      case 'start':
        this.startTimer(action.timer, initialDuration(action.timer, this.ctx.timers, this.prepared.reliable));
        return;
      case 'cancel':
        this.timerSet.cancel(action.timer);
        return;
      case 'timeout':
        this.handlers.timeout?.(new TransactionTimeoutError('F'));
        return;
      case 'transport_failed':
        this.reportTransportError();
        return;
    }
  }

  protected onTerminated(): void {
    this.handlers.terminated?.();
  }
}

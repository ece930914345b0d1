// INVITE server transaction (RFC 3261 17.2.1, RFC 6026 7.1): answers retransmitted INVITEs with the last
// response, retransmits a non-2xx final response over UDP on Timer G until the ACK (or Timer H), sends the
// TU's 2xx (and its retransmissions) from the Accepted state until Timer L. Transitions: server-invite.fsm.ts.
import { TransactionTimeoutError } from '../errors.js';
import type { SipRequest } from '../message/types.js';
import type { Source } from '../transport/types.js';
import type { TransactionContext } from './machine.js';
import { ServerMachine, type ServerTransactionHandlers } from './server-machine.js';
import {
  serverInviteTransition,
  type ServerInviteAction,
  type ServerInviteInput,
  type ServerInviteState,
} from './server-invite.fsm.js';
import { backoff, initialDuration } from './timers.js';

export class ServerInviteTransaction extends ServerMachine<ServerInviteState, ServerInviteInput, ServerInviteAction> {
  readonly kind = 'server-invite' as const;
  handlers: ServerTransactionHandlers = {};
  private intervalG = 0;
  private ack: SipRequest | undefined;
  /** To tag of the final response sent (RFC 2543 ACK matching, 17.2.3). */
  toTag: string | undefined;

  constructor(ctx: TransactionContext, key: string, request: SipRequest, source: Source) {
    super('proceeding', ctx, key, request, source);
  }

  /** An ACK matched this transaction. */
  receiveAck(ack: SipRequest): void {
    this.ack = ack;
    this.input('ack');
  }

  protected transition(state: ServerInviteState, input: ServerInviteInput) {
    return serverInviteTransition(state, input);
  }

  protected execute(action: ServerInviteAction): void {
    switch (action.do) {
      case 'send_response':
        this.sendPending();
        return;
      case 'resend_response':
        this.resendLast();
        return;
      case 'retransmit_final':
        this.resendLast();
        this.intervalG = backoff('G', this.intervalG, this.ctx.timers);
        this.startTimer('G', this.intervalG);
        return;
      case 'pass_ack_to_tu':
        this.handlers.ack?.(this.ack!);
        return;
      case 'start':
        // 17.2.1: Timer G only for unreliable transports.
        if (action.timer === 'G') {
          if (this.reliable) return;
          this.intervalG = initialDuration('G', this.ctx.timers, false);
          this.startTimer('G', this.intervalG);
          return;
        }
        this.startTimer(action.timer, initialDuration(action.timer, this.ctx.timers, this.reliable));
        return;
      case 'cancel':
        this.timerSet.cancel(action.timer);
        return;
      case 'timeout':
        this.handlers.timeout?.(new TransactionTimeoutError('H'));
        return;
      case 'transport_failed':
        this.reportTransportError();
        return;
    }
  }
}

// Non-INVITE server transaction (RFC 3261 17.2.2): discards retransmissions until the TU responds, then
// answers them with the last response; absorbs them for Timer J after the final response.
// Transitions are in server-non-invite.fsm.ts.
import type { SipRequest } from '../message/types.js';
import type { Source } from '../transport/types.js';
import type { TransactionContext } from './machine.js';
import { ServerMachine, type ServerTransactionHandlers } from './server-machine.js';
import {
  serverNonInviteTransition,
  type ServerNonInviteAction,
  type ServerNonInviteInput,
  type ServerNonInviteState,
} from './server-non-invite.fsm.js';
import { initialDuration } from './timers.js';

export class ServerNonInviteTransaction extends ServerMachine<
  ServerNonInviteState,
  ServerNonInviteInput,
  ServerNonInviteAction
> {
  readonly kind = 'server-non-invite' as const;
  handlers: Pick<ServerTransactionHandlers, 'transportError' | 'terminated'> = {};

  constructor(ctx: TransactionContext, key: string, request: SipRequest, source: Source) {
    super('trying', ctx, key, request, source);
  }

  protected transition(state: ServerNonInviteState, input: ServerNonInviteInput) {
    return serverNonInviteTransition(state, input);
  }

  protected execute(action: ServerNonInviteAction): void {
    switch (action.do) {
      case 'send_response':
        this.sendPending();
        return;
      case 'resend_response':
        this.resendLast();
        return;
      case 'start':
        this.startTimer(action.timer, initialDuration(action.timer, this.ctx.timers, this.reliable));
        return;
      case 'transport_failed':
        this.reportTransportError();
        return;
    }
  }
}

// Non-INVITE server transaction (RFC 3261 17.2.2): discards retransmissions until the TU responds, then
// answers them with the last response; absorbs them for Timer J after the final response.
// Transitions are in server-non-invite.fsm.ts.
import { TransportError } from '../errors.js';
import { serializeMessage } from '../message/serializer.js';
import type { SipRequest, SipResponse } from '../message/types.js';
import type { Source } from '../transport/types.js';
import { Machine, type TransactionContext } from './machine.js';
import type { ServerTransactionHandlers } from './server-invite.js';
import { tuInput } from './server-invite.js';
import { serverNonInviteTransition, type ServerNonInviteAction, type ServerNonInviteInput, type ServerNonInviteState } from './server-non-invite.fsm.js';
import { initialDuration } from './timers.js';

export class ServerNonInviteTransaction extends Machine<ServerNonInviteState, ServerNonInviteInput, ServerNonInviteAction> {
  readonly kind = 'server-non-invite' as const;
  handlers: Pick<ServerTransactionHandlers, 'transportError' | 'terminated'> = {};
  private pending: SipResponse | undefined;
  private last: { res: SipResponse; bytes: Buffer } | undefined;
  private error: TransportError | undefined;

  constructor(ctx: TransactionContext, key: string, readonly request: SipRequest, readonly source: Source) {
    super('trying', key, ctx);
  }

  get reliable(): boolean {
    return this.source.transport !== 'UDP';
  }

  get lastResponse(): SipResponse | undefined {
    return this.last?.res;
  }

  /** Send a response from the TU; false if the state does not take it (after the final response). */
  respond(res: SipResponse): boolean {
    const input = tuInput(res.status);
    if (serverNonInviteTransition(this.state, input) === null) return false;
    this.pending = res;
    this.input(input);
    return true;
  }

  receiveRequest(): void {
    this.input('request');
  }

  protected transition(state: ServerNonInviteState, input: ServerNonInviteInput) {
    return serverNonInviteTransition(state, input);
  }

  protected execute(action: ServerNonInviteAction): void {
    switch (action.do) {
      case 'send_response': {
        const res = this.pending!;
        this.pending = undefined;
        this.last = { res, bytes: serializeMessage(res) };
        this.send();
        return;
      }
      case 'resend_response':
        if (this.last) this.send();
        return;
      case 'start':
        this.startTimer(action.timer, initialDuration(action.timer, this.ctx.timers, this.reliable));
        return;
      case 'transport_failed':
        this.handlers.transportError?.(this.error ?? new TransportError('transport error'));
        return;
    }
  }

  protected onTerminated(): void {
    this.handlers.terminated?.();
  }

  private send(): void {
    const last = this.last!;
    this.ctx.transport.sendResponseBytes(last.bytes, last.res, this.source).catch((err: unknown) => {
      this.error = err instanceof TransportError ? err : new TransportError('send failed', err);
      this.input('transport_error');
    });
  }
}

// Non-INVITE client transaction (RFC 3261 17.1.2): sends the request, retransmits it over UDP on Timer E
// (T1 doubling up to T2; every T2 once a provisional arrived), times out on Timer F, absorbs response
// retransmissions for Timer K. Transitions are in client-non-invite.fsm.ts.
import { TransactionTimeoutError, TransportError } from '../errors.js';
import type { SipRequest, SipResponse } from '../message/types.js';
import type { PreparedRequest } from '../transport/transport.js';
import type { Target } from '../transport/types.js';
import { responseInput, type ClientTransactionHandlers } from './client-invite.js';
import { clientNonInviteTransition, type ClientNonInviteAction, type ClientNonInviteInput, type ClientNonInviteState } from './client-non-invite.fsm.js';
import { Machine, type TransactionContext } from './machine.js';
import { backoff, initialDuration } from './timers.js';

export class ClientNonInviteTransaction extends Machine<ClientNonInviteState, ClientNonInviteInput, ClientNonInviteAction> {
  readonly kind = 'client-non-invite' as const;
  private prepared!: PreparedRequest;
  private intervalE = 0;
  private response: SipResponse | undefined;
  private error: TransportError | undefined;

  constructor(
    ctx: TransactionContext,
    key: string,
    readonly request: SipRequest,
    private readonly target: Target,
    private readonly handlers: ClientTransactionHandlers,
  ) {
    super('trying', key, ctx);
  }

  get reliable(): boolean {
    return this.prepared.reliable;
  }

  get sentTo(): Target {
    return this.prepared.target;
  }

  /** Send the request; start Timer E (unreliable only) and Timer F (RFC 3261 17.1.2.2). */
  start(): void {
    this.prepared = this.ctx.transport.prepareRequest(this.request, this.target);
    this.send();
    if (!this.prepared.reliable) {
      this.intervalE = initialDuration('E', this.ctx.timers, false);
      this.startTimer('E', this.intervalE);
    }
    this.startTimer('F', initialDuration('F', this.ctx.timers, this.prepared.reliable));
  }

  receive(res: SipResponse): void {
    this.response = res;
    this.input(responseInput(res.status));
  }

  protected transition(state: ClientNonInviteState, input: ClientNonInviteInput) {
    return clientNonInviteTransition(state, input);
  }

  protected execute(action: ClientNonInviteAction): void {
    switch (action.do) {
      case 'retransmit':
        this.send();
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
        this.handlers.transportError?.(this.error ?? new TransportError('transport error'));
        return;
    }
  }

  protected onTerminated(): void {
    this.handlers.terminated?.();
  }

  private send(): void {
    this.ctx.transport.sendBytes(this.prepared.bytes, this.prepared.target).catch((err: unknown) => {
      this.error = err instanceof TransportError ? err : new TransportError('send failed', err);
      this.input('transport_error');
    });
  }
}

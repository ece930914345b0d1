// INVITE server transaction (RFC 3261 17.2.1, RFC 6026 7.1): answers retransmitted INVITEs with the last
// response, retransmits a non-2xx final response over UDP on Timer G until the ACK (or Timer H), sends the
// TU's 2xx (and its retransmissions) from the Accepted state until Timer L. Transitions: server-invite.fsm.ts.
import { TransactionTimeoutError, TransportError } from '../errors.js';
import { serializeMessage } from '../message/serializer.js';
import type { SipRequest, SipResponse } from '../message/types.js';
import type { Source } from '../transport/types.js';
import { Machine, type TransactionContext } from './machine.js';
import { serverInviteTransition, type ServerInviteAction, type ServerInviteInput, type ServerInviteState } from './server-invite.fsm.js';
import { backoff, initialDuration } from './timers.js';

export interface ServerTransactionHandlers {
  /** RFC 6026: an ACK matched while Accepted (ACKs for 2xx normally arrive unmatched, to the TU). */
  ack?(ack: SipRequest): void;
  /** Timer H fired: no ACK for the final response (RFC 3261 17.2.1). */
  timeout?(err: TransactionTimeoutError): void;
  transportError?(err: TransportError): void;
  /** A CANCEL matched this INVITE (RFC 3261 9.2); the layer already answered the CANCEL with 200. */
  cancelled?(cancel: SipRequest): void;
  terminated?(): void;
}

export function tuInput(status: number): 'tu_1xx' | 'tu_2xx' | 'tu_300_699' {
  return status < 200 ? 'tu_1xx' : status < 300 ? 'tu_2xx' : 'tu_300_699';
}

export class ServerInviteTransaction extends Machine<ServerInviteState, ServerInviteInput, ServerInviteAction> {
  readonly kind = 'server-invite' as const;
  handlers: ServerTransactionHandlers = {};
  private pending: SipResponse | undefined;
  private last: { res: SipResponse; bytes: Buffer } | undefined;
  private intervalG = 0;
  private ack: SipRequest | undefined;
  private error: TransportError | undefined;
  /** To tag of the final response sent (RFC 2543 ACK matching, 17.2.3). */
  toTag: string | undefined;

  constructor(ctx: TransactionContext, key: string, readonly request: SipRequest, readonly source: Source) {
    super('proceeding', key, ctx);
  }

  get reliable(): boolean {
    return this.source.transport !== 'UDP';
  }

  /** The last response sent, if any. */
  get lastResponse(): SipResponse | undefined {
    return this.last?.res;
  }

  /** Send a response from the TU; false if the state does not take it (e.g. a second final response). */
  respond(res: SipResponse): boolean {
    const before = this.state;
    const input = tuInput(res.status);
    if (serverInviteTransition(before, input) === null) return false;
    this.pending = res;
    this.input(input);
    return true;
  }

  /** A retransmission of the INVITE matched this transaction. */
  receiveRequest(): void {
    this.input('request');
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
      case 'retransmit_final':
        this.send();
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

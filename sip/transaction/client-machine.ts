// What the two client transactions share (RFC 3261 17.1): the prepared request, sending it with the retransmit
// timer armed only over unreliable transports and the timeout timer always, response matching into an input,
// and transport failures turned into the `transport_error` input.
import type { TransactionTimeoutError } from '../errors.js';
import { TransportError } from '../errors.js';
import type { SipRequest, SipResponse } from '../message/types.js';
import type { PreparedRequest } from '../transport/transport.js';
import type { Target } from '../transport/types.js';
import { Machine, type TransactionContext } from './machine.js';
import { initialDuration } from './timers.js';

export interface ClientTransactionHandlers {
  /** Responses for the TU: provisional, every 2xx, the first non-2xx final. */
  response(res: SipResponse): void;
  /** Timer B or F fired without a final response. */
  timeout?(err: TransactionTimeoutError): void;
  transportError?(err: TransportError): void;
  terminated?(): void;
}

/** Map a response status to the transaction input (RFC 3261 17.1.1.2). */
export function responseInput(status: number): 'response_1xx' | 'response_2xx' | 'response_300_699' {
  return status < 200 ? 'response_1xx' : status < 300 ? 'response_2xx' : 'response_300_699';
}

/** The inputs every client transaction takes from outside its timers. */
type ClientInput = ReturnType<typeof responseInput> | 'transport_error';

export abstract class ClientMachine<S extends string, I extends string, A> extends Machine<S, I, A> {
  protected prepared!: PreparedRequest;
  protected response: SipResponse | undefined;
  protected error: TransportError | undefined;

  protected constructor(
    initial: S,
    ctx: TransactionContext,
    key: string,
    readonly request: SipRequest,
    private readonly target: Target,
    protected readonly handlers: ClientTransactionHandlers,
  ) {
    super(initial, key, ctx);
  }

  /** Whether the request went over a reliable transport (no retransmissions then). */
  get reliable(): boolean {
    return this.prepared.reliable;
  }

  /** Where the request went (after the 18.1.1 size rule). */
  get sentTo(): Target {
    return this.prepared.target;
  }

  /** A response matched to this transaction (RFC 3261 17.1.3). */
  receive(res: SipResponse): void {
    this.response = res;
    this.clientInput(responseInput(res.status));
  }

  /**
   * Send the request; start the retransmit timer (A or E, unreliable transports only) and the timeout timer
   * (B or F) (RFC 3261 17.1.1.2, 17.1.2.2). Returns the first retransmit interval (0 when reliable).
   */
  protected sendFirst(retransmit: 'A' | 'E', timeout: 'B' | 'F'): number {
    this.prepared = this.ctx.transport.prepareRequest(this.request, this.target);
    if (this.prepared.reliable) this.holdConnection(this.prepared.target);
    this.sendBytes(this.prepared.bytes);
    let interval = 0;
    if (!this.prepared.reliable) {
      interval = initialDuration(retransmit, this.ctx.timers, false);
      this.startTimer(retransmit, interval);
    }
    this.startTimer(timeout, initialDuration(timeout, this.ctx.timers, this.prepared.reliable));
    return interval;
  }

  protected sendBytes(bytes: Buffer): void {
    this.ctx.transport.sendBytes(bytes, this.prepared.target).catch((err: unknown) => {
      this.error = err instanceof TransportError ? err : new TransportError('send failed', err);
      this.clientInput('transport_error');
    });
  }

  protected reportTransportError(): void {
    this.handlers.transportError?.(this.error ?? new TransportError('transport error'));
  }

  /** Inputs shared by every client transaction belong to each one's input union. */
  private clientInput(input: ClientInput): void {
    this.input(input as unknown as I);
  }
}

// What the two server transactions share (RFC 3261 17.2): the request and where it came from, responses from the
// TU taken only when the state accepts them, the last response serialized once and resent for retransmitted
// requests (17.2.1, 17.2.2), and transport failures turned into the `transport_error` input (17.2.4).
import type { TransactionTimeoutError } from '../errors.js';
import { TransportError } from '../errors.js';
import { serializeMessage } from '../message/serializer.js';
import type { SipRequest, SipResponse } from '../message/types.js';
import type { Source } from '../transport/types.js';
import { Machine, type TransactionContext } from './machine.js';

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

/** Map a response the TU sends to the transaction input (RFC 3261 17.2.1, 17.2.2). */
export function tuInput(status: number): 'tu_1xx' | 'tu_2xx' | 'tu_300_699' {
  return status < 200 ? 'tu_1xx' : status < 300 ? 'tu_2xx' : 'tu_300_699';
}

/** The inputs every server transaction takes from outside its timers. */
type ServerInput = ReturnType<typeof tuInput> | 'request' | 'transport_error';

export abstract class ServerMachine<S extends string, I extends string, A> extends Machine<S, I, A> {
  /** Set by the TU; what a kind calls beyond these is its own. */
  abstract handlers: Pick<ServerTransactionHandlers, 'transportError' | 'terminated'>;
  private pending: SipResponse | undefined;
  private last: { res: SipResponse; bytes: Buffer } | undefined;
  private error: TransportError | undefined;

  protected constructor(
    initial: S,
    ctx: TransactionContext,
    key: string,
    readonly request: SipRequest,
    readonly source: Source,
  ) {
    super(initial, key, ctx);
    if (this.reliable) this.holdConnection(source);
  }

  /** Whether the request came over a reliable transport (no response retransmissions then). */
  get reliable(): boolean {
    return this.source.transport !== 'UDP';
  }

  /** The last response sent, if any. */
  get lastResponse(): SipResponse | undefined {
    return this.last?.res;
  }

  /** Send a response from the TU; false if the state does not take it (e.g. a second final response). */
  respond(res: SipResponse): boolean {
    const input = tuInput(res.status);
    if (this.transition(this.state, input as unknown as I) === null) return false;
    this.pending = res;
    this.serverInput(input);
    return true;
  }

  /** A retransmission of the request matched this transaction. */
  receiveRequest(): void {
    this.serverInput('request');
  }

  /** The `send_response` action: the TU's response becomes the last one and goes out. */
  protected sendPending(): void {
    const res = this.pending!;
    this.pending = undefined;
    this.last = { res, bytes: serializeMessage(res) };
    this.send();
  }

  /** The `resend_response` action (and retransmissions): the last response again; nothing before the TU answered. */
  protected resendLast(): void {
    if (this.last) this.send();
  }

  /** The `transport_failed` action. */
  protected reportTransportError(): void {
    this.handlers.transportError?.(this.error ?? new TransportError('transport error'));
  }

  protected onTerminated(): void {
    this.handlers.terminated?.();
  }

  private send(): void {
    const last = this.last!;
    this.ctx.transport.sendResponseBytes(last.bytes, last.res, this.source).catch((err: unknown) => {
      this.error = err instanceof TransportError ? err : new TransportError('send failed', err);
      this.serverInput('transport_error');
    });
  }

  /** Inputs shared by every server transaction belong to each one's input union. */
  private serverInput(input: ServerInput): void {
    this.input(input as unknown as I);
  }
}

// The one place the UA meets the transaction layer (sip/transaction): everything the UA core needs
// from it, as a small interface, so the UA reads as RFC 3261 section 8 and 13 and nothing else.

import type { SipRequest, SipResponse } from '../message/types.js';
import type { Source, Target } from '../transport/types.js';

/** A server transaction the UA answers through (RFC 3261 17.2). */
export interface ServerTx {
  /** Send a provisional or final response; the transaction retransmits and absorbs as the RFC says. */
  respond(res: SipResponse): void;
}

export interface ClientTxHandlers {
  provisional?(res: SipResponse): void;
  /** The final response (for INVITE, 2xx retransmissions come through `retransmitted2xx`). */
  final(res: SipResponse): void;
  /** TransactionTimeoutError or TransportError. */
  error(err: Error): void;
}

export interface ClientTx {
  /** RFC 3261 9.1: CANCEL a pending INVITE (after a provisional response). */
  cancel(): void;
}

/** What the UA core receives from below. */
export interface TxUser {
  /** A new request (not a retransmission) with the server transaction to answer it (none for ACK). */
  request(req: SipRequest, source: Source, tx: ServerTx | null): void;
  /** A response that matched no client transaction: a 2xx to INVITE retransmitted (RFC 6026 7.2). */
  strayResponse(res: SipResponse, source: Source): void;
  /** The INVITE this server transaction handles was cancelled (RFC 3261 9.2); 487 is already sent. */
  cancelled(invite: SipRequest): void;
}

export interface TxLayer {
  /** Send a request (with its top Via already on) through a new client transaction. */
  send(req: SipRequest, target: Target, handlers: ClientTxHandlers): ClientTx;
  /** Send bytes outside any transaction: the ACK for a 2xx (RFC 3261 13.2.2.4). */
  sendStateless(req: SipRequest, target: Target): void;
  /** Retransmit a response outside its transaction: the UAS core's 2xx (RFC 3261 13.3.1.4). */
  resendResponse(res: SipResponse): void;
  /** Keep the TCP connection to or from `at` open until the release is called (a dialog's flow, RFC 5626 3). */
  holdConnection(at: Source | Target): () => void;
  /** Open TCP connections, both directions. */
  readonly tcpConnectionCount: number;
  readonly sentBy: string;
  close(): Promise<void>;
}

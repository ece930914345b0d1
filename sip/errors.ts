// Typed errors of the SIP stack, one per boundary, so a caller can test for each with instanceof.
//   SipError(status, reason)      a SIP failure carrying the response status it maps to (or came from)
//   SipParseError                 a message that cannot be parsed or is malformed; status is the 4xx/5xx
//                                 a request deserves (RFC 3261 8.2, RFC 4475); `partial` is what was
//                                 readable (start line and headers), enough to answer with that status
//   TransportError                a send or socket failure (RFC 3261 18.4: reported to the transaction)
//   TransactionTimeoutError       Timer B, F or H fired (RFC 3261 17.1.1.2, 17.1.2.2, 17.2.1)

import type { SipMessage } from './message/types.js';

export class SipError extends Error {
  readonly status: number;
  readonly reason: string;

  constructor(status: number, reason: string, message?: string) {
    super(message ?? `${status} ${reason}`);
    this.name = 'SipError';
    this.status = status;
    this.reason = reason;
  }
}

export class SipParseError extends SipError {
  /** The start line and headers, when they could be read: enough to send `status` back. */
  readonly partial: SipMessage | undefined;

  constructor(detail: string, status = 400, reason = 'Bad Request', partial?: SipMessage) {
    super(status, reason, detail);
    this.name = 'SipParseError';
    this.partial = partial;
  }
}

export class TransportError extends Error {
  override readonly cause: unknown;

  constructor(message: string, cause?: unknown) {
    super(message);
    this.name = 'TransportError';
    this.cause = cause;
  }
}

export class TransactionTimeoutError extends Error {
  /** Which timer fired: 'B', 'F' or 'H'. */
  readonly timer: 'B' | 'F' | 'H';

  constructor(timer: 'B' | 'F' | 'H', message?: string) {
    super(message ?? `transaction timed out (Timer ${timer})`);
    this.name = 'TransactionTimeoutError';
    this.timer = timer;
  }
}

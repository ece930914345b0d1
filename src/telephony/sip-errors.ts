// The SIP answers of the calls Parley refuses, mapped in this one place: the domain's errors (an unknown number, a
// disabled agent, a project at its cap or gone) and telephony's own refusals (an untrusted source, the INVITE rate,
// digest, codecs, no RTP port or media worker, a node that is stopping).
import { DomainError, type DomainErrorKind } from '../domain/errors.js';

/** A refusal telephony decided itself: the status, reason phrase and headers of the final response. */
export class CallRefused extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    readonly headers: Array<[string, string]> = [],
  ) {
    super(message);
    this.name = 'CallRefused';
  }
}

export interface SipRejection {
  status: number;
  reason: string;
  headers: Array<[string, string]>;
}

/**
 * RFC 3261 21: the response to an INVITE by domain error kind. not_found: no agent has the number (or its project is
 * gone); conflict: the agent is disabled (480: try later, or elsewhere); limit_reached: the project is at its
 * concurrency cap (486, RFC 3261 21.4.24: busy at this end system); unavailable: this node cannot take it now.
 */
const RESPONSE_OF_KIND: Record<DomainErrorKind, { status: number; reason: string }> = {
  invalid: { status: 400, reason: 'Bad Request' },
  not_found: { status: 404, reason: 'Not Found' },
  forbidden: { status: 403, reason: 'Forbidden' },
  conflict: { status: 480, reason: 'Temporarily Unavailable' },
  limit_reached: { status: 486, reason: 'Busy Here' },
  unavailable: { status: 503, reason: 'Service Unavailable' },
};

export const SERVER_ERROR: SipRejection = { status: 500, reason: 'Server Internal Error', headers: [] };

/** The final response refusing a call for `err`; null for an error that is neither (a bug: answer SERVER_ERROR). */
export function rejectionOf(err: unknown): SipRejection | null {
  if (err instanceof CallRefused) return { status: err.status, reason: err.reason, headers: err.headers };
  if (err instanceof DomainError) return { ...RESPONSE_OF_KIND[err.kind], headers: [] };
  return null;
}

/** RFC 3261 21.5.4 / 20.33: 503 with Retry-After, for a refusal that passes in that many seconds. */
export const serviceUnavailable = (message: string, retryAfterSec?: number) =>
  new CallRefused(
    503,
    'Service Unavailable',
    message,
    retryAfterSec === undefined ? [] : [['Retry-After', `${retryAfterSec}`]],
  );

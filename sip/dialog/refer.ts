// REFER (RFC 3515) and its implicit subscription: Refer-To/Referred-By, the message/sipfrag bodies
// of the NOTIFYs (RFC 3420), Subscription-State (RFC 6665 8.2.3), and the notifier's state machine
// for the side that was asked to transfer.

import { parseNameAddr } from '../message/address.js';
import type { NameAddr } from '../message/types.js';

export const SIPFRAG = 'message/sipfrag;version=2.0'; // RFC 3515 2.4.5 / RFC 3420
export const REFER_EVENT = 'refer'; // RFC 3515 2.4.5: Event: refer (with ;id=<CSeq> for repeated REFERs)
// RFC 3515 2.4.6 / RFC 6665 4.2.2: an implicit subscription lasts a while; the notifier picks it.
export const REFER_SUBSCRIPTION_SEC = 60;

export function parseReferTo(value: string | undefined): NameAddr | null {
  if (value === undefined) return null;
  return parseNameAddr(value);
}

/** "SIP/2.0 200 OK\r\n": the status line of the transfer's progress (RFC 3515 2.4.5). */
export function sipfrag(status: number, reason: string): Buffer {
  return Buffer.from(`SIP/2.0 ${status} ${reason}\r\n`);
}

/** RFC 4733 3.2: the digits of events 0-16 (16 is flash, written '!'). */
const EVENT_DIGITS = '0123456789*#ABCD!';

/** The status line of a sipfrag body; null when it is not one. */
export function parseSipfrag(body: Buffer | string): { status: number; reason: string } | null {
  const text = typeof body === 'string' ? body : body.toString('utf8');
  const m = /^SIP\/2\.0\s+(?<status>\d{3})\s*(?<reason>[^\r\n]*)/.exec(text.trimStart())?.groups;
  return m?.status !== undefined ? { status: Number(m.status), reason: (m.reason ?? '').trim() } : null;
}

export type SubscriptionState =
  { state: 'active' | 'pending'; expiresSec: number | null } | { state: 'terminated'; reason: string | null };

export function parseSubscriptionState(value: string | undefined): SubscriptionState | null {
  if (value === undefined) return null;
  const [head = '', ...params] = value.split(';').map((s) => s.trim());
  const param = (name: string) =>
    params.find((p) => p.toLowerCase().startsWith(name + '='))?.slice(name.length + 1) ?? null;
  const state = head.toLowerCase();
  if (state === 'terminated') return { state, reason: param('reason') };
  if (state === 'active' || state === 'pending') {
    const e = param('expires');
    return { state, expiresSec: e === null ? null : Number(e) };
  }
  return null;
}

export function formatSubscriptionState(s: SubscriptionState): string {
  if (s.state === 'terminated') return s.reason ? `terminated;reason=${s.reason}` : 'terminated';
  return s.expiresSec === null ? s.state : `${s.state};expires=${s.expiresSec}`;
}

// The notifier: we accepted a REFER (202) and report the referred call's progress.
export type ReferNotifierState =
  | { name: 'active' } // RFC 3515 2.4.4: 202 sent; the first NOTIFY is "100 Trying"
  | { name: 'terminated'; finalStatus: number };

export type ReferNotifierInput = { kind: 'progress'; status: number; reason: string } | { kind: 'expired' };

export interface ReferNotify {
  subscriptionState: string;
  body: Buffer;
}

/** RFC 3515 2.4.5: provisional progress keeps the subscription active; a final status ends it. */
export function referNotifierTransition(
  state: ReferNotifierState,
  input: ReferNotifierInput,
): { state: ReferNotifierState; notify: ReferNotify | null } {
  if (state.name === 'terminated') return { state, notify: null };
  if (input.kind === 'expired') {
    return {
      state: { name: 'terminated', finalStatus: 0 },
      notify: { subscriptionState: 'terminated;reason=timeout', body: sipfrag(100, 'Trying') },
    };
  }
  if (input.status < 200) {
    return {
      state,
      notify: {
        subscriptionState: formatSubscriptionState({ state: 'active', expiresSec: REFER_SUBSCRIPTION_SEC }),
        body: sipfrag(input.status, input.reason),
      },
    };
  }
  return {
    state: { name: 'terminated', finalStatus: input.status },
    notify: { subscriptionState: 'terminated;reason=noresource', body: sipfrag(input.status, input.reason) },
  };
}

/** RFC 2976 / the de-facto `application/dtmf-relay` body: "Signal=5\r\nDuration=160\r\n". */
export function parseDtmfRelay(body: Buffer | string): { digit: string; durationMs: number | null } | null {
  const text = typeof body === 'string' ? body : body.toString('utf8');
  const code = /^\s*Signal\s*=\s*(?<code>[0-9A-D*#]|1[0-6])\s*$/im.exec(text)?.groups?.code?.toUpperCase();
  if (code === undefined) return null;
  const duration = /^\s*Duration\s*=\s*(?<ms>\d+)\s*$/im.exec(text)?.groups?.ms;
  // Some senders write the event code (10 = *, 11 = #, 12-15 = A-D, 16 = flash, RFC 4733 3.2).
  const digit = /^1[0-6]$/.test(code) ? EVENT_DIGITS.charAt(Number(code)) : code;
  return { digit, durationMs: duration === undefined ? null : Number(duration) };
}

/** The body of an INFO carrying one digit (application/dtmf-relay). */
export function dtmfRelayBody(digit: string, durationMs: number): Buffer {
  return Buffer.from(`Signal=${digit}\r\nDuration=${durationMs}\r\n`);
}

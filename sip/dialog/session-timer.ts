// Session timers (RFC 4028), applied when the peer asks for them: the UAS answers an INVITE's
// Session-Expires (or rejects a too small one with 422 and Min-SE), the refresher re-INVITEs at half
// the interval, and the other side ends the call if no refresh arrives before the session expires.

import type { Headers } from '../message/headers.js';

export const DEFAULT_MIN_SE_SEC = 90; // RFC 4028 4: Min-SE MUST NOT be less than 90 s
export const OPTION_TAG = 'timer'; // RFC 4028 3
export type Refresher = 'uac' | 'uas';

export interface SessionTimer {
  intervalSec: number;
  refresher: Refresher;
}

/** Parse "1800;refresher=uac" (RFC 4028 4). Null when absent or malformed. */
export function parseSessionExpires(
  value: string | undefined,
): { intervalSec: number; refresher: Refresher | null } | null {
  if (value === undefined) return null;
  const m = /^\s*(?<interval>\d+)\s*(?<params>(?:;.*)?)$/.exec(value)?.groups;
  if (m?.interval === undefined) return null;
  const refresher = /;\s*refresher\s*=\s*(?<who>uac|uas)\b/i.exec(m.params ?? '')?.groups?.who;
  return {
    intervalSec: Number(m.interval),
    refresher: refresher === undefined ? null : (refresher.toLowerCase() as Refresher),
  };
}

function supportsTimer(headers: Headers): boolean {
  return [...headers.getAll('Supported'), ...headers.getAll('Require')].some(
    (t) => t.trim().toLowerCase() === OPTION_TAG,
  );
}

export type UasSessionTimerDecision =
  | { kind: 'none' }
  | { kind: 'reject'; minSeSec: number } // 422 Session Interval Too Small, with Min-SE
  | { kind: 'accept'; timer: SessionTimer; responseHeaders: Array<[string, string]> };

/** RFC 4028 9: what the UAS does with an INVITE (or UPDATE) that may carry Session-Expires. */
export function uasSessionTimer(request: Headers, localMinSeSec = DEFAULT_MIN_SE_SEC): UasSessionTimerDecision {
  const se = parseSessionExpires(request.get('Session-Expires'));
  if (se === null) return { kind: 'none' };
  // RFC 4028 9: below our minimum -> 422 with our Min-SE (when the request may be retried).
  if (se.intervalSec < localMinSeSec) return { kind: 'reject', minSeSec: localMinSeSec };
  const uacSupports = supportsTimer(request);
  // RFC 4028 9: keep the UAC's choice; otherwise "uac" if it supports timers, else we refresh.
  const refresher: Refresher = se.refresher ?? (uacSupports ? 'uac' : 'uas');
  const effective: Refresher = uacSupports ? refresher : 'uas';
  const responseHeaders: Array<[string, string]> = [['Session-Expires', `${se.intervalSec};refresher=${effective}`]];
  // RFC 4028 9: Require: timer in the 2xx only when the UAC supports it.
  if (uacSupports) responseHeaders.push(['Require', OPTION_TAG]);
  return { kind: 'accept', timer: { intervalSec: se.intervalSec, refresher: effective }, responseHeaders };
}

/** RFC 4028 7.2: the session timer the UAC learns from a 2xx; null when the answer has none. */
export function uacSessionTimer(response: Headers): SessionTimer | null {
  const se = parseSessionExpires(response.get('Session-Expires'));
  if (se === null) return null;
  return { intervalSec: se.intervalSec, refresher: se.refresher ?? 'uac' };
}

/**
 * RFC 4028 10: the refresher sends a refresh at half the interval; the other side sends BYE when no
 * refresh came by interval - min(32, interval / 3).
 */
export function sessionTimerDeadlineMs(
  timer: SessionTimer,
  role: 'uac' | 'uas',
): { kind: 'refresh' | 'expire'; inMs: number } {
  if (timer.refresher === role) return { kind: 'refresh', inMs: (timer.intervalSec * 1000) / 2 };
  return { kind: 'expire', inMs: (timer.intervalSec - Math.min(32, timer.intervalSec / 3)) * 1000 };
}

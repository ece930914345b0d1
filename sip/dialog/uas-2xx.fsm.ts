// RFC 3261 13.3.1.4: the UAS core retransmits its 2xx to an INVITE until the ACK arrives, with an
// interval starting at T1 and doubling up to T2; after 64*T1 without ACK it gives up and ends the
// dialog with BYE. RFC 6026 moved this out of the transaction: it is the dialog's state machine.

import { ackWaitMs, type TimerValues } from './timers.js';

export type Uas2xxState =
  | { name: 'waiting_ack'; intervalMs: number; elapsedMs: number } // RFC 3261 13.3.1.4
  | { name: 'confirmed' } // ACK received
  | { name: 'ack_timeout' }; // 64*T1 without ACK: send BYE

export type Uas2xxInput = 'ack' | 'timer_2xx_retransmit' | 'timer_2xx_timeout';

export type Uas2xxAction =
  { kind: 'retransmit'; nextMs: number } | { kind: 'stop_timers' } | { kind: 'send_bye' } | { kind: 'none' };

export function initialUas2xx(t: TimerValues): { state: Uas2xxState; retransmitInMs: number; timeoutInMs: number } {
  return {
    state: { name: 'waiting_ack', intervalMs: t.T1, elapsedMs: 0 },
    retransmitInMs: t.T1,
    timeoutInMs: ackWaitMs(t),
  };
}

export function uas2xxTransition(
  state: Uas2xxState,
  input: Uas2xxInput,
  t: TimerValues,
): { state: Uas2xxState; action: Uas2xxAction } {
  if (state.name !== 'waiting_ack') return { state, action: { kind: 'none' } }; // ACK retransmissions, late timers
  switch (input) {
    case 'ack':
      return { state: { name: 'confirmed' }, action: { kind: 'stop_timers' } };
    case 'timer_2xx_retransmit': {
      // RFC 3261 13.3.1.4: the interval doubles until it reaches T2.
      const next = Math.min(state.intervalMs * 2, t.T2);
      return {
        state: { name: 'waiting_ack', intervalMs: next, elapsedMs: state.elapsedMs + state.intervalMs },
        action: { kind: 'retransmit', nextMs: next },
      };
    }
    case 'timer_2xx_timeout':
      return { state: { name: 'ack_timeout' }, action: { kind: 'send_bye' } };
  }
}

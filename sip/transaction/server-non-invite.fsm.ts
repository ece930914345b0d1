// Non-INVITE server transaction state machine: RFC 3261 17.2.2 (Figure 8). Pure.
import type { Step } from './client-invite.fsm.js';

export type ServerNonInviteState = 'trying' | 'proceeding' | 'completed' | 'terminated';

export type ServerNonInviteInput =
  | 'request' // a retransmission of the request
  | 'tu_1xx'
  | 'tu_2xx'
  | 'tu_300_699'
  | 'timer_j'
  | 'transport_error';

export type ServerNonInviteAction =
  { do: 'send_response' } | { do: 'resend_response' } | { do: 'start'; timer: 'J' } | { do: 'transport_failed' };

type S = ServerNonInviteState;
type A = ServerNonInviteAction;

// 17.2.2: a final response: send it, absorb request retransmissions for Timer J.
const toCompleted: Step<S, A> = { next: 'completed', actions: [{ do: 'send_response' }, { do: 'start', timer: 'J' }] };
const failed: Step<S, A> = { next: 'terminated', actions: [{ do: 'transport_failed' }] };

const TABLE: Record<S, Partial<Record<ServerNonInviteInput, Step<S, A>>>> = {
  // RFC 3261 17.2.2: Trying - retransmissions are discarded.
  trying: {
    tu_1xx: { next: 'proceeding', actions: [{ do: 'send_response' }] },
    tu_2xx: toCompleted,
    tu_300_699: toCompleted,
    transport_error: failed,
  },
  // RFC 3261 17.2.2: Proceeding - retransmissions get the last provisional response.
  proceeding: {
    request: { next: 'proceeding', actions: [{ do: 'resend_response' }] },
    tu_1xx: { next: 'proceeding', actions: [{ do: 'send_response' }] },
    tu_2xx: toCompleted,
    tu_300_699: toCompleted,
    transport_error: failed,
  },
  // RFC 3261 17.2.2: Completed - retransmissions get the final response; later TU responses are discarded.
  completed: {
    request: { next: 'completed', actions: [{ do: 'resend_response' }] },
    timer_j: { next: 'terminated', actions: [] },
    transport_error: failed,
  },
  terminated: {},
};

export function serverNonInviteTransition(state: S, input: ServerNonInviteInput): Step<S, A> | null {
  return TABLE[state][input] ?? null;
}

// Non-INVITE client transaction state machine: RFC 3261 17.1.2 (Figure 6). Pure: state x input -> next + actions.
import type { Step } from './client-invite.fsm.js';

export type ClientNonInviteState = 'trying' | 'proceeding' | 'completed' | 'terminated';

export type ClientNonInviteInput =
  'timer_e' | 'timer_f' | 'timer_k' | 'response_1xx' | 'response_2xx' | 'response_300_699' | 'transport_error';

export type ClientNonInviteAction =
  | { do: 'retransmit'; interval: 'backoff' | 'T2' } // resend; E doubles up to T2 (Trying) or is T2 (Proceeding)
  | { do: 'pass_to_tu' }
  | { do: 'start'; timer: 'K' }
  | { do: 'cancel'; timer: 'E' | 'F' }
  | { do: 'timeout' }
  | { do: 'transport_failed' };

type S = ClientNonInviteState;
type A = ClientNonInviteAction;

// 17.1.2.2: any final response: pass it up and absorb retransmissions for Timer K.
const toCompleted: Step<S, A> = {
  next: 'completed',
  actions: [
    { do: 'cancel', timer: 'E' },
    { do: 'cancel', timer: 'F' },
    { do: 'pass_to_tu' },
    { do: 'start', timer: 'K' },
  ],
};
const timedOut: Step<S, A> = { next: 'terminated', actions: [{ do: 'cancel', timer: 'E' }, { do: 'timeout' }] };
const failed: Step<S, A> = {
  next: 'terminated',
  actions: [{ do: 'cancel', timer: 'E' }, { do: 'cancel', timer: 'F' }, { do: 'transport_failed' }],
};

const TABLE: Record<S, Partial<Record<ClientNonInviteInput, Step<S, A>>>> = {
  // RFC 3261 17.1.2.2: Trying.
  trying: {
    timer_e: { next: 'trying', actions: [{ do: 'retransmit', interval: 'backoff' }] },
    timer_f: timedOut,
    response_1xx: { next: 'proceeding', actions: [{ do: 'pass_to_tu' }] },
    response_2xx: toCompleted,
    response_300_699: toCompleted,
    transport_error: failed,
  },
  // RFC 3261 17.1.2.2: Proceeding - Timer E fires every T2.
  proceeding: {
    timer_e: { next: 'proceeding', actions: [{ do: 'retransmit', interval: 'T2' }] },
    timer_f: timedOut,
    response_1xx: { next: 'proceeding', actions: [{ do: 'pass_to_tu' }] },
    response_2xx: toCompleted,
    response_300_699: toCompleted,
    transport_error: failed,
  },
  // RFC 3261 17.1.2.2: Completed - response retransmissions absorbed until Timer K.
  completed: {
    timer_k: { next: 'terminated', actions: [] },
  },
  terminated: {},
};

export function clientNonInviteTransition(state: S, input: ClientNonInviteInput): Step<S, A> | null {
  return TABLE[state][input] ?? null;
}

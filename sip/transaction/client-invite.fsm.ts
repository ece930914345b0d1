// INVITE client transaction state machine: RFC 3261 17.1.1 (Figure 5) as updated by RFC 6026 7.2 (Figure 3:
// the Accepted state, Timer M, 2xx retransmissions passed to the TU). Pure: state x input -> next + actions.

export type ClientInviteState = 'calling' | 'proceeding' | 'completed' | 'accepted' | 'terminated';

export type ClientInviteInput =
  | 'timer_a'
  | 'timer_b'
  | 'timer_d'
  | 'timer_m'
  | 'response_1xx'
  | 'response_2xx'
  | 'response_300_699'
  | 'transport_error';

export type ClientInviteAction =
  | { do: 'retransmit' } // resend the INVITE and back Timer A off
  | { do: 'pass_to_tu' } // hand the response up
  | { do: 'send_ack' } // ACK for the non-2xx final response (17.1.1.3)
  | { do: 'start'; timer: 'B' | 'D' | 'M' }
  | { do: 'cancel'; timer: 'A' | 'B' }
  | { do: 'timeout' } // tell the TU: Timer B fired
  | { do: 'transport_failed' }; // tell the TU: the transport reported an error

export interface Step<S, A> {
  next: S;
  actions: A[];
}

type S = ClientInviteState;
type A = ClientInviteAction;

const toCompleted: Step<S, A> = {
  // 17.1.1.2: a 300-699 response: ACK it, pass it up, wait Timer D for retransmissions.
  next: 'completed',
  actions: [
    { do: 'cancel', timer: 'A' },
    { do: 'cancel', timer: 'B' },
    { do: 'pass_to_tu' },
    { do: 'send_ack' },
    { do: 'start', timer: 'D' },
  ],
};
const toAccepted: Step<S, A> = {
  // RFC 6026 7.2: a 2xx moves to Accepted and starts Timer M; the TU sends the ACK.
  next: 'accepted',
  actions: [
    { do: 'cancel', timer: 'A' },
    { do: 'cancel', timer: 'B' },
    { do: 'pass_to_tu' },
    { do: 'start', timer: 'M' },
  ],
};
const failed: Step<S, A> = {
  next: 'terminated',
  actions: [{ do: 'cancel', timer: 'A' }, { do: 'cancel', timer: 'B' }, { do: 'transport_failed' }],
};

const TABLE: Record<S, Partial<Record<ClientInviteInput, Step<S, A>>>> = {
  // RFC 3261 17.1.1.2: Calling - retransmit on A (UDP), give up on B.
  calling: {
    timer_a: { next: 'calling', actions: [{ do: 'retransmit' }] },
    timer_b: { next: 'terminated', actions: [{ do: 'cancel', timer: 'A' }, { do: 'timeout' }] },
    response_1xx: {
      next: 'proceeding',
      actions: [{ do: 'cancel', timer: 'A' }, { do: 'cancel', timer: 'B' }, { do: 'pass_to_tu' }],
    },
    response_2xx: toAccepted,
    response_300_699: toCompleted,
    transport_error: failed,
  },
  // RFC 3261 17.1.1.2: Proceeding - no retransmissions; provisional responses go up.
  proceeding: {
    response_1xx: { next: 'proceeding', actions: [{ do: 'pass_to_tu' }] },
    response_2xx: toAccepted,
    response_300_699: toCompleted,
    transport_error: failed,
  },
  // RFC 3261 17.1.1.2: Completed - retransmitted final responses are ACKed again, not passed up.
  completed: {
    response_300_699: { next: 'completed', actions: [{ do: 'send_ack' }] },
    timer_d: { next: 'terminated', actions: [] },
    transport_error: { next: 'terminated', actions: [{ do: 'transport_failed' }] },
  },
  // RFC 6026 7.2: Accepted - every 2xx (retransmissions, other forks) goes to the TU until Timer M.
  accepted: {
    response_2xx: { next: 'accepted', actions: [{ do: 'pass_to_tu' }] },
    timer_m: { next: 'terminated', actions: [] },
  },
  terminated: {},
};

/** The step for an input, or null when the state ignores it (the input is absorbed). */
export function clientInviteTransition(state: S, input: ClientInviteInput): Step<S, A> | null {
  return TABLE[state][input] ?? null;
}

// INVITE server transaction state machine: RFC 3261 17.2.1 (Figure 7) as updated by RFC 6026 7.1 (Figure 5:
// the Accepted state and Timer L; 2xx sent by the TU through the transaction). Pure.
import type { Step } from './client-invite.fsm.js';

export type ServerInviteState = 'proceeding' | 'completed' | 'confirmed' | 'accepted' | 'terminated';

export type ServerInviteInput =
  | 'request' // a retransmission of the INVITE
  | 'ack' // an ACK matching this transaction
  | 'tu_1xx'
  | 'tu_2xx'
  | 'tu_300_699' // a response from the TU
  | 'timer_g'
  | 'timer_h'
  | 'timer_i'
  | 'timer_l'
  | 'transport_error';

export type ServerInviteAction =
  | { do: 'send_response' } // send the response the TU just gave
  | { do: 'resend_response' } // resend the last response sent
  | { do: 'retransmit_final' } // resend the final response and back Timer G off
  | { do: 'pass_ack_to_tu' }
  | { do: 'start'; timer: 'G' | 'H' | 'I' | 'L' }
  | { do: 'cancel'; timer: 'G' | 'H' }
  | { do: 'timeout' } // tell the TU: Timer H fired, no ACK came
  | { do: 'transport_failed' };

type S = ServerInviteState;
type A = ServerInviteAction;

const failed: Step<S, A> = {
  next: 'terminated',
  actions: [{ do: 'cancel', timer: 'G' }, { do: 'cancel', timer: 'H' }, { do: 'transport_failed' }],
};

const TABLE: Record<S, Partial<Record<ServerInviteInput, Step<S, A>>>> = {
  // RFC 3261 17.2.1: Proceeding - retransmitted INVITEs get the last provisional response again.
  proceeding: {
    request: { next: 'proceeding', actions: [{ do: 'resend_response' }] },
    tu_1xx: { next: 'proceeding', actions: [{ do: 'send_response' }] },
    // RFC 6026 7.1: a 2xx moves to Accepted with Timer L (the TU retransmits the 2xx itself).
    tu_2xx: { next: 'accepted', actions: [{ do: 'send_response' }, { do: 'start', timer: 'L' }] },
    // 17.2.1: 300-699: Completed, Timer G (unreliable only) and Timer H.
    tu_300_699: {
      next: 'completed',
      actions: [{ do: 'send_response' }, { do: 'start', timer: 'G' }, { do: 'start', timer: 'H' }],
    },
    transport_error: failed,
  },
  // RFC 3261 17.2.1: Completed - resend the final response on G and on every retransmitted INVITE until ACK.
  completed: {
    request: { next: 'completed', actions: [{ do: 'resend_response' }] },
    timer_g: { next: 'completed', actions: [{ do: 'retransmit_final' }] },
    ack: {
      next: 'confirmed',
      actions: [
        { do: 'cancel', timer: 'G' },
        { do: 'cancel', timer: 'H' },
        { do: 'start', timer: 'I' },
      ],
    },
    timer_h: { next: 'terminated', actions: [{ do: 'cancel', timer: 'G' }, { do: 'timeout' }] },
    transport_error: failed,
  },
  // RFC 3261 17.2.1: Confirmed - absorb ACK retransmissions until Timer I.
  confirmed: {
    timer_i: { next: 'terminated', actions: [] },
  },
  // RFC 6026 7.1: Accepted - absorb INVITE retransmissions, send the TU's 2xx retransmissions, ACK goes up.
  accepted: {
    tu_2xx: { next: 'accepted', actions: [{ do: 'send_response' }] },
    ack: { next: 'accepted', actions: [{ do: 'pass_ack_to_tu' }] },
    timer_l: { next: 'terminated', actions: [] },
  },
  terminated: {},
};

export function serverInviteTransition(state: S, input: ServerInviteInput): Step<S, A> | null {
  return TABLE[state][input] ?? null;
}

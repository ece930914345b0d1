// The INVITE usage of a dialog as an explicit state machine (RFC 3261 12-15, RFC 6026): at most one
// INVITE transaction each way at a time, the ACK of our 2xx awaited, BYE or a lost ACK ending it.

export type DialogFsmState =
  | 'confirmed' // RFC 3261 12: established, no INVITE pending
  | 'awaiting_ack' // RFC 3261 13.3.1.4: we sent a 2xx to an INVITE and retransmit it until the ACK
  | 'reinvite_sent' // RFC 3261 14.1: our re-INVITE is pending
  | 'terminated'; // RFC 3261 15: BYE sent or received, or no ACK after 64*T1

export type DialogInput =
  | 'sent_2xx' // we answered an INVITE (initial or re-INVITE) with a 2xx
  | 'ack' // the ACK of that 2xx
  | 'ack_timeout' // 64*T1 without it
  | 'send_reinvite'
  | 'reinvite_done' // our re-INVITE got its final response
  | 'receive_reinvite'
  | 'bye';

/** What the caller does with the input: go ahead, or refuse the request with 491 / 481. */
export type DialogVerdict = 'ok' | 'reject_491' | 'reject_481' | 'ignore';

export function dialogTransition(
  state: DialogFsmState,
  input: DialogInput,
): { next: DialogFsmState; verdict: DialogVerdict } {
  if (state === 'terminated') {
    // RFC 3261 15.1.2: after BYE, requests on the dialog get 481; late ACKs and timers do nothing.
    return {
      next: state,
      verdict: input === 'send_reinvite' || input === 'receive_reinvite' ? 'reject_481' : 'ignore',
    };
  }
  switch (input) {
    case 'bye':
      return { next: 'terminated', verdict: 'ok' };
    case 'ack_timeout':
      return state === 'awaiting_ack' ? { next: 'terminated', verdict: 'ok' } : { next: state, verdict: 'ignore' };
    case 'sent_2xx':
      return { next: 'awaiting_ack', verdict: 'ok' };
    case 'ack':
      return state === 'awaiting_ack' ? { next: 'confirmed', verdict: 'ok' } : { next: state, verdict: 'ignore' };
    case 'send_reinvite':
    case 'receive_reinvite':
      // RFC 3261 14.1 / 14.2: an INVITE while another is pending on the dialog is refused with 491.
      if (state !== 'confirmed') return { next: state, verdict: 'reject_491' };
      return { next: input === 'send_reinvite' ? 'reinvite_sent' : 'confirmed', verdict: 'ok' };
    case 'reinvite_done':
      return state === 'reinvite_sent' ? { next: 'confirmed', verdict: 'ok' } : { next: state, verdict: 'ignore' };
  }
}

// A call's life in its media worker: assigned (ports bound, no conversation) -> live (answered: media flows, the
// conversation runs) -> ending (the conversation is ending and saving its record; nothing more is sent) -> closed
// (ports closed, main told). A hang-up before the answer goes from assigned straight to closed. One transition
// function; an input not listed for a state is refused (a late or repeated message, ignored by the caller).

export type CallState = 'assigned' | 'live' | 'ending' | 'closed';

export type CallInput =
  | 'start' // call_start: the call is answered
  | 'hangup' // call_hangup before the answer: no conversation to end
  | 'end' // the worker ends the conversation (hang-up, RTP inactivity, shutdown)
  | 'ended'; // the conversation ended (any cause) and its record is saved

const TABLE: Record<CallState, Partial<Record<CallInput, CallState>>> = {
  assigned: { start: 'live', hangup: 'closed' },
  live: { end: 'ending', ended: 'closed' },
  ending: { ended: 'closed' },
  closed: {},
};

/** The next state, or null when `input` does not apply in `state`. */
export function transition(state: CallState, input: CallInput): CallState | null {
  return TABLE[state][input] ?? null;
}

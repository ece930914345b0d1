// The life of a call as main sees it (its signalling side; the media worker has its own): one state type, one
// transition function. main tells the worker about the call (call_assigned, call_start, call_hangup) and the worker
// answers (call_media_ready, call_ended); the states say which of them the call is between.
//
//   setting_up --media_ready--> held --start--> live
//   setting_up --abandon--> ended                  (the worker never took it: refused, timed out, no port)
//   held | live --hangup--> ending --worker_ended--> ended
//   held | live --worker_ended--> ended            (the worker ended it: its conversation ended, RTP timed out)
//   held --reassign--> reassigning --worker_ended--> setting_up   (an outbound answer chose another codec)
//   any but ended --worker_lost--> ended

export type SipCallState = 'setting_up' | 'held' | 'live' | 'ending' | 'reassigning' | 'ended';
export type SipCallInput = 'media_ready' | 'abandon' | 'start' | 'hangup' | 'reassign' | 'worker_ended' | 'worker_lost';

const TRANSITIONS: Record<SipCallState, Partial<Record<SipCallInput, SipCallState>>> = {
  setting_up: { media_ready: 'held', abandon: 'ended', worker_lost: 'ended' },
  held: { start: 'live', hangup: 'ending', reassign: 'reassigning', worker_ended: 'ended', worker_lost: 'ended' },
  live: { hangup: 'ending', worker_ended: 'ended', worker_lost: 'ended' },
  ending: { worker_ended: 'ended', worker_lost: 'ended' },
  reassigning: { worker_ended: 'setting_up', worker_lost: 'ended' },
  ended: {},
};

/** The next state, or null when the input does not apply in `state` (it is then ignored). */
export function sipCallTransition(state: SipCallState, input: SipCallInput): SipCallState | null {
  return TRANSITIONS[state][input] ?? null;
}

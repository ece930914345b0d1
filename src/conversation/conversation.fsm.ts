// The conversation's lifecycle: created -> configuring (configuration endpoint) -> ready (engine open, welcome
// queued) -> active (first audio exchanged) -> ending (the record being saved; from any state before) -> ended.
// One transition function; any input not listed for a state is refused (the caller treats it as a bug or a late
// event to ignore).

export type ConversationState = 'created' | 'configuring' | 'ready' | 'active' | 'ending' | 'ended';

export type ConversationInput =
  | 'configure' // settings resolved enough to call the configuration endpoint (or skip it)
  | 'configured' // settings final, engine opened
  | 'activity' // first audio either way
  | 'end' // any cause: the record is being saved
  | 'saved'; // the record is saved, resources freed

const TABLE: Record<ConversationState, Partial<Record<ConversationInput, ConversationState>>> = {
  created: { configure: 'configuring', end: 'ending' },
  configuring: { configured: 'ready', end: 'ending' },
  ready: { activity: 'active', end: 'ending' },
  active: { activity: 'active', end: 'ending' },
  ending: { saved: 'ended' },
  ended: {},
};

/** The next state, or null when `input` does not apply in `state`. */
export function transition(state: ConversationState, input: ConversationInput): ConversationState | null {
  return TABLE[state][input] ?? null;
}

export function isLive(state: ConversationState): boolean {
  return state === 'ready' || state === 'active';
}

// The inactivity timers of a live conversation (issue 4): websocket_timeout_sec (no client message or audio for that
// long: the client is gone), no_input_poke_sec (the assistant checks on a silent user), no_input_end_conversation_sec
// (the conversation ends with assistant_silence_limit_reached). Poke and end run while nobody speaks: armed when the
// assistant has finished (or had nothing to say first), cancelled when the user starts. One owner clears them all.
import type { ConversationTimers } from './host.js';
import type { LiveSettings } from './settings.js';
import { ownedTimer, slidingTimer, type OwnedTimer } from './timer.js';

const MS_PER_SEC = 1000;

export type SilenceSettings = Pick<LiveSettings, 'websocket_timeout_sec' | 'no_input_poke_sec' | 'no_input_end_conversation_sec'>;

export interface SilenceActions {
  /** websocket_timeout_sec passed without client input. */
  clientIdle(): void;
  /** no_input_poke_sec passed in silence. */
  poke(): void;
  /** no_input_end_conversation_sec passed in silence. */
  silenceLimit(): void;
}

/** Before the settings are final: every timer disabled. */
const DISABLED: SilenceSettings = { websocket_timeout_sec: 0, no_input_poke_sec: null, no_input_end_conversation_sec: 0 };
const NO_ACTIONS: SilenceActions = { clientIdle: () => undefined, poke: () => undefined, silenceLimit: () => undefined };

export class SilenceTimers {
  private readonly idle: OwnedTimer;
  private readonly pokeTimer: OwnedTimer;
  private readonly limit: OwnedTimer;

  static disabled(timers: ConversationTimers): SilenceTimers {
    return new SilenceTimers(timers, DISABLED, NO_ACTIONS);
  }

  constructor(timers: ConversationTimers, s: SilenceSettings, actions: SilenceActions) {
    // Re-armed by every audio frame: a sliding deadline, not a clear and a set per frame.
    this.idle = slidingTimer(timers, s.websocket_timeout_sec * MS_PER_SEC, () => actions.clientIdle());
    this.pokeTimer = ownedTimer(timers, s.no_input_poke_sec === null ? null : s.no_input_poke_sec * MS_PER_SEC, () => actions.poke());
    this.limit = ownedTimer(timers, s.no_input_end_conversation_sec * MS_PER_SEC, () => actions.silenceLimit());
  }

  /** A client message or audio arrived: the idle timeout starts over. */
  clientActive(): void {
    this.idle.start();
  }

  /** The user started speaking: no poke, no silence limit. */
  userSpeaking(): void {
    this.pokeTimer.cancel();
    this.limit.cancel();
  }

  /** Nobody speaks now: poke and silence limit count from here. */
  nobodySpeaking(): void {
    this.pokeTimer.start();
    this.limit.start();
  }

  cancel(): void {
    this.idle.cancel();
    this.pokeTimer.cancel();
    this.limit.cancel();
  }
}

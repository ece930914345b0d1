// The inactivity timers of a live conversation: websocket_timeout_sec (no client message or audio for that long:
// the client is gone), no_input_poke_sec (the assistant checks on a silent user), no_input_end_conversation_sec
// (the conversation ends with assistant_silence_limit_reached). Poke and end run while nobody speaks: armed when the
// assistant has finished (or had nothing to say first), cancelled when the user starts. One owner clears them all.
// A transfer to another agent gives them its durations (retime).
import type { ConversationTimers } from './host.js';
import type { LiveSettings } from './settings.js';
import { ownedTimer, slidingTimer, type OwnedTimer } from './timer.js';

const MS_PER_SEC = 1000;

export type SilenceSettings = Pick<
  LiveSettings,
  'websocket_timeout_sec' | 'no_input_poke_sec' | 'no_input_end_conversation_sec'
>;

export interface SilenceActions {
  /** websocket_timeout_sec passed without client input. */
  clientIdle(): void;
  /** no_input_poke_sec passed in silence. */
  poke(): void;
  /** no_input_end_conversation_sec passed in silence. */
  silenceLimit(): void;
}

/** Before the settings are final: every timer disabled. */
const DISABLED: SilenceSettings = {
  websocket_timeout_sec: 0,
  no_input_poke_sec: null,
  no_input_end_conversation_sec: 0,
};
const NO_ACTIONS: SilenceActions = {
  clientIdle: () => undefined,
  poke: () => undefined,
  silenceLimit: () => undefined,
};

const secToMs = (sec: number | null): number | null => (sec === null ? null : sec * MS_PER_SEC);
/** ownedTimer's rule: null or <= 0 is disabled. */
const enabled = (sec: number | null): boolean => sec !== null && sec > 0;

export class SilenceTimers {
  private idle!: OwnedTimer;
  private pokeTimer!: OwnedTimer;
  private limit!: OwnedTimer;
  /** A copy: the live settings change in place on a transfer, before retime sees them. */
  private settings!: SilenceSettings;
  /** The client is watched for idleness (from its first activity until cancel). */
  private watching = false;
  /** Nobody speaks (from nobodySpeaking until the user starts or cancel). */
  private silent = false;
  /** Held (a phone transfer under way): nothing counts until resume. */
  private suspended = false;

  static disabled(timers: ConversationTimers): SilenceTimers {
    return new SilenceTimers(timers, DISABLED, NO_ACTIONS);
  }

  constructor(
    private readonly timers: ConversationTimers,
    s: SilenceSettings,
    private readonly actions: SilenceActions,
  ) {
    this.build(s);
  }

  private build(s: SilenceSettings): void {
    const { timers, actions } = this;
    this.settings = {
      websocket_timeout_sec: s.websocket_timeout_sec,
      no_input_poke_sec: s.no_input_poke_sec,
      no_input_end_conversation_sec: s.no_input_end_conversation_sec,
    };
    // Re-armed by every audio frame: a sliding deadline, not a clear and a set per frame.
    this.idle = slidingTimer(timers, secToMs(s.websocket_timeout_sec), () => actions.clientIdle());
    this.pokeTimer = ownedTimer(timers, secToMs(s.no_input_poke_sec), () => actions.poke());
    this.limit = ownedTimer(timers, secToMs(s.no_input_end_conversation_sec), () => actions.silenceLimit());
  }

  /** A client message or audio arrived: the idle timeout starts over. */
  clientActive(): void {
    if (this.suspended) return;
    this.watching = true;
    this.idle.start();
  }

  /** The user started speaking: no poke, no silence limit. */
  userSpeaking(): void {
    this.silent = false;
    this.pokeTimer.cancel();
    this.limit.cancel();
  }

  /** Nobody speaks now: poke and silence limit count from here. */
  nobodySpeaking(): void {
    if (this.suspended) return;
    this.silent = true;
    this.pokeTimer.start();
    this.limit.start();
  }

  /**
   * New durations (a transfer to another agent). A timer that is counting starts over from now with its new
   * duration: the new agent's limits count from when it takes over, so a shorter one never fires at the moment of
   * the transfer (before the new agent has said a word) on account of silence under the old agent's rules, and a
   * longer one gives its full time. A timer the old settings disabled starts from now if it would be counting (the
   * client is watched; nobody speaks); one that fired already in this silence (the poke) does not fire again; one
   * the new settings disable stops. After cancel, nothing starts.
   */
  retime(s: SilenceSettings): void {
    const old = this.settings;
    const idle = this.idle.armed || (this.watching && !enabled(old.websocket_timeout_sec));
    const poke = this.pokeTimer.armed || (this.silent && !enabled(old.no_input_poke_sec));
    const limit = this.limit.armed || (this.silent && !enabled(old.no_input_end_conversation_sec));
    this.idle.cancel();
    this.pokeTimer.cancel();
    this.limit.cancel();
    this.build(s);
    if (idle) this.idle.start();
    if (poke) this.pokeTimer.start();
    if (limit) this.limit.start();
  }

  /**
   * A phone transfer takes the caller away from the agent (a bridge, a REFER under way): every timer stops, and
   * none starts, until resume.
   */
  suspend(): void {
    this.cancel();
    this.suspended = true;
  }

  /** The caller is back with the agent: the idle timeout and the silence count start from now. */
  resume(): void {
    if (!this.suspended) return;
    this.suspended = false;
    this.clientActive();
    this.nobodySpeaking();
  }

  cancel(): void {
    this.watching = false;
    this.silent = false;
    this.idle.cancel();
    this.pokeTimer.cancel();
    this.limit.cancel();
  }
}

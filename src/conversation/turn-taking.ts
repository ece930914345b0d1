// The user's turns (docs/ARCHITECTURE.md, "Media pipeline"): the VAD starts and ends a turn; the user's audio reaches
// the engine only inside one. Barge-in when the user starts over interruptible assistant speech (at once, or once
// min_words_to_interrupt words are heard when the engine transcribes live); push-to-talk through mute (releasing the
// button ends the turn, otherwise a muted turn is dropped); a backchannel during long user speech when enabled. Emits
// user_started_speaking, user_finished_speaking and input_cancelled.
import type { SpeechEngineSession } from '../engines/engine.js';
import { VAD_SPEECH_END, VAD_SPEECH_START, type Vad, type VadOptions } from '../media/native/vad.js';
import type { ServerEvent } from '../schemas/sts.js';
import type { ConversationTimers } from './host.js';
import type { TurnEnd } from './latency.js';
import type { ConversationRecord } from './record.js';
import type { LiveSettings } from './settings.js';
import type { SilenceTimers } from './silence-timers.js';
import type { Utterance } from './utterance.js';

/** Backchannel: user speech between two acknowledgements, from aggressiveness 1 (shortest) to 0 (longest). */
const BACKCHANNEL_MIN_INTERVAL_MS = 2000;
const BACKCHANNEL_MAX_INTERVAL_MS = 8000;
export const BACKCHANNEL_TEXT = 'Mm-hmm.';
const MS_PER_SEC = 1000;

interface UserTurn {
  startedAtMs: number;
  transcript: string;
  words: number;
  /** Barge-in waits for min_words_to_interrupt words of this turn. */
  bargeInPending: Utterance | null;
  /** User samples heard since the last backchannel (or the turn's start). */
  sinceBackchannel: number;
}

/** What turn-taking needs of the assistant's side. */
export interface TurnAssistant {
  /** The assistant utterance queued or playing now, if any. */
  speaking(): Utterance | null;
  /** Speaks a short acknowledgement that the user cannot interrupt. */
  backchannel(text: string): void;
}

export interface TurnTakingOptions {
  session: SpeechEngineSession;
  vad: Vad;
  /** The conversation's settings (the live object: a transfer to another agent changes them in place). */
  settings: LiveSettings;
  timers: ConversationTimers;
  record: ConversationRecord;
  silence: SilenceTimers;
  assistant: TurnAssistant;
  emit(event: ServerEvent): void;
  /** The user started a turn (after the record and the silence timers have been told). */
  userStarted(): void;
}

export class TurnTaking {
  private turn: UserTurn | null = null;
  private muted = false;
  /** Samples fed to the VAD since the last reset (the VAD counts voiced samples on the same scale). */
  private samplesFed = 0;
  /** The end of the last user turn still waiting for its answer (latency). */
  private unanswered: TurnEnd | null = null;
  /** The VAD's prebuffer (speech before the start decision), read at each turn's start. */
  private prebuffer: Int16Array;

  /** o.session and o.settings, read per frame from here rather than through o (one object less to load). */
  private readonly session: SpeechEngineSession;
  private readonly settings: LiveSettings;

  constructor(private readonly o: TurnTakingOptions) {
    this.prebuffer = new Int16Array(o.vad.prebufferCapacity);
    this.session = o.session;
    this.settings = o.settings;
  }

  /** The user is in a turn now. */
  get userSpeaking(): boolean {
    return this.turn !== null;
  }

  get isMuted(): boolean {
    return this.muted;
  }

  /** A frame of user audio at the engine's rate, after the VAD has seen it. */
  frame(pcm: Int16Array): void {
    this.samplesFed += pcm.length;
    // === null, not !this.turn: the truthiness test of an object loads its map, i.e. the (cold) turn object.
    if (this.turn === null) return;
    this.session.appendAudio(pcm);
    this.backchannel(this.turn, pcm.length);
  }

  /** VAD events of the last frame. */
  vad(events: number): void {
    if (events & VAD_SPEECH_START) this.started();
    if (events & VAD_SPEECH_END && this.turn) this.ended(this.lastVoicedEnd());
  }

  /** The engine's live transcript of the current turn: counts words for min_words_to_interrupt. */
  heard(text: string): void {
    const turn = this.turn;
    if (!turn) return;
    const trimmed = text.trim();
    turn.transcript = text;
    turn.words = trimmed ? trimmed.split(/\s+/).length : 0;
    const pending = turn.bargeInPending;
    if (pending && turn.words >= this.settings.min_words_to_interrupt) {
      turn.bargeInPending = null;
      // A call that cannot be interrupted may have started since the turn did: then the turn goes on as any other.
      if (pending.interruptible) this.bargeIn(pending);
    }
  }

  mute(): void {
    this.muted = true;
    if (!this.turn) return;
    // Push-to-talk: releasing the button (mute) ends the turn; otherwise a muted turn is dropped.
    if (this.settings.push_to_talk) this.ended(this.lastVoicedEnd());
    else this.drop();
    this.o.vad.reset();
    this.samplesFed = 0;
  }

  unmute(): void {
    this.muted = false;
  }

  /**
   * A transfer to another agent: its vad_* settings for the running VAD (what it has learnt kept; a turn under way
   * goes on and ends by the new min silence, counted from its last voiced step). Not per frame: the prebuffer
   * array follows the VAD's new capacity here.
   */
  setVadOptions(options: VadOptions): void {
    const vad = this.o.vad;
    vad.setOptions(options);
    if (vad.prebufferCapacity !== this.prebuffer.length) this.prebuffer = new Int16Array(vad.prebufferCapacity);
  }

  /** `reset`: a turn in progress is dropped and the VAD starts over. */
  reset(): void {
    if (this.turn) this.drop();
    this.o.vad.reset();
  }

  /**
   * The conversation ends (a hang-up, say) with the user mid-turn: the turn is recorded as it stands (what was heard
   * of it, lasting until now) and left unanswered, so nothing the user said is lost from the record.
   */
  endUnanswered(): void {
    const turn = this.turn;
    if (turn === null) return;
    this.turn = null;
    this.o.record.flushUserItem();
    this.o.record.holdUserItem({
      role: 'user',
      live_transcript: turn.transcript || null,
      duration_ms: Math.max(0, this.o.timers.now() - turn.startedAtMs),
      started_at: new Date(turn.startedAtMs),
    });
  }

  /** The end of the user turn the assistant is answering now, once (for analysis.latencies_ms). */
  takeUnanswered(): TurnEnd | null {
    const end = this.unanswered;
    this.unanswered = null;
    return end;
  }

  private started(): void {
    const { session, vad, settings } = this.o;
    this.o.record.flushUserItem();
    this.o.silence.userSpeaking();
    this.o.userStarted();
    const turn: UserTurn = {
      startedAtMs: this.o.timers.now(),
      transcript: '',
      words: 0,
      bargeInPending: null,
      sinceBackchannel: 0,
    };
    this.turn = turn;
    this.o.emit({ type: 'user_started_speaking' });
    const n = vad.readPrebuffer(this.prebuffer);
    if (n > 0) session.appendAudio(this.prebuffer.subarray(0, n));
    const speaking = this.o.assistant.speaking();
    if (!speaking || !speaking.interruptible) return;
    if (settings.min_words_to_interrupt > 1 && session.transcribesLive) turn.bargeInPending = speaking;
    else this.bargeIn(speaking);
  }

  private bargeIn(u: Utterance): void {
    if (u.interrupt()) this.o.record.countInterruption();
  }

  private ended(end: TurnEnd): void {
    const turn = this.turn!;
    const { session } = this.o;
    this.turn = null;
    this.o.emit({ type: 'user_finished_speaking' });
    if (turn.bargeInPending && turn.bargeInPending.isActive) {
      // Fewer words than min_words_to_interrupt: the assistant goes on; the user's turn is dropped.
      session.clearUserTurn();
      this.o.emit({ type: 'input_cancelled' });
      return;
    }
    this.unanswered = end;
    this.o.record.holdUserItem({
      role: 'user',
      live_transcript: turn.transcript || null,
      duration_ms: Math.max(0, end.reportedAtMs - turn.startedAtMs),
      started_at: new Date(turn.startedAtMs),
    });
    // Listen-only: transcribed, not answered.
    session.commitUserTurn(!this.settings.listen_only_inbound_enabled);
  }

  private drop(): void {
    this.turn = null;
    this.session.clearUserTurn();
    this.o.emit({ type: 'input_cancelled' });
  }

  /** enable_assistant_backchannel: a short acknowledgement, uninterruptible, during long user speech. */
  private backchannel(turn: UserTurn, samples: number): void {
    const s = this.settings;
    if (!s.enable_assistant_backchannel) return;
    turn.sinceBackchannel += samples;
    const a = s.assistant_backchannel_aggressiveness;
    const intervalMs = BACKCHANNEL_MAX_INTERVAL_MS - a * (BACKCHANNEL_MAX_INTERVAL_MS - BACKCHANNEL_MIN_INTERVAL_MS);
    if ((turn.sinceBackchannel * MS_PER_SEC) / this.session.sampleRate < intervalMs || this.o.assistant.speaking())
      return;
    turn.sinceBackchannel = 0;
    this.o.assistant.backchannel(BACKCHANNEL_TEXT);
  }

  private lastVoicedEnd(): TurnEnd {
    const vad = this.o.vad;
    return {
      reportedAtMs: this.o.timers.now(),
      samplesFed: this.samplesFed,
      lastVoicedSample: vad.lastVoicedSample < 0 ? this.samplesFed : vad.lastVoicedSample,
      sampleRate: vad.rateHz,
    };
  }
}

// One assistant utterance (a welcome message, a reply, a `say`, a poke): from the engine's response id until its
// audio has played out or it was interrupted. Its text is kept with the audio position it belongs to, so an
// interrupted utterance is truncated to what was actually played. `interrupt()` is safe to call twice. It carries
// the voice and speed it was heard with (AssistantSpeech sets them), so its item records those, not the ones in
// force when the item is written (a transfer to another agent may have changed them meanwhile). Waiters (a tool call
// waiting for the speech before it) are woken as it plays and when it stops.
import type { ResponseId } from '../engines/engine.js';
import type { NewToolCall } from '../store/conversations.js';

export type UtteranceKind = 'welcome' | 'reply' | 'say' | 'poke' | 'backchannel';
export type UtteranceState = 'queued' | 'speaking' | 'finished' | 'interrupted';

/** How an utterance sounds, as AssistantSpeech sees it when the utterance starts. */
export interface UtteranceVoice {
  /** The catalog voice the session speaks with. */
  voiceId: string;
  /** The audio_speed of the playout in force. */
  audioSpeed: number;
  /** How many voice changes had been asked of the engine (AssistantSpeech.voiceChangeAsked). */
  voiceAsks: number;
}

/** Barge-in held off while a tool call that cannot be interrupted runs (AssistantSpeech.holdBargeIn): shared. */
export interface BargeInGuard {
  holds: number;
}

/** Waits for an utterance to have played up to `mark` samples (or to stop). */
interface PlayWaiter {
  mark: number;
  resolve(): void;
}

export class Utterance {
  state: UtteranceState = 'queued';
  /** The engine finished generating it (onResponseDone). */
  generated = false;
  /** Samples (engine rate, after time-stretch) queued for playout and played so far. */
  queuedSamples = 0;
  playedSamples = 0;
  startedAtMs: number | null = null;
  firstFrameAtMs: number | null = null;
  readonly toolCalls: NewToolCall[] = [];
  /** Tool calls still running; the item is written once they settle. */
  readonly pendingTools = new Set<Promise<void>>();
  /** The assistant chose not to respond, or its speech was suppressed by a tool call (dropped unheard). */
  silenced = false;
  /** A response that may speak but call no tool (ResponseOptions.speechOnly): a call it makes is not executed. */
  speechOnly = false;
  /**
   * It said nothing, and its tool calls wait for (and are recorded on) a line spoken before them: it leaves no item
   * of its own unless it still holds a call or text.
   */
  callsAfterLine = false;
  /** Waiting for its playout (AssistantSpeech.untilPlayed); null when none. */
  waiters: PlayWaiter[] | null = null;
  /**
   * The catalog voice it is spoken with: the session's when its response started (an engine keeps a response's
   * voice to its end), checked again at its first audio unless a voice change was asked since (an engine that went
   * back on a change before this audio, as openai-realtime does on cannot_update_voice, reports the voice it kept).
   */
  voiceId: string;
  /** The audio_speed it plays at: the playout's that took its first audio. */
  audioSpeed: number;
  /** Voice changes asked of the engine before it started (see voiceId). */
  readonly voiceAsks: number;
  private readonly texts: { at: number; text: string }[] = [];
  private textSent = 0;

  constructor(
    readonly responseId: ResponseId,
    readonly kind: UtteranceKind,
    /** Whether the user may interrupt it (is_welcome_message_interruptible, `say`'s interruptible, ...). */
    private readonly ownInterruptible: boolean,
    voice: UtteranceVoice,
    private readonly onInterrupt: (u: Utterance) => void,
    private readonly guard: BargeInGuard,
  ) {
    this.voiceId = voice.voiceId;
    this.audioSpeed = voice.audioSpeed;
    this.voiceAsks = voice.voiceAsks;
  }

  /** Whether the user may interrupt it now: its own setting, unless a call that cannot be interrupted is running. */
  get interruptible(): boolean {
    return this.ownInterruptible && this.guard.holds === 0;
  }

  /** It has said something: text or audio from the engine. */
  get hasSpeech(): boolean {
    return this.queuedSamples > 0 || this.texts.some((t) => t.text !== '');
  }

  addText(delta: string): void {
    this.texts.push({ at: this.queuedSamples, text: delta });
  }

  /** Text to send with a frame that plays samples up to `end` (each delta is sent once). */
  takeTextUpTo(end: number): string {
    let out = '';
    while (this.textSent < this.texts.length && this.texts[this.textSent].at < end)
      out += this.texts[this.textSent++].text;
    return out;
  }

  get fullText(): string {
    return this.texts.map((t) => t.text).join('');
  }

  /** The text whose audio started playing (the whole text when it played out). */
  get playedText(): string {
    if (this.state !== 'interrupted' && !this.silenced) return this.fullText;
    return this.texts
      .filter((t) => t.at < this.playedSamples)
      .map((t) => t.text)
      .join('');
  }

  get isActive(): boolean {
    return this.state === 'queued' || this.state === 'speaking';
  }

  /** Stops it: returns true the first time, false when it had already stopped (finished or interrupted). */
  interrupt(): boolean {
    if (!this.isActive) return false;
    this.state = 'interrupted';
    this.onInterrupt(this);
    return true;
  }
}

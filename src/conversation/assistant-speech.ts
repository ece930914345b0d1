// The assistant's side of a live conversation: one Utterance per engine response (welcome, reply, say,
// poke, backchannel), its audio through the playout on the pacing clock, and how each one stops: played out,
// interrupted (barge-in: its queued audio dropped at once and the engine told how much was heard) or silenced (the
// assistant chose not to respond). Emits assistant_started_speaking / assistant_finished_speaking. A transfer to
// another agent retunes audio_speed and background noise: a new playout takes over once nothing is playing, so no
// utterance changes speed halfway. Each utterance keeps the voice and speed it was heard with, for its item. For the
// tool rules (tool-host.ts): barge-in held off while a call that cannot be interrupted runs, waits for an
// utterance's playout, and the engine's next response marked speech only.
import type { ResponseId, SpeechEngineSession } from '../engines/engine.js';
import type { ServerEvent } from '../schemas/sts.js';
import type { ConversationTimers } from './host.js';
import { Playout, type PlayoutOptions } from './playout.js';
import { Utterance, type BargeInGuard, type UtteranceKind } from './utterance.js';

const MS_PER_SEC = 1000;
/**
 * Utterances tracked per conversation beyond which the oldest ended ones (not queued or speaking, no tool call
 * running) are forgotten. Kept: late engine events for a response that just ended (a cancelled response's audio
 * deltas in flight, a tool call read with its response's end) still find it. Why a bound: speaking() and retune
 * scan the map per frame, so it must not grow with the call.
 */
export const MAX_TRACKED_UTTERANCES = 32;

/** What the assistant's speech needs of its conversation. */
export interface SpeechHost {
  emit(event: ServerEvent): void;
  session(): SpeechEngineSession | null;
  /**
   * audio_speed in force, for utterances tracked before attach() (an engine may speak while open() is under way:
   * test/conversation/speech-before-attach.test.ts); after it, the playout's speed is used.
   */
  audioSpeed(): number;
  /** The catalog voice the session speaks with now (the engine's report, else the one it was asked for). */
  voiceId(): string;
  /** One frame to the client (and the recording and observers); false: the client is backed up, offer it again. */
  sendFrame(pcm: Int16Array, encoded: Uint8Array, text: string): boolean;
  /** `u`'s first frame is about to go out. */
  started(u: Utterance, atMs: number): void;
  /** `u` was interrupted (before `stopped`). */
  interrupted(u: Utterance): void;
  /** `u` stopped (played out, interrupted or silenced): its item is due. */
  stopped(u: Utterance): void;
  /** `u` played to its end (after `stopped`). */
  finished(u: Utterance): void;
}

export type SpeechPlayoutOptions = Omit<PlayoutOptions<Utterance>, 'sink'>;

export class AssistantSpeech {
  private readonly utterances = new Map<ResponseId, Utterance>();
  private playout: Playout<Utterance> | null = null;
  /** The options of the playout in force. */
  private options: SpeechPlayoutOptions | null = null;
  /** Options waiting for the playout to fall quiet (retune), then a new playout runs with them. */
  private nextOptions: SpeechPlayoutOptions | null = null;
  /** Voice changes asked of the engine so far (an utterance started before one keeps its voice). */
  private voiceAsks = 0;
  /** Shared by every utterance: while held, none can be interrupted by the user. */
  private readonly guard: BargeInGuard = { holds: 0 };
  /** The next response the engine starts on its own (the reply to a tool output) is speech only. */
  private speechOnlyNext = false;

  constructor(
    private readonly host: SpeechHost,
    private readonly timers: ConversationTimers,
  ) {}

  /** The engine is open: audio goes out through a playout at its rate. */
  attach(options: SpeechPlayoutOptions): void {
    this.options = options;
    this.playout?.destroy(); // a playout replaced gives its queued blocks back to the pool
    this.playout = new Playout<Utterance>({
      ...options,
      sink: {
        frame: (u, pcm, encoded, playedEnd) => this.frame(u, pcm, encoded, playedEnd),
        drained: (u) => this.drained(u),
      },
    });
  }

  /**
   * Another speed or background noise (a transfer to another agent): the utterance that next starts on a quiet
   * playout, and every one after it, plays with them; what is queued or playing now keeps its own.
   */
  retune(change: Pick<SpeechPlayoutOptions, 'speed' | 'noise'>): void {
    if (!this.options) return;
    const same = change.speed === this.options.speed && sameNoise(change.noise, this.options.noise);
    this.nextOptions = same ? null : { ...this.options, ...change };
  }

  /**
   * The engine was asked for another voice (a transfer to another agent), to speak with from its next response:
   * utterances already started keep the voice they started with, whatever the session reports at their first audio.
   */
  voiceChangeAsked(): void {
    this.voiceAsks++;
  }

  /** The speed of the playout in force (the engine is told heard time, not played time). */
  private get speed(): number {
    return this.options?.speed ?? this.host.audioSpeed();
  }

  /** A retune waits for `u`'s first audio on a playout nobody else has audio in. */
  private retuneBefore(u: Utterance): void {
    const playout = this.playout!;
    if (u.queuedSamples > 0 || !playout.idle) return;
    for (const other of this.utterances.values()) if (other !== u && other.isActive && other.queuedSamples > 0) return;
    playout.destroy();
    this.playout = null;
    this.attach(this.nextOptions!);
    this.nextOptions = null;
  }

  /** A new utterance for an engine response. */
  track(responseId: ResponseId, kind: UtteranceKind, interruptible: boolean): Utterance {
    const voice = { voiceId: this.host.voiceId(), audioSpeed: this.speed, voiceAsks: this.voiceAsks };
    const u = new Utterance(responseId, kind, interruptible, voice, (x) => this.onInterrupted(x), this.guard);
    this.utterances.set(responseId, u);
    u.startedAtMs = this.timers.now();
    this.forgetOldest();
    return u;
  }

  /** Utterances tracked now (at most MAX_TRACKED_UTTERANCES, plus any still active or running a tool). */
  get trackedCount(): number {
    return this.utterances.size;
  }

  /** Drops the oldest ended utterances over MAX_TRACKED_UTTERANCES (a Map iterates in insertion order). */
  private forgetOldest(): void {
    if (this.utterances.size <= MAX_TRACKED_UTTERANCES) return;
    for (const [id, u] of this.utterances) {
      if (this.utterances.size <= MAX_TRACKED_UTTERANCES) return;
      if (!u.isActive && u.pendingTools.size === 0) this.utterances.delete(id);
    }
  }

  /**
   * The utterance of a response; one the engine started on its own (a reply to the user or to a tool output) is
   * tracked on first sight.
   */
  of(responseId: ResponseId): Utterance {
    const known = this.utterances.get(responseId);
    if (known) return known;
    const u = this.track(responseId, 'reply', true);
    u.speechOnly = this.speechOnlyNext;
    this.speechOnlyNext = false;
    return u;
  }

  /**
   * The next response the engine starts on its own is speech only (its reply to the output of a tool that allows no
   * chaining), unless the user takes a turn first (`userTurn`).
   */
  engineReplySpeechOnly(): void {
    this.speechOnlyNext = true;
  }

  /** The user took a turn: the engine's next response answers it, and may call tools. */
  userTurn(): void {
    this.speechOnlyNext = false;
  }

  /**
   * No utterance can be interrupted by the user until the returned function is called (once): a tool call that
   * cannot be interrupted (`uninterruptible`) runs.
   */
  holdBargeIn(): () => void {
    this.guard.holds++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.guard.holds--;
    };
  }

  /** Resolves once `u` has played `mark` samples (Infinity: all of it), or has stopped (finished, interrupted, silenced). */
  untilPlayed(u: Utterance, mark: number): Promise<void> {
    if (!u.isActive || u.playedSamples >= mark) return Promise.resolve();
    return new Promise((resolve) => (u.waiters ??= []).push({ mark, resolve }));
  }

  /** Wakes the waiters `u` has satisfied: those whose mark it played past, or all once it has stopped. */
  private wake(u: Utterance): void {
    const waiters = u.waiters!;
    const stopped = !u.isActive;
    const left = waiters.filter((w) => {
      if (!stopped && u.playedSamples < w.mark) return true;
      w.resolve();
      return false;
    });
    u.waiters = left.length > 0 ? left : null;
  }

  find(responseId: ResponseId): Utterance | undefined {
    return this.utterances.get(responseId);
  }

  /** Utterances queued or playing now. */
  get activeCount(): number {
    let n = 0;
    for (const u of this.utterances.values()) if (u.isActive) n++;
    return n;
  }

  /** The utterance queued or playing now, if any. */
  speaking(): Utterance | null {
    for (const u of this.utterances.values()) if (u.isActive) return u;
    return null;
  }

  /** Engine audio of a response (lent: the playout copies it). */
  audio(responseId: ResponseId, pcm: Int16Array): void {
    const u = this.of(responseId);
    if (!u.isActive || !this.playout) return;
    if (this.nextOptions !== null) this.retuneBefore(u);
    if (u.queuedSamples === 0) this.firstAudio(u);
    u.queuedSamples += this.playout.enqueue(u, pcm);
  }

  /** `u`'s first audio goes to the playout in force: the speed it plays at, and the voice the engine reports now. */
  private firstAudio(u: Utterance): void {
    u.audioSpeed = this.speed;
    if (u.voiceAsks === this.voiceAsks) u.voiceId = this.host.voiceId();
  }

  text(responseId: ResponseId, delta: string): void {
    const u = this.of(responseId);
    if (u.isActive) u.addText(delta);
  }

  /** The engine finished generating a response: it stops once its queued audio has played. */
  generated(responseId: ResponseId): void {
    const u = this.utterances.get(responseId);
    if (!u || !u.isActive) return;
    u.generated = true;
    if (this.playout) u.queuedSamples += this.playout.finish(u);
    if (!this.playout?.hasAudio(u)) this.finish(u);
  }

  /**
   * The assistant chose not to respond, or a tool call suppressed the speech of its response: what is not yet played
   * is dropped and the engine stops the response (told nothing of it was heard: speech already played cannot be
   * taken back, and ends with assistant_finished_speaking).
   */
  silence(responseId: ResponseId): void {
    const u = this.utterances.get(responseId);
    if (!u) return;
    u.silenced = true;
    if (!u.isActive) return;
    const spoke = u.state === 'speaking';
    u.state = 'finished';
    this.playout?.clear(u);
    this.host.session()?.cancelResponse(responseId, 0);
    if (spoke) this.host.emit({ type: 'assistant_finished_speaking' });
    this.host.stopped(u);
    if (u.waiters !== null) this.wake(u);
  }

  /** `reset`: every utterance stops. */
  interruptAll(): void {
    for (const u of this.utterances.values()) u.interrupt();
  }

  /**
   * The conversation ends: what is still active is finished as heard so far, at once. One never heard (no frame
   * played, no tool call) leaves no item: it did not happen.
   */
  finishAll(): void {
    for (const u of this.utterances.values()) {
      if (!u.isActive) continue;
      if (u.state === 'queued' && u.playedSamples === 0 && u.toolCalls.length === 0 && u.pendingTools.size === 0) {
        u.state = 'finished';
        continue;
      }
      this.finish(u);
    }
  }

  /** Tool calls still running on any utterance. */
  pendingTools(): Promise<void>[] {
    return [...this.utterances.values()].flatMap((u) => [...u.pendingTools]);
  }

  /** Pacing clock: one frame is due. */
  tick(): void {
    this.playout?.tick();
  }

  destroy(): void {
    // Its queued audio goes back to the worker's block pool; audio arriving after this is not queued anywhere.
    this.playout?.destroy();
    this.playout = null;
  }

  private onInterrupted(u: Utterance): void {
    this.playout?.clear(u);
    const session = this.host.session();
    const heardMs = ((u.playedSamples * MS_PER_SEC) / (session?.sampleRate ?? 16000)) * this.speed;
    session?.cancelResponse(u.responseId, heardMs);
    this.host.interrupted(u);
    if (u.firstFrameAtMs !== null && !u.silenced) this.host.emit({ type: 'assistant_finished_speaking' });
    this.host.stopped(u);
    if (u.waiters !== null) this.wake(u);
  }

  private frame(u: Utterance, pcm: Int16Array, encoded: Uint8Array, playedEnd: number): boolean {
    if (!u.isActive) return true;
    if (u.state === 'queued') {
      const now = this.timers.now();
      u.state = 'speaking';
      u.firstFrameAtMs = now;
      this.host.emit({ type: 'assistant_started_speaking' });
      this.host.started(u, now);
    }
    if (!this.host.sendFrame(pcm, encoded, u.takeTextUpTo(playedEnd))) return false;
    u.playedSamples = playedEnd;
    if (u.waiters !== null) this.wake(u);
    return true;
  }

  private drained(u: Utterance): void {
    if (u.generated) this.finish(u);
  }

  private finish(u: Utterance): void {
    if (!u.isActive) return;
    const spoke = u.state === 'speaking';
    u.state = 'finished';
    if (spoke) this.host.emit({ type: 'assistant_finished_speaking' });
    this.host.stopped(u);
    if (u.waiters !== null) this.wake(u);
    this.host.finished(u);
  }
}

function sameNoise(a: SpeechPlayoutOptions['noise'], b: SpeechPlayoutOptions['noise']): boolean {
  return a === b || (a !== null && b !== null && a.bed === b.bed && a.level === b.level);
}

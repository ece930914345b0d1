// Plays synthesized or recorded PCM out of an offline engine as one response: its text first, then its audio
// in chunks, then done. Never inside the call that started it (the caller knows the response id before any event
// of it arrives): the response starts in a microtask once its steps have resolved, and runs its steps up to and
// including its first audio chunk at once, so that chunk leaves in the same turn of the event loop as the end of
// the user's turn that caused it (waiting a turn would queue it behind every other socket's pending messages,
// which adds to the turn latency under load). Each later audio chunk waits one turn of the event loop (the playout
// paces them anyway, and a long response does not hold the loop). Responses of a session play one after the other;
// a canceled one stops emitting at once and says nothing more (not even done).
// A callback loop, one setImmediate per audio chunk: no Promise nor closure per chunk. Each chunk is a view of the
// response's audio, lent for the hook call (a view costs less than a copy into a reused buffer).
import type { EngineHooks, ResponseId } from './engine.js';

/** Audio handed to onAssistantAudio per call: 100 ms (the playout queues it; engines may run ahead of real time). */
export const PLAYBACK_CHUNK_MS = 100;

export type PlaybackStep =
  { kind: 'text'; text: string } | { kind: 'audio'; pcm: Int16Array } | { kind: 'call'; run: () => void };

interface Queued {
  id: ResponseId;
  steps: () => Promise<PlaybackStep[]>;
  fail: (err: unknown) => void;
  done: boolean;
  finished: (() => void) | undefined;
}

export class Playback {
  private readonly queue: Queued[] = [];
  /** The response playing (its steps resolved or resolving), or null. */
  private current: Queued | null = null;
  private list: PlaybackStep[] | null = null;
  private stepIndex = 0;
  /** Samples of the current audio step already emitted. */
  private offset = 0;
  private readonly canceled = new Set<ResponseId>();
  /** Responses queued or playing (a cancel of any other is a no-op). */
  private readonly queued = new Set<ResponseId>();
  private closed = false;
  private seq = 0;
  /** Samples per chunk. */
  private readonly chunk: number;
  private idleWaiters: (() => void)[] = [];
  private readonly onTurn = (): void => this.turn();

  constructor(
    private readonly prefix: string,
    sampleRate: number,
    private readonly hooks: EngineHooks,
  ) {
    this.chunk = Math.round((sampleRate * PLAYBACK_CHUNK_MS) / 1000);
  }

  newId(): ResponseId {
    return `${this.prefix}_${++this.seq}`;
  }

  /**
   * Queues a response: `steps` resolves to what it says and does (text, audio, calls); done follows unless
   * `done` is false. A rejection of `steps` is handed to `fail` (the response says nothing more). `finished`
   * runs once the response has played or stopped (its audio may be reused then).
   */
  play(
    id: ResponseId,
    steps: () => Promise<PlaybackStep[]>,
    fail: (err: unknown) => void,
    done = true,
    finished?: () => void,
  ): void {
    this.queued.add(id);
    this.queue.push({ id, steps, fail, done, finished });
    // Never inside this call: the caller learns the id before any event of it.
    if (this.current === null && this.queue.length === 1) queueMicrotask(() => this.startNext());
  }

  cancel(id: ResponseId): void {
    if (this.queued.has(id)) this.canceled.add(id);
  }

  close(): void {
    this.closed = true;
  }

  /** Resolves when everything queued has played (or stopped). */
  idle(): Promise<void> {
    if (this.current === null && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private startNext(): void {
    if (this.current !== null) return;
    const next = this.queue.shift();
    if (next === undefined) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
      return;
    }
    this.current = next;
    let steps: Promise<PlaybackStep[]>;
    try {
      steps = next.steps();
    } catch (err) {
      this.stepsFailed(next, err);
      return;
    }
    steps.then(
      (list) => {
        this.list = list;
        this.stepIndex = 0;
        this.offset = 0;
        this.turn();
      },
      (err: unknown) => this.stepsFailed(next, err),
    );
  }

  private stepsFailed(q: Queued, err: unknown): void {
    const stopped = this.isStopped(q.id);
    this.finish(q, null);
    if (!stopped) this.report(q, err);
  }

  /**
   * The current response's steps up to and including its next audio chunk (text and calls do not wait for a turn
   * of the event loop), or its end; the next chunk on a later turn.
   */
  private turn(): void {
    const q = this.current!;
    const list = this.list!;
    try {
      for (;;) {
        if (this.isStopped(q.id)) return this.finish(q, null);
        if (this.stepIndex === list.length) {
          if (q.done) this.hooks.onResponseDone(q.id);
          return this.finish(q, null);
        }
        const step = list[this.stepIndex];
        if (step.kind === 'text') {
          this.stepIndex++;
          this.hooks.onAssistantText(q.id, step.text);
          continue;
        }
        if (step.kind === 'call') {
          this.stepIndex++;
          step.run();
          continue;
        }
        const pcm = step.pcm;
        const at = this.offset;
        const end = Math.min(pcm.length, at + this.chunk);
        if (end === pcm.length) {
          this.stepIndex++;
          this.offset = 0;
        } else this.offset = end;
        if (end > at) {
          this.hooks.onAssistantAudio(q.id, pcm.subarray(at, end));
          break;
        }
      }
    } catch (err) {
      // A hook threw: reported, not lost; the queue goes on.
      return this.finish(q, err);
    }
    setImmediate(this.onTurn);
  }

  /** The current response has played or stopped (`err`: a hook threw): finished, then the next. */
  private finish(q: Queued, err: unknown): void {
    this.current = null;
    this.list = null;
    this.queued.delete(q.id);
    this.canceled.delete(q.id);
    try {
      q.finished?.();
    } catch (finishedErr) {
      this.report(q, finishedErr);
    }
    if (err !== null) this.report(q, err);
    this.startNext();
  }

  private report(q: Queued, err: unknown): void {
    try {
      q.fail(err);
    } catch (failErr) {
      // fail is the last resort (it logs and reports the engine error); a throw from it has nowhere else to go.
      queueMicrotask(() => {
        throw failErr;
      });
    }
  }

  private isStopped(id: ResponseId): boolean {
    return this.closed || this.canceled.has(id);
  }
}

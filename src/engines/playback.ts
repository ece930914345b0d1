// Plays synthesized or recorded PCM out of an offline engine as one response: its text first, then its audio
// in chunks, then done, each step on a later turn of the event loop (never inside the call that started it, so
// the caller knows the response id before any event of it arrives). Responses of a session play one after the
// other; a canceled one stops emitting at once and says nothing more (not even done).
import type { EngineHooks, ResponseId } from './engine.js';

/** Audio handed to onAssistantAudio per call: 100 ms (the playout queues it; engines may run ahead of real time). */
export const PLAYBACK_CHUNK_MS = 100;

export type PlaybackStep =
  | { kind: 'text'; text: string }
  | { kind: 'audio'; pcm: Int16Array }
  | { kind: 'call'; run: () => void };

export class Playback {
  private tail: Promise<void> = Promise.resolve();
  private readonly canceled = new Set<ResponseId>();
  /** Responses queued or playing (a cancel of any other is a no-op). */
  private readonly queued = new Set<ResponseId>();
  private closed = false;
  private seq = 0;

  constructor(
    private readonly prefix: string,
    private readonly sampleRate: number,
    private readonly hooks: EngineHooks,
  ) {}

  newId(): ResponseId {
    return `${this.prefix}_${++this.seq}`;
  }

  /**
   * Queues a response: `steps` resolves to what it says and does (text, audio, calls); done follows unless
   * `done` is false. A rejection of `steps` is handed to `fail` (the response says nothing more). `finished`
   * runs once the response has played or stopped (its audio may be reused then).
   */
  play(id: ResponseId, steps: () => Promise<PlaybackStep[]>, fail: (err: unknown) => void, done = true, finished?: () => void): void {
    this.queued.add(id);
    this.tail = this.tail
      .then(async () => {
        try {
          await this.run(id, steps, fail, done);
        } finally {
          this.queued.delete(id);
          this.canceled.delete(id);
          finished?.();
        }
      })
      .catch(fail); // keeps the queue going; hooks should not throw, but if one does it is reported, not lost
  }

  private async run(id: ResponseId, steps: () => Promise<PlaybackStep[]>, fail: (err: unknown) => void, done: boolean): Promise<void> {
    const chunk = Math.round((this.sampleRate * PLAYBACK_CHUNK_MS) / 1000);
    let list: PlaybackStep[];
    try {
      list = await steps();
    } catch (err) {
      if (!this.isStopped(id)) fail(err);
      return;
    }
    for (const step of list) {
      await nextTurn();
      if (this.isStopped(id)) return;
      if (step.kind === 'text') this.hooks.onAssistantText(id, step.text);
      else if (step.kind === 'call') step.run();
      else {
        for (let at = 0; at < step.pcm.length; at += chunk) {
          if (this.isStopped(id)) return;
          this.hooks.onAssistantAudio(id, step.pcm.subarray(at, Math.min(step.pcm.length, at + chunk)));
          if (at + chunk < step.pcm.length) await nextTurn();
        }
      }
    }
    await nextTurn();
    if (done && !this.isStopped(id)) this.hooks.onResponseDone(id);
  }

  cancel(id: ResponseId): void {
    if (this.queued.has(id)) this.canceled.add(id);
  }

  close(): void {
    this.closed = true;
  }

  /** Resolves when everything queued has played (or stopped). */
  idle(): Promise<void> {
    return this.tail;
  }

  private isStopped(id: ResponseId): boolean {
    return this.closed || this.canceled.has(id);
  }
}

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

// Test helper: EngineHooks that record every event in order, and waits on them.
import { concatPcm } from '../media/speech.js';
import type {
  EngineError,
  EngineHooks,
  EngineSessionOptions,
  EngineToolCall,
  ResponseId,
} from '../../src/engines/engine.js';

export type Recorded =
  | { kind: 'transcript'; text: string; final: boolean }
  | { kind: 'audio'; responseId: ResponseId; samples: number }
  | { kind: 'text'; responseId: ResponseId; delta: string }
  | { kind: 'tool'; call: EngineToolCall }
  | { kind: 'done'; responseId: ResponseId }
  | { kind: 'error'; error: EngineError };

export class Recorder implements EngineHooks {
  readonly events: Recorded[] = [];
  /** Audio of each response, concatenated. */
  readonly audio = new Map<ResponseId, Int16Array[]>();
  private waiters: { test: () => boolean; resolve: () => void }[] = [];
  /** Called after each event is recorded (to answer tool calls, cancel, ...). */
  onEvent: (e: Recorded) => void = () => {};

  private push(e: Recorded): void {
    this.events.push(e);
    this.onEvent(e);
    this.waiters = this.waiters.filter((w) => (w.test() ? (w.resolve(), false) : true));
  }

  onInputTranscript(text: string, final: boolean): void {
    this.push({ kind: 'transcript', text, final });
  }
  onAssistantAudio(responseId: ResponseId, pcm: Int16Array): void {
    const list = this.audio.get(responseId) ?? [];
    list.push(pcm.slice()); // lent: copy
    this.audio.set(responseId, list);
    this.push({ kind: 'audio', responseId, samples: pcm.length });
  }
  onAssistantText(responseId: ResponseId, delta: string): void {
    this.push({ kind: 'text', responseId, delta });
  }
  onToolCall(call: EngineToolCall): void {
    this.push({ kind: 'tool', call });
  }
  onResponseDone(responseId: ResponseId): void {
    this.push({ kind: 'done', responseId });
  }
  onError(error: EngineError): void {
    this.push({ kind: 'error', error });
  }

  /** Resolves once `test` holds (checked now and after each event). */
  until(test: () => boolean): Promise<void> {
    if (test()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ test, resolve }));
  }

  untilDone(responseId: ResponseId): Promise<void> {
    return this.until(() => this.events.some((e) => e.kind === 'done' && e.responseId === responseId));
  }

  untilKind(kind: Recorded['kind'], count = 1): Promise<void> {
    return this.until(() => this.events.filter((e) => e.kind === kind).length >= count);
  }

  samplesOf(responseId: ResponseId): Int16Array {
    return concatPcm(this.audio.get(responseId) ?? []);
  }

  kinds(): string[] {
    return this.events.map((e) => e.kind);
  }
}

export function sessionOptions(overrides: Partial<EngineSessionOptions> = {}): EngineSessionOptions {
  return {
    conversationId: 'conv_test',
    systemPrompt: 'You are a helpful test agent.',
    voiceId: 'grant',
    defaultLanguage: 'en',
    additionalLanguages: [],
    tools: [],
    boostedKeywords: [],
    pronunciations: [],
    signal: new AbortController().signal,
    ...overrides,
  };
}

/** Mean absolute sample value: 0 for silence. */
export function energy(pcm: Int16Array): number {
  let sum = 0;
  for (const s of pcm) sum += Math.abs(s);
  return pcm.length === 0 ? 0 : sum / pcm.length;
}

// A speech engine the test drives by hand: it records every call the conversation makes on its session, and hands
// the test the hooks to answer with (transcripts, audio, tool calls, response done). No synthesis, no timing.
import type {
  EngineHooks,
  EngineSessionOptions,
  EngineToolCall,
  ResponseId,
  ResponseOptions,
  SpeechEngine,
  SpeechEngineSession,
} from '../../src/engines/engine.js';

export const PROBE_RATE = 16_000;
/** 20 ms of engine audio. */
export const PROBE_FRAME = PROBE_RATE / 50;

export type ProbeCall =
  | { kind: 'createResponse'; id: ResponseId; instructions?: string; options?: ResponseOptions }
  | { kind: 'speak'; id: ResponseId; text: string }
  | { kind: 'submitToolOutput'; callId: string; output: string; respond: boolean; options?: ResponseOptions }
  | { kind: 'cancelResponse'; id: ResponseId; playedMs: number }
  | { kind: 'updateSession'; update: Parameters<SpeechEngineSession['updateSession']>[0] }
  | { kind: 'commitUserTurn'; respond: boolean }
  | { kind: 'clearUserTurn' };

export class ProbeEngine implements SpeechEngine {
  readonly name = 'probe';
  options: EngineSessionOptions | null = null;
  hooks: EngineHooks | null = null;
  readonly calls: ProbeCall[] = [];
  private seq = 0;

  async open(options: EngineSessionOptions, hooks: EngineHooks): Promise<SpeechEngineSession> {
    this.options = options;
    this.hooks = hooks;
    const next = (): ResponseId => `resp_${++this.seq}`;
    const calls = this.calls;
    return {
      sampleRate: PROBE_RATE,
      transcribesLive: false,
      appendAudio() {},
      commitUserTurn: (respond = true) => void calls.push({ kind: 'commitUserTurn', respond }),
      clearUserTurn: () => void calls.push({ kind: 'clearUserTurn' }),
      createResponse(instructions?: string, options?: ResponseOptions) {
        const id = next();
        calls.push({
          kind: 'createResponse',
          id,
          ...(instructions === undefined ? {} : { instructions }),
          ...(options === undefined ? {} : { options }),
        });
        return id;
      },
      speak(text: string) {
        const id = next();
        calls.push({ kind: 'speak', id, text });
        return id;
      },
      submitToolOutput: (callId, output, respond, options) =>
        void calls.push({
          kind: 'submitToolOutput',
          callId,
          output,
          respond,
          ...(options === undefined ? {} : { options }),
        }),
      cancelResponse: (id, playedMs) => void calls.push({ kind: 'cancelResponse', id, playedMs }),
      updateSession: (update) => void calls.push({ kind: 'updateSession', update }),
      close: async () => {},
    };
  }

  of<K extends ProbeCall['kind']>(kind: K): Extract<ProbeCall, { kind: K }>[] {
    return this.calls.filter((c) => c.kind === kind) as Extract<ProbeCall, { kind: K }>[];
  }

  /** The engine says `text` as response `id`: its text, `frames` frames of a tone, done. */
  say(id: ResponseId, text: string, frames = 5): void {
    const pcm = new Int16Array(PROBE_FRAME * frames);
    for (let i = 0; i < pcm.length; i++) pcm[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / PROBE_RATE));
    this.hooks!.onAssistantText(id, text);
    this.hooks!.onAssistantAudio(id, pcm);
    this.hooks!.onResponseDone(id);
  }

  toolCall(call: EngineToolCall): void {
    this.hooks!.onToolCall(call);
  }
}

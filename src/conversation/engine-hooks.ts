// How a speech engine reaches its conversation (src/engines/engine.ts EngineHooks): transcripts go to turn-taking
// (min_words_to_interrupt) and, when final, to the held user item and the client as input_text; response audio and
// text go to the assistant's speech; tool calls to the tool host; an engine error ends the conversation.
import type { EngineError, EngineHooks, EngineToolCall } from '../engines/engine.js';
import type { ServerEvent } from '../schemas/sts.js';
import type { AssistantSpeech } from './assistant-speech.js';
import type { ConversationRecord } from './record.js';
import type { TurnTaking } from './turn-taking.js';

export interface HookTarget {
  /** Null until the engine session is open. */
  turns(): TurnTaking | null;
  readonly record: ConversationRecord;
  readonly speech: AssistantSpeech;
  toolCall(call: EngineToolCall): void;
  emit(event: ServerEvent): void;
  /** The engine failed: the conversation ends with ended_by error. */
  failed(error: EngineError): void;
}

export function engineHooks(t: HookTarget): EngineHooks {
  return {
    onInputTranscript: (text, final, language) => {
      t.turns()?.heard(text);
      if (!final) return;
      t.record.finalUserTranscript(text);
      t.emit({ type: 'input_text', text, ...(language ? { language } : {}) });
    },
    onAssistantAudio: (responseId, pcm) => t.speech.audio(responseId, pcm),
    onAssistantText: (responseId, delta) => t.speech.text(responseId, delta),
    onToolCall: (call) => t.toolCall(call),
    onResponseDone: (responseId) => t.speech.generated(responseId),
    onError: (error) => t.failed(error),
  };
}

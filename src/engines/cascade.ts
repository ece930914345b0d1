// The `cascade` engine: speech-to-text, chat completion with tools, text-to-speech over the OpenAI-compatible
// HTTP APIs. A user turn is transcribed whole (multipart WAV to /audio/transcriptions), answered by the one
// chat client (src/engines/chat-client.ts), and spoken sentence by sentence (/audio/speech), the next sentence
// synthesized while the previous one plays, so audio starts before the whole reply is synthesized. The voice,
// transcription language and keywords are per request, so a transfer to another agent (updateSession) changes
// them from the next turn and reply on; a reply keeps the voice it started with. The chat completion carries a
// reply's tool calls with its text, so a reply calling a speech-suppressed tool is not spoken at all; a speech-only
// reply is asked with tool_choice `none`.
import type { Logger } from '../log.js';
import type { ResamplerRate } from '../media/native/resampler.js';
import type { ChatClient, ChatFunctionTool, ChatMessage } from './chat-client.js';
import {
  EngineError,
  speechSettingsOf,
  updatedSpeech,
  type EngineHooks,
  type EngineSessionOptions,
  type EngineTool,
  type ResponseId,
  type ResponseOptions,
  type SessionUpdate,
  type SpeechEngine,
  type SpeechEngineSession,
  type SpeechSettings,
} from './engine.js';
import { applyPronunciations } from './echo.js';
import { synthesize, transcribe, type SpeechEndpoint } from './speech-http.js';

export const CASCADE_ENGINE = 'cascade';
export const CASCADE_SAMPLE_RATE: ResamplerRate = 16_000;
/** Longest user turn sent to speech-to-text: 120 s (older audio of a longer turn is dropped). */
export const CASCADE_MAX_TURN_SEC = 120;
/** Sentences synthesized ahead of the one playing. */
const SYNTHESIS_LOOKAHEAD = 1;
/** Audio handed to onAssistantAudio per call. */
const AUDIO_CHUNK_MS = 100;

export interface CascadeOptions {
  stt: SpeechEndpoint;
  tts: SpeechEndpoint;
  chat: ChatClient;
  voiceFor(voiceId: string): string;
  /** response_format asked of /audio/speech (default pcm). */
  ttsFormat?: 'pcm' | 'wav';
  log: Logger;
}

export function createCascadeEngine(options: CascadeOptions): SpeechEngine {
  return {
    name: CASCADE_ENGINE,
    async open(session, hooks) {
      if (session.signal.aborted) throw new EngineError('conversation ended while the engine opened', CASCADE_ENGINE);
      return new CascadeSession(options, session, hooks);
    },
  };
}

/** Splits a reply into sentences (each keeps its punctuation); text without an end mark is one sentence. */
export function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?;:])\s+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

function chatTools(tools: readonly EngineTool[]): ChatFunctionTool[] {
  return tools.map((t) => ({
    type: 'function',
    function: { name: t.name, description: t.description, parameters: t.parameters },
  }));
}

interface Reply {
  id: ResponseId;
  abort: AbortController;
  /** Sentences spoken, each with the sample at which its audio starts. */
  spoken: { text: string; at: number }[];
  samples: number;
  /** The assistant message in the history (truncated on barge-in). */
  message: Extract<ChatMessage, { role: 'assistant' }> | null;
  /** Tool calls awaiting output, whether one of them asked for a reply, and whether that reply is speech only. */
  openCalls: Set<string>;
  respondAfterTools: boolean;
  speechOnlyAfterTools: boolean;
  canceled: boolean;
  /** The speech settings when the reply was asked for: its voice and pronunciations, even after an update. */
  speech: SpeechSettings;
}

class CascadeSession implements SpeechEngineSession {
  readonly sampleRate = CASCADE_SAMPLE_RATE;
  readonly transcribesLive = false;
  private readonly history: ChatMessage[] = [];
  private systemPrompt: string;
  private tools: readonly EngineTool[];
  /** Voice, language, keywords and pronunciations in force (a transfer to another agent replaces them). */
  private speech: SpeechSettings;
  private turn: Int16Array[] = [];
  private turnSamples = 0;
  private chain: Promise<void> = Promise.resolve();
  private readonly replies = new Map<ResponseId, Reply>();
  private readonly callOwner = new Map<string, Reply>();
  private seq = 0;
  private closed = false;
  private readonly closing = new AbortController();

  constructor(
    private readonly options: CascadeOptions,
    private readonly session: EngineSessionOptions,
    private readonly hooks: EngineHooks,
  ) {
    this.systemPrompt = session.systemPrompt;
    this.tools = session.tools;
    this.speech = speechSettingsOf(session);
  }

  get voiceId(): string {
    return this.speech.voiceId;
  }

  appendAudio(pcm: Int16Array): void {
    if (this.closed) return;
    this.turn.push(pcm.slice()); // lent: keep a copy
    this.turnSamples += pcm.length;
    while (this.turnSamples > this.sampleRate * CASCADE_MAX_TURN_SEC && this.turn.length > 1)
      this.turnSamples -= this.turn.shift()!.length;
  }

  commitUserTurn(respond = true): void {
    if (this.closed) return;
    const audio = concat(this.turn, this.turnSamples);
    this.clearUserTurn();
    // The language and keywords of the moment the turn ended (the job may run after a later update).
    const { defaultLanguage, boostedKeywords } = this.speech;
    this.enqueue(async () => {
      const text = await transcribe(this.options.stt, audio, this.sampleRate, {
        language: defaultLanguage,
        prompt: boostedKeywords.length > 0 ? boostedKeywords.join(', ') : undefined,
        signal: this.closing.signal,
      });
      if (this.closed) return;
      this.hooks.onInputTranscript(text, true);
      if (text === '') return; // nothing was said: nothing to answer
      this.history.push({ role: 'user', content: text });
      if (!respond) return;
      await this.reply(this.newReply(), undefined);
    });
  }

  clearUserTurn(): void {
    this.turn = [];
    this.turnSamples = 0;
  }

  createResponse(instructions?: string, options?: ResponseOptions): ResponseId {
    const reply = this.newReply();
    this.enqueue(() => this.reply(reply, instructions, options?.speechOnly === true));
    return reply.id;
  }

  speak(text: string): ResponseId {
    const reply = this.newReply();
    this.enqueue(async () => {
      reply.message = { role: 'assistant', content: text };
      this.history.push(reply.message);
      await this.speakText(reply, text);
      if (!reply.canceled && !this.closed) this.hooks.onResponseDone(reply.id);
    });
    return reply.id;
  }

  submitToolOutput(callId: string, output: string, respond: boolean, options?: ResponseOptions): void {
    const reply = this.callOwner.get(callId);
    if (!reply) {
      this.options.log.warn(
        { callId, conversationId: this.session.conversationId },
        'cascade: output of an unknown tool call',
      );
      return;
    }
    this.callOwner.delete(callId);
    reply.openCalls.delete(callId);
    reply.respondAfterTools ||= respond;
    reply.speechOnlyAfterTools ||= options?.speechOnly === true;
    this.history.push({ role: 'tool', tool_call_id: callId, content: output });
    // Chat models need every call's output before the next completion.
    if (reply.openCalls.size === 0 && reply.respondAfterTools) {
      const next = this.newReply();
      const speechOnly = reply.speechOnlyAfterTools;
      this.enqueue(() => this.reply(next, undefined, speechOnly));
    }
  }

  cancelResponse(responseId: ResponseId, playedMs: number): void {
    const reply = this.replies.get(responseId);
    if (!reply || reply.canceled) return;
    reply.canceled = true;
    reply.abort.abort();
    if (reply.message) {
      const played = (playedMs * this.sampleRate) / 1000;
      reply.message.content = reply.spoken
        .filter((s) => s.at < played)
        .map((s) => s.text)
        .join(' ');
    }
  }

  updateSession(update: SessionUpdate): void {
    this.speech = updatedSpeech(this.speech, update);
    if (update.systemPrompt !== undefined) this.systemPrompt = update.systemPrompt;
    if (update.tools !== undefined) this.tools = update.tools;
    if (update.systemMessage !== undefined) this.history.push({ role: 'system', content: update.systemMessage });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.closing.abort();
    for (const reply of this.replies.values()) reply.abort.abort();
    await this.chain;
  }

  private newReply(): Reply {
    const reply: Reply = {
      id: `cascade_${++this.seq}`,
      abort: new AbortController(),
      spoken: [],
      samples: 0,
      message: null,
      openCalls: new Set(),
      respondAfterTools: false,
      speechOnlyAfterTools: false,
      canceled: false,
      speech: this.speech,
    };
    this.replies.set(reply.id, reply);
    return reply;
  }

  /**
   * One chat round: the reply's text spoken (unless it calls a speech-suppressed tool), its tool calls handed out,
   * done. A speech-only round offers no tool (tool_choice none); asked while another reply's calls await their
   * output (the line said before a call that requires speech), its text becomes that reply's own, spoken before its
   * calls.
   */
  private async reply(reply: Reply, instructions: string | undefined, speechOnly = false): Promise<void> {
    if (reply.canceled || this.closed) return;
    const messages: ChatMessage[] = [{ role: 'system', content: this.systemPrompt }, ...this.answeredHistory()];
    if (instructions) messages.push({ role: 'system', content: instructions });
    const completion = await this.options.chat.complete({
      messages,
      tools: this.tools.length > 0 ? chatTools(this.tools) : undefined,
      ...(speechOnly && this.tools.length > 0 ? { toolChoice: 'none' as const } : {}),
      signal: AbortSignal.any([reply.abort.signal, this.closing.signal]),
    });
    if (reply.canceled || this.closed) return;
    const toolCalls = speechOnly ? [] : completion.toolCalls;
    const suppressed = new Set(this.tools.filter((t) => t.speechSuppressed).map((t) => t.name));
    const silent = toolCalls.some((c) => suppressed.has(c.function.name));
    const content = silent ? null : completion.content || null;
    const waiting = speechOnly ? this.speechlessCaller() : null;
    if (waiting) {
      waiting.content = content;
      reply.message = waiting;
    } else {
      reply.message = { role: 'assistant', content, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) };
      this.history.push(reply.message);
    }
    for (const call of toolCalls) {
      reply.openCalls.add(call.id);
      this.callOwner.set(call.id, reply);
    }
    if (content) await this.speakText(reply, content);
    if (reply.canceled || this.closed) return;
    for (const call of toolCalls) {
      this.hooks.onToolCall({
        responseId: reply.id,
        callId: call.id,
        name: call.function.name,
        arguments: toolArguments(call.function.arguments, this.options.log),
      });
    }
    this.hooks.onResponseDone(reply.id);
  }

  /** The latest assistant message whose calls await their output and that said nothing before them, if any. */
  private speechlessCaller(): Extract<ChatMessage, { role: 'assistant' }> | null {
    for (let i = this.history.length - 1; i >= 0; i--) {
      const m = this.history[i];
      if (m.role !== 'assistant' || !m.tool_calls) continue;
      if (m.content === null && m.tool_calls.some((c) => this.callOwner.has(c.id))) return m;
    }
    return null;
  }

  /**
   * The history a completion may be asked with: calls still awaiting their output are left out (a chat model
   * refuses an assistant call without its output), and an assistant message left with neither text nor call.
   */
  private answeredHistory(): ChatMessage[] {
    if (this.callOwner.size === 0) return this.history;
    const out: ChatMessage[] = [];
    for (const m of this.history) {
      if (m.role !== 'assistant' || !m.tool_calls?.some((c) => this.callOwner.has(c.id))) {
        out.push(m);
        continue;
      }
      const answered = m.tool_calls.filter((c) => !this.callOwner.has(c.id));
      if (answered.length > 0) out.push({ role: 'assistant', content: m.content, tool_calls: answered });
      else if (m.content !== null) out.push({ role: 'assistant', content: m.content });
    }
    return out;
  }

  /** Sentence by sentence: text, then its audio; the next sentence is synthesized while this one is handed out. */
  private async speakText(reply: Reply, text: string): Promise<void> {
    const voice = this.options.voiceFor(reply.speech.voiceId);
    const parts = sentences(text);
    const signal = AbortSignal.any([reply.abort.signal, this.closing.signal]);
    const started: (Promise<Int16Array> | undefined)[] = [];
    const start = (i: number) => {
      if (i >= parts.length || started[i]) return;
      const p = synthesize(
        this.options.tts,
        applyPronunciations(parts[i], reply.speech.pronunciations),
        voice,
        this.sampleRate,
        {
          format: this.options.ttsFormat ?? 'pcm',
          signal,
        },
      );
      // Awaited in order below (where a rejection surfaces); until then it must not count as unhandled.
      p.catch(() => undefined);
      started[i] = p;
    };
    const chunk = (this.sampleRate * AUDIO_CHUNK_MS) / 1000;
    for (let i = 0; i < parts.length; i++) {
      for (let k = i; k <= i + SYNTHESIS_LOOKAHEAD; k++) start(k);
      const pcm = await started[i]!;
      if (reply.canceled || this.closed) return;
      reply.spoken.push({ text: parts[i], at: reply.samples });
      this.hooks.onAssistantText(reply.id, i === 0 ? parts[i] : ` ${parts[i]}`);
      for (let at = 0; at < pcm.length; at += chunk)
        this.hooks.onAssistantAudio(reply.id, pcm.subarray(at, Math.min(pcm.length, at + chunk)));
      reply.samples += pcm.length;
    }
  }

  private enqueue(job: () => Promise<void>): void {
    this.chain = this.chain.then(job).catch((err: unknown) => this.fail(err));
  }

  private fail(err: unknown): void {
    if (this.closed) return;
    if (err instanceof Error && err.name === 'AbortError') return; // a barge-in canceled the reply in flight
    this.options.log.warn({ err, conversationId: this.session.conversationId }, 'cascade engine failed');
    this.hooks.onError(
      err instanceof EngineError ? err : new EngineError((err as Error).message, CASCADE_ENGINE, { cause: err }),
    );
  }
}

function concat(chunks: Int16Array[], total: number): Int16Array {
  const out = new Int16Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

function toolArguments(text: string, log: Logger): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text || '{}');
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
      return parsed as Record<string, unknown>;
  } catch (err) {
    log.warn({ err }, 'cascade: tool call arguments are not JSON; called with none');
    return {};
  }
  log.warn('cascade: tool call arguments are not a JSON object; called with none');
  return {};
}

// The `openai-realtime` engine: any server speaking the OpenAI Realtime WebSocket protocol (hosted or
// self-hosted). PCM16 mono at 24 kHz both ways, base64 in JSON events. Turn detection is Parley's own VAD by
// default (turn_detection null: input_audio_buffer.commit + response.create on each turn end), or the
// server's VAD. Barge-in cancels the response and truncates its item to the audio actually played. A transfer
// to another agent updates instructions, tools and transcription language with session.update, and the voice
// with a session.update of its own: the protocol allows a voice change only until the session has produced audio
// (OpenAI Realtime API reference, client event session.update: "voice can be updated only if there have been no
// other audio outputs yet"; a late one is refused with error code cannot_update_voice), so after audio the voice
// stays, and a refusal costs the voice alone, never the conversation.
import WebSocket from 'ws';
import type { Logger } from '../log.js';
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

export const OPENAI_REALTIME_ENGINE = 'openai-realtime';
/** The protocol's `pcm16` format: 16-bit mono little-endian at 24 kHz. */
export const REALTIME_SAMPLE_RATE = 24_000;
/** Milliseconds to open the socket and have the session configured before open() fails. */
export const REALTIME_OPEN_TIMEOUT_MS = 10_000;
/** Error codes the server reports for a request that raced with the response's own end: not fatal. */
const BENIGN_ERROR_CODES = new Set([
  'response_cancel_not_active',
  'conversation_already_has_active_response',
  'item_truncate_invalid_item_id',
]);
/** The server's refusal of a voice change once the session has produced audio: the old voice stays. */
export const CANNOT_UPDATE_VOICE = 'cannot_update_voice';

export interface OpenAiRealtimeOptions {
  /** ws:// or wss:// endpoint (PARLEY_REALTIME_URL); the model is added as `?model=`. */
  url: string;
  model?: string;
  apiKey?: string;
  /** The engine's voice of a catalog voice id. */
  voiceFor(voiceId: string): string;
  /** 'parley' (default): Parley's VAD ends turns; 'server': the server's VAD does. */
  turnDetection?: 'parley' | 'server';
  /** Model that transcribes user audio (input_audio_transcription). */
  transcriptionModel?: string;
  openTimeoutMs?: number;
  log: Logger;
}

export function createOpenAiRealtimeEngine(options: OpenAiRealtimeOptions): SpeechEngine {
  return {
    name: OPENAI_REALTIME_ENGINE,
    async open(session, hooks) {
      const s = new RealtimeSession(options, session, hooks);
      await s.connect();
      return s;
    },
  };
}

/** The instructions the model gets: the prompt plus the pronunciation dictionary and boosted keywords. */
export function realtimeInstructions(
  speech: Pick<SpeechSettings, 'pronunciations' | 'boostedKeywords'>,
  systemPrompt: string,
): string {
  const parts = [systemPrompt];
  if (speech.pronunciations.length > 0) {
    parts.push(
      `Pronounce these words as given: ${speech.pronunciations.map((p) => `"${p.word}" as "${p.pronunciation}"`).join(', ')}.`,
    );
  }
  if (speech.boostedKeywords.length > 0) parts.push(`Words you may hear: ${speech.boostedKeywords.join(', ')}.`);
  return parts.join('\n\n');
}

/**
 * Told to the model on a speech-suppressed tool: the server streams a response's audio before its function call,
 * so only the model can keep from speaking first (the conversation drops what has not played when the call comes).
 */
export const SPEECH_SUPPRESSED_HINT = 'Call this function without saying anything first.';

function realtimeTools(tools: readonly EngineTool[]): unknown[] {
  return tools.map((t) => ({
    type: 'function',
    name: t.name,
    description: t.speechSuppressed ? `${t.description}\n${SPEECH_SUPPRESSED_HINT}` : t.description,
    parameters: t.parameters,
  }));
}

/** response.create's tool_choice for a speech-only response (OpenAI Realtime API, client event response.create). */
function responseChoice(options: ResponseOptions | undefined): Record<string, unknown> {
  return options?.speechOnly ? { tool_choice: 'none' } : {};
}

interface ServerEvent {
  type: string;
  [key: string]: unknown;
}

/** A text frame's contents, whichever form ws delivered it in. */
function rawText(data: WebSocket.RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  return (Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data)).toString('utf8');
}

/** A text field of a server event; anything else (absent, malformed) reads as empty. */
function textOf(v: unknown, otherwise = ''): string {
  return typeof v === 'string' ? v : otherwise;
}

interface ResponseState {
  id: ResponseId;
  serverId: string | null;
  /** The assistant audio item (for conversation.item.truncate). */
  itemId: string | null;
  canceled: boolean;
  /** Its function calls still awaiting output (made on its first call). */
  openCalls?: OpenCalls;
}

/**
 * The function calls of one response still awaiting their output, and how to reply once all are in and the
 * response is done (the server refuses a response.create while another response is active).
 */
interface OpenCalls {
  calls: Set<string>;
  respond: boolean;
  speechOnly: boolean;
  responseDone: boolean;
}

class RealtimeSession implements SpeechEngineSession {
  readonly sampleRate = REALTIME_SAMPLE_RATE;
  readonly transcribesLive = false;
  private ws: WebSocket | null = null;
  private seq = 0;
  /** Our response ids waiting for their response.created, in request order. */
  private readonly awaiting: ResponseState[] = [];
  private readonly byServerId = new Map<string, ResponseState>();
  private readonly byId = new Map<ResponseId, ResponseState>();
  /** Function call id -> the open calls of its response (one reply after all their outputs, as a chat model needs). */
  private readonly openCalls = new Map<string, OpenCalls>();
  private inputTranscript = '';
  private systemPrompt: string;
  /** Voice, language, keywords and pronunciations in force (a transfer to another agent replaces them). */
  private speech: SpeechSettings;
  /** The server has sent assistant audio: from then on the protocol refuses a voice change. */
  private audioProduced = false;
  /** The voice before a change the server has not yet confirmed or refused (restored on cannot_update_voice). */
  private voiceBeforeChange: string | null = null;
  private closing = false;
  private failed = false;

  constructor(
    private readonly options: OpenAiRealtimeOptions,
    private readonly session: EngineSessionOptions,
    private readonly hooks: EngineHooks,
  ) {
    this.systemPrompt = session.systemPrompt;
    this.speech = speechSettingsOf(session);
  }

  get voiceId(): string {
    return this.speech.voiceId;
  }

  connect(): Promise<void> {
    const url = new URL(this.options.url);
    if (this.options.model) url.searchParams.set('model', this.options.model);
    const headers: Record<string, string> = { 'OpenAI-Beta': 'realtime=v1' };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    if (this.session.signal.aborted) {
      return Promise.reject(new EngineError('conversation ended while the engine opened', OPENAI_REALTIME_ENGINE));
    }
    return new Promise<void>((resolve, reject) => {
      const ws = new WebSocket(url, { headers });
      this.ws = ws;
      let settled = false;
      const settle = (err: EngineError | null) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.session.signal.removeEventListener('abort', onAbort);
        if (err) {
          this.closing = true;
          ws.terminate();
          reject(err);
        } else resolve();
      };
      const onAbort = () =>
        settle(new EngineError('conversation ended while the engine opened', OPENAI_REALTIME_ENGINE));
      const timer = setTimeout(
        () =>
          settle(
            new EngineError(
              `no configured session within ${this.options.openTimeoutMs ?? REALTIME_OPEN_TIMEOUT_MS} ms`,
              OPENAI_REALTIME_ENGINE,
            ),
          ),
        this.options.openTimeoutMs ?? REALTIME_OPEN_TIMEOUT_MS,
      );
      this.session.signal.addEventListener('abort', onAbort, { once: true });
      ws.on('open', () => this.send({ type: 'session.update', session: this.sessionConfig() }));
      ws.on('message', (data, isBinary) => {
        if (isBinary) return;
        let event: ServerEvent;
        try {
          event = JSON.parse(rawText(data)) as ServerEvent;
        } catch (err) {
          return this.fail(
            new EngineError('server sent a frame that is not JSON', OPENAI_REALTIME_ENGINE, { cause: err }),
          );
        }
        if (!settled) {
          if (event.type === 'session.updated') return settle(null);
          if (event.type === 'error')
            return settle(new EngineError(`session refused: ${errorText(event)}`, OPENAI_REALTIME_ENGINE));
          return; // session.created and the like, before our configuration took effect
        }
        this.onEvent(event);
      });
      ws.on('unexpected-response', (_req, res) =>
        settle(new EngineError(`server answered the upgrade with HTTP ${res.statusCode}`, OPENAI_REALTIME_ENGINE)),
      );
      ws.on('error', (err) => {
        if (!settled) settle(new EngineError(`cannot connect: ${err.message}`, OPENAI_REALTIME_ENGINE, { cause: err }));
        else this.fail(new EngineError(`socket error: ${err.message}`, OPENAI_REALTIME_ENGINE, { cause: err }));
      });
      ws.on('close', (code, reason) => {
        if (!settled) settle(new EngineError(`socket closed while opening (${code})`, OPENAI_REALTIME_ENGINE));
        else if (!this.closing)
          this.fail(
            new EngineError(`server closed the session (${code} ${reason.toString()})`, OPENAI_REALTIME_ENGINE),
          );
      });
    });
  }

  appendAudio(pcm: Int16Array): void {
    this.send({
      type: 'input_audio_buffer.append',
      audio: Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength).toString('base64'),
    });
  }

  commitUserTurn(respond = true): void {
    if (this.options.turnDetection === 'server') return; // the server ends turns and answers on its own
    // The commit alone has the turn transcribed (input_audio_transcription); response.create answers it.
    this.send({ type: 'input_audio_buffer.commit' });
    if (respond) this.request(undefined);
  }

  clearUserTurn(): void {
    this.send({ type: 'input_audio_buffer.clear' });
    this.inputTranscript = '';
  }

  createResponse(instructions?: string, options?: ResponseOptions): ResponseId {
    const response = {
      ...(instructions
        ? { instructions: `${realtimeInstructions(this.speech, this.systemPrompt)}\n\n${instructions}` }
        : {}),
      ...responseChoice(options),
    };
    return this.request(Object.keys(response).length > 0 ? response : undefined);
  }

  speak(text: string): ResponseId {
    return this.request({
      instructions: `Say exactly the following text, word for word, and nothing else:\n${text}`,
    });
  }

  submitToolOutput(callId: string, output: string, respond: boolean, options?: ResponseOptions): void {
    this.send({ type: 'conversation.item.create', item: { type: 'function_call_output', call_id: callId, output } });
    const open = this.openCalls.get(callId) ?? {
      calls: new Set<string>(),
      respond: false,
      speechOnly: false,
      responseDone: true,
    };
    this.openCalls.delete(callId);
    open.calls.delete(callId);
    open.respond ||= respond;
    open.speechOnly ||= options?.speechOnly === true;
    this.replyAfterOutputs(open);
  }

  /** One response.create once every call of a response has its output and the response is done, if one asked. */
  private replyAfterOutputs(open: OpenCalls): void {
    if (open.calls.size > 0 || !open.responseDone || !open.respond) return;
    open.respond = false;
    this.request(open.speechOnly ? responseChoice({ speechOnly: true }) : undefined);
  }

  cancelResponse(responseId: ResponseId, playedMs: number): void {
    const state = this.byId.get(responseId);
    if (!state || state.canceled) return;
    state.canceled = true;
    this.send({ type: 'response.cancel', ...(state.serverId ? { response_id: state.serverId } : {}) });
    if (state.itemId) {
      this.send({
        type: 'conversation.item.truncate',
        item_id: state.itemId,
        content_index: 0,
        audio_end_ms: Math.max(0, Math.round(playedMs)),
      });
    }
  }

  updateSession(update: SessionUpdate): void {
    const session: Record<string, unknown> = {};
    const before = this.speech;
    this.speech = updatedSpeech(before, { ...update, voiceId: undefined });
    if (update.systemPrompt !== undefined) this.systemPrompt = update.systemPrompt;
    if (
      update.systemPrompt !== undefined ||
      update.pronunciations !== undefined ||
      update.boostedKeywords !== undefined
    ) {
      session.instructions = realtimeInstructions(this.speech, this.systemPrompt);
    }
    if (update.defaultLanguage !== undefined && update.defaultLanguage !== before.defaultLanguage)
      session.input_audio_transcription = this.transcription();
    if (update.tools !== undefined) session.tools = realtimeTools(update.tools);
    if (Object.keys(session).length > 0) this.send({ type: 'session.update', session });
    if (update.voiceId !== undefined) this.changeVoice(update.voiceId);
    if (update.systemMessage !== undefined) {
      this.send({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'system', content: [{ type: 'input_text', text: update.systemMessage }] },
      });
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    const ws = this.ws;
    if (!ws || ws.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      ws.once('close', () => resolve());
      ws.close(1000, 'conversation ended');
    });
  }

  /**
   * A voice change in a session.update of its own, so that a refusal costs nothing else of an update. Once the
   * session has produced audio the protocol refuses it: the voice stays, as it would after the refusal.
   */
  private changeVoice(voiceId: string): void {
    const current = this.speech.voiceId;
    if (voiceId === current) return;
    const voice = this.options.voiceFor(voiceId);
    if (voice === this.options.voiceFor(current)) {
      this.speech = { ...this.speech, voiceId };
      return;
    }
    if (this.audioProduced) {
      this.options.log.warn(
        { conversationId: this.session.conversationId, voiceId, kept: current },
        'realtime: no voice change once the session has produced audio (protocol); the voice stays',
      );
      return;
    }
    this.voiceBeforeChange ??= current;
    this.speech = { ...this.speech, voiceId };
    this.send({ type: 'session.update', session: { voice } });
  }

  /** The server refused the voice change (audio it produced crossed our update): the old voice stays. */
  private voiceRefused(): void {
    const kept = this.voiceBeforeChange ?? this.speech.voiceId;
    this.voiceBeforeChange = null;
    this.options.log.warn(
      { conversationId: this.session.conversationId, voiceId: this.speech.voiceId, kept },
      'realtime: the server refused the voice change (audio already produced); the voice stays',
    );
    this.speech = { ...this.speech, voiceId: kept };
  }

  private transcription(): Record<string, unknown> {
    return { model: this.options.transcriptionModel ?? 'whisper-1', language: this.speech.defaultLanguage };
  }

  private sessionConfig(): Record<string, unknown> {
    return {
      instructions: realtimeInstructions(this.speech, this.systemPrompt),
      voice: this.options.voiceFor(this.speech.voiceId),
      input_audio_format: 'pcm16',
      output_audio_format: 'pcm16',
      input_audio_transcription: this.transcription(),
      turn_detection: this.options.turnDetection === 'server' ? { type: 'server_vad' } : null,
      tools: realtimeTools(this.session.tools),
      tool_choice: 'auto',
    };
  }

  /** response.create; the id is ours at once, bound to the server's on response.created. */
  private request(response: Record<string, unknown> | undefined): ResponseId {
    const state: ResponseState = { id: `rt_${++this.seq}`, serverId: null, itemId: null, canceled: false };
    this.awaiting.push(state);
    this.byId.set(state.id, state);
    this.send(response ? { type: 'response.create', response } : { type: 'response.create' });
    return state.id;
  }

  private onEvent(event: ServerEvent): void {
    switch (event.type) {
      case 'response.created': {
        const serverId = String((event.response as { id?: string } | undefined)?.id ?? '');
        // A response we asked for, or one the server started itself (its VAD ended a turn).
        let state = this.awaiting.shift();
        if (!state) {
          state = { id: `rt_${++this.seq}`, serverId: null, itemId: null, canceled: false };
          this.byId.set(state.id, state);
        }
        state.serverId = serverId;
        this.byServerId.set(serverId, state);
        return;
      }
      case 'response.audio.delta':
      case 'response.output_audio.delta': {
        this.audioProduced = true;
        const state = this.live(event);
        if (!state) return;
        if (!state.itemId && typeof event.item_id === 'string') state.itemId = event.item_id;
        const bytes = Buffer.from(textOf(event.delta), 'base64');
        const pcm = new Int16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 1);
        // Buffer.from may hand out an unaligned pool slice; an Int16Array needs an even offset.
        this.hooks.onAssistantAudio(
          state.id,
          bytes.byteOffset % 2 === 0 ? pcm : new Int16Array(Uint8Array.from(bytes).buffer, 0, bytes.byteLength >> 1),
        );
        return;
      }
      case 'response.audio_transcript.delta':
      case 'response.output_audio_transcript.delta':
      case 'response.text.delta':
      case 'response.output_text.delta': {
        const state = this.live(event);
        if (state) this.hooks.onAssistantText(state.id, textOf(event.delta));
        return;
      }
      case 'response.function_call_arguments.done': {
        const state = this.live(event);
        if (!state) return;
        let args: Record<string, unknown>;
        try {
          const parsed: unknown = JSON.parse(textOf(event.arguments, '{}'));
          args =
            typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
              ? (parsed as Record<string, unknown>)
              : {};
        } catch (err) {
          this.options.log.warn(
            { err, name: event.name, conversationId: this.session.conversationId },
            'realtime: tool call arguments are not JSON; called with none',
          );
          args = {};
        }
        const callId = String(event.call_id);
        let open = state.openCalls;
        if (!open)
          open = state.openCalls = { calls: new Set(), respond: false, speechOnly: false, responseDone: false };
        open.calls.add(callId);
        this.openCalls.set(callId, open);
        this.hooks.onToolCall({ responseId: state.id, callId, name: String(event.name), arguments: args });
        return;
      }
      case 'response.done': {
        const serverId = String((event.response as { id?: string } | undefined)?.id ?? '');
        const state = this.byServerId.get(serverId);
        if (!state) return;
        this.byServerId.delete(serverId);
        this.byId.delete(state.id);
        const status = (event.response as { status?: string }).status;
        if (status === 'failed') {
          const detail = JSON.stringify((event.response as { status_details?: unknown }).status_details ?? null);
          return this.fail(new EngineError(`response failed: ${detail}`, OPENAI_REALTIME_ENGINE));
        }
        if (!state.canceled) this.hooks.onResponseDone(state.id);
        if (state.openCalls) {
          state.openCalls.responseDone = true;
          this.replyAfterOutputs(state.openCalls);
        }
        return;
      }
      case 'conversation.item.input_audio_transcription.delta':
        this.inputTranscript += textOf(event.delta);
        this.hooks.onInputTranscript(this.inputTranscript, false);
        return;
      case 'conversation.item.input_audio_transcription.completed':
        this.inputTranscript = '';
        this.hooks.onInputTranscript(textOf(event.transcript).trim(), true);
        return;
      case 'conversation.item.input_audio_transcription.failed':
        this.inputTranscript = '';
        this.options.log.warn(
          { error: event.error, conversationId: this.session.conversationId },
          'realtime: user audio not transcribed',
        );
        this.hooks.onInputTranscript('', true);
        return;
      case 'error': {
        const code = (event.error as { code?: string } | undefined)?.code;
        if (code === CANNOT_UPDATE_VOICE) return this.voiceRefused();
        if (code && BENIGN_ERROR_CODES.has(code)) {
          this.options.log.debug(
            { code, conversationId: this.session.conversationId },
            'realtime: request raced with the response end',
          );
          if (code === 'conversation_already_has_active_response') {
            // The latest response.create was refused: it will never be created; it is done, having said nothing.
            const refused = this.awaiting.pop();
            if (refused) {
              this.byId.delete(refused.id);
              if (!refused.canceled) this.hooks.onResponseDone(refused.id);
            }
          }
          return;
        }
        return this.fail(new EngineError(`server error: ${errorText(event)}`, OPENAI_REALTIME_ENGINE));
      }
      case 'session.updated':
        // The full effective configuration: once it carries the new voice, the change is confirmed.
        if (
          this.voiceBeforeChange !== null &&
          (event.session as { voice?: unknown } | undefined)?.voice === this.options.voiceFor(this.speech.voiceId)
        ) {
          this.voiceBeforeChange = null;
        }
        return;
      default:
        return; // rate_limits.updated, speech_started, ...: nothing to do
    }
  }

  /** The response an event belongs to, unless it was canceled. */
  private live(event: ServerEvent): ResponseState | null {
    const state = this.byServerId.get(textOf(event.response_id));
    return state && !state.canceled ? state : null;
  }

  private send(event: Record<string, unknown>): void {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN || this.failed) return;
    ws.send(JSON.stringify(event));
  }

  private fail(err: EngineError): void {
    if (this.failed || this.closing) return;
    this.failed = true;
    this.options.log.warn({ err, conversationId: this.session.conversationId }, 'realtime engine failed');
    this.hooks.onError(err);
    this.closing = true;
    this.ws?.terminate();
  }
}

function errorText(event: ServerEvent): string {
  const e = event.error as { message?: string; code?: string; type?: string } | undefined;
  return `${e?.message ?? 'unknown error'}${e?.code ? ` (${e.code})` : ''}`;
}

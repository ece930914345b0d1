// What a conversation needs from its host, and what the host may ask of a conversation (docs/ARCHITECTURE.md,
// "Layers"). The realtime transport (STS WebSocket) and telephony (a phone call's media) implement
// ConversationClient, and ConversationStore, in a media worker. The conversation engine (src/conversation/) knows
// nothing of sockets, threads or SQL: only these interfaces and the domain's types.
import type { AnsweredBy } from './answered-by.js';
import type { ConfigurationEndpoint } from '../schemas/agents.js';
import type { EndedBy, RtpAnalysis } from '../schemas/conversations.js';
import type { ConfigMessage, ServerEvent, SessionMessage } from '../schemas/sts.js';
import type { SpeechEngine } from '../engines/engine.js';
import type { WebSearch } from '../engines/web-search.js';
import type { ResolvedAgent } from '../domain/conversation-agent.js';
import type { Admission } from '../store/leases.js';
import type { Finish, FinishOutcome, NewConversation, NewItem, NewRecording } from '../store/conversations.js';
import type { PacedStream } from '../media/pacing-clock.js';
import type { RecordingCompressor } from '../media/recording-compressor.js';
import type { PlanarBlockSink } from '../media/recording.js';
import type { Logger } from '../log.js';
import type { PhoneTransferHooks, PhoneTransferRequest, PhoneTransferResult } from './tools/phone-transfer.js';

/** The far end of one conversation: the STS socket (or a phone call). */
export interface ConversationClient {
  /** One server event (the transport serialises it; JSON text frame on the STS socket). */
  send(event: ServerEvent): void;
  /**
   * One 20 ms frame of assistant audio, already encoded in the conversation's output format, with the text
   * spoken in it ('' for none). The bytes are lent for the duration of the call only. Returns false when the
   * client is backed up and the frame was NOT sent: the conversation keeps it and offers it again on a later
   * tick (so a slow client holds at most the conversation's bounded queue, never more).
   */
  sendAudio(frame: Uint8Array, text: string): boolean;
  /** The conversation is over (its record is being saved): close the far end. Called once. */
  close(code: number, reason: string): void;
  /**
   * The media's own account of the conversation for the record's analysis, asked once as it ends (before the record
   * is saved): a phone call's RTP statistics. Absent, or null, where there is none (the STS socket).
   */
  mediaStats?(): RtpAnalysis | null;
  /**
   * A phone call's transfer (built_in_transfer_to_phone_number, docs/telephony.md "Transfers"): resolves once the
   * agent's part in it has settled. Absent where there is no call to transfer (the STS socket).
   */
  transferCall?(request: PhoneTransferRequest, hooks: PhoneTransferHooks): Promise<PhoneTransferResult>;
}

/** A change of a live conversation's record (its state as it starts, what its configuration resolved to). */
export interface ConversationPatch {
  state?: 'configuring' | 'ready' | 'active';
  external_id?: string | null;
  started_at?: Date;
  settings?: NewConversation['settings'];
  /** Keys merged into the record's metadata (the others it holds stay): a call's answering-machine result. */
  metadata?: Record<string, unknown>;
}

/**
 * Whether a store call failed because the database is unavailable (or main did not answer in time): a status of 503
 * or 504 on the error, as the host's errors carry (src/workers/main-client.ts MainRequestError). Such a write may
 * succeed if made again; any other failure will not.
 */
export function storeUnavailable(err: unknown): boolean {
  const status = (err as { status?: unknown } | null)?.status;
  return status === 503 || status === 504;
}

/**
 * What a conversation asks of the stored configuration and its record (the host answers: main, over the worker
 * protocol). A failed call rejects with an error whose `status` (HTTP's numbers) says what kind of failure it was
 * (storeUnavailable); its message is for the log, never for the client.
 */
export interface ConversationStore {
  resolveAgent(orgId: string, project: string, agent: string): Promise<ResolvedAgent | null>;
  resolveProject(orgId: string, project: string): Promise<{ id: string; name: string } | null>;
  resolveTools(orgId: string, projectId: string, names: string[]): Promise<ResolvedAgent['tools']>;
  admit(orgId: string, projectId: string, conversationId: string): Promise<Admission>;
  createConversation(conversation: NewConversation): Promise<{ conversationId: string }>;
  /** false: the conversation has ended meanwhile (e.g. canceled through the API); the engine stops. */
  updateConversation(conversationId: string, patch: ConversationPatch): Promise<{ updated: boolean }>;
  appendItems(conversationId: string, items: NewItem[]): Promise<{ itemIds: string[] }>;
  /**
   * `ended: false`: it had already ended (canceled); that ending stands, and only what it left empty is filled in
   * (transcripts, latencies, interruptions, task results) and the recordings stored. `recordingsStored`: the
   * recording rows were written (false when they were deleted meanwhile or nothing is retained).
   */
  finishConversation(conversationId: string, finish: Finish, recordings: NewRecording[]): Promise<FinishOutcome>;
}

/** What the record kept in memory of a delivered conversation (under zero data retention the store has none of it). */
export interface RecordContent {
  /** The live transcript, a line per turn. */
  liveTranscript: string | null;
  /** The items appended, with their text and their tool calls' bodies, under the ids they were stored with. */
  items: NewItem[];
}

/** One conversation's delivery of its artifacts to its agent's external storage policy (docs/external-storage.md). */
export interface ArtifactDelivery {
  /** Where the recording goes instead of a file; null: none is streamed (finish() reports why). */
  readonly recording: PlanarBlockSink | null;
  /**
   * Once the record is finished in the store: completes the recording's upload, uploads the record with `content`
   * and has each artifact's outcome recorded on the conversation. Never throws: a failure is an outcome.
   */
  finish(content: RecordContent): Promise<void>;
}

/** The host's external storage: starts the delivery of a conversation whose agent names a policy. */
export interface ExternalStorage {
  start(conversationId: string, policyName: string, sampleRate: number): Promise<ArtifactDelivery>;
}

/** Timers of one conversation: injected so tests run every timeout without sleeping. */
export interface ConversationTimers {
  /** Milliseconds since the epoch (timestamps of the record and of items). */
  now(): number;
  set(fn: () => void, delayMs: number): unknown;
  clear(handle: unknown): void;
}

/** The worker's one pacing clock (src/media/pacing-clock.ts PacingClock satisfies it). */
export interface PacingRegistry {
  register(stream: PacedStream): void;
  unregister(stream: PacedStream): void;
}

/** Everything a conversation uses that its host provides. */
export interface ConversationDeps {
  client: ConversationClient;
  store: ConversationStore;
  /** The engine that serves an agent's `vendor_model` (null: the default engine). */
  engineFor(vendorModel: string | null): SpeechEngine;
  timers: ConversationTimers;
  pacing: PacingRegistry;
  log: Logger;
  /**
   * HTTP for the configuration endpoint and webhook tools: URLs customers configure, so the host passes the guarded
   * client (src/net/guarded-fetch.ts); required so that no conversation calls them unguarded by omission.
   */
  fetch: typeof fetch;
  /** The web_search built-in's client (PARLEY_WEB_SEARCH_URL); absent or null: web_search is not offered. */
  webSearch?: WebSearch | null;
  /** PARLEY_DATA_DIR: recordings go under `<dataDir>/recordings/`. */
  dataDir: string;
  /** The worker's background gzip of finished `wav.gz` recordings (absent: they stay `.wav`). */
  recordingCompressor?: RecordingCompressor;
  /** Delivery to an agent's external storage policy (absent: a policy is ignored and nothing is delivered). */
  externalStorage?: ExternalStorage;
  /** PARLEY_ALLOW_PRIVATE_ENDPOINTS (inline settings are validated with it). */
  allowPrivateEndpoints: boolean;
  /** This node's id (stored on the conversation). */
  nodeId?: string | null;
}

/** Who opened the conversation and how. */
export interface ConversationOrigin {
  orgId: string;
  origin: NewConversation['origin'];
  callInfo?: NewConversation['call_info'];
}

/** The audio formats of a phone call: its codec's, both directions (src/telephony). */
export type CallAudioFormat = 'mulaw_8000' | 'alaw_8000' | 'opus_48000';

/**
 * A phone call's start: main answered (or placed) it, resolved the agent and admitted the conversation; the origin
 * and call_info are the conversation's ConversationOrigin.
 */
export interface CallStart {
  /** Admitted against the project's cap already: the record takes this id and the conversation does not admit. */
  conversationId: string;
  agent: ResolvedAgent;
  /** The call's codec: the conversation's input and output format. */
  format: CallAudioFormat;
  /** The phone number's configuration endpoint, called in place of the agent's; null: the agent's, if any. */
  configurationEndpoint: ConfigurationEndpoint | null;
  /** An outbound call config's fields over the agent's settings (as a `config` message's would be); null: none. */
  overrides: Record<string, unknown> | null;
  /**
   * listen_only_inbound_enabled applies (an inbound call to an agent with it): listen_only_inbound_message is spoken
   * uninterruptibly, then the conversation only transcribes (no reply, poke or backchannel).
   */
  listenOnly: boolean;
  /**
   * An outbound call's answering-machine detection, settling once known (a machine: after its beep). The engine is
   * told the outcome (a system message) before the conversation first speaks, and the record keeps it; absent or
   * null: no detection.
   */
  answeredBy?: Promise<AnsweredBy> | null;
}

export type { AnsweredBy };

/** How the conversation is configured: an STS `config` message, or a phone call. */
export type ConversationStart = { kind: 'config'; config: ConfigMessage } | { kind: 'call'; call: CallStart };

/** Watches a live conversation (the observer socket): the client's events, and audio of both sides. */
export interface ConversationObserver {
  event(event: ServerEvent): void;
  /** PCM at `sampleRate` (the engine's), lent for the call only. */
  audio(side: 'user' | 'assistant', pcm: Int16Array, sampleRate: number): void;
  /** The conversation ended. */
  closed(endedBy: EndedBy): void;
}

/** How the far end is closed when a conversation is ended from outside (a shutdown): code and reason. */
export interface EndClose {
  code: number;
  reason: string;
}

/** What the host may ask of a live conversation (src/conversation/conversation.ts implements it). */
export interface LiveConversation {
  /** Set once the record exists (after `conversation_created`). */
  readonly id: string | null;
  /** Configures, admits, creates the record, opens the engine and starts; resolves when ready or ended. */
  start(start: ConversationStart): Promise<void>;
  /** A client message after `config` (already validated with the sts schemas). */
  handle(message: SessionMessage): void;
  /**
   * Raw input audio in the negotiated input format (a decoded audio_chunk, an RTP payload): bytes[offset, offset +
   * length), lent for the call only.
   */
  pushAudio(bytes: Uint8Array, offset?: number, length?: number): void;
  /** One 20 ms frame of input lost on the way (telephony): the inbound chain conceals it. */
  pushLost(): void;
  /** A binary frame: raw input audio in the negotiated input format; its buffer is lent for this call only. */
  pushAudioFrame(data: ArrayBuffer): void;
  /**
   * Keys the caller pressed (telephony), as they arrive (one digit each for RFC 4733 and in-band DTMF). A run of keys
   * is one user input: it ends at `#` or after DTMF_ENTRY_END_MS without another key; it is then recorded as a user
   * item and answered by the engine (listen-only: recorded only).
   */
  pushDtmf(digits: string): void;
  /**
   * The client's connection dropped and it may come back (the reconnect grace): the conversation goes on; if it ends
   * before clientReturned, with ended_by `user`, it ended when the client left (its ended_at and duration).
   */
  clientDropped(): void;
  /** The client came back (a reconnect within the grace period). */
  clientReturned(): void;
  /** The client went away for good: ends with ended_by `user` (at its leaving, after clientDropped). */
  clientGone(): void;
  /** A reconnecting client takes over the conversation (reconnect within the grace period). */
  replaceClient(client: ConversationClient): void;
  observe(observer: ConversationObserver): () => void;
  /**
   * Ends it now (shutdown, hang-up, a cancel) and saves the record; the far end is closed with `closeWith`, else
   * 1000 (1011 for ended_by `error`) with ended_by as the reason.
   */
  end(endedBy: EndedBy, closeWith?: EndClose): Promise<void>;
  /** Resolves once the conversation has ended and its record is saved. */
  readonly ended: Promise<EndedBy>;
}

// The contract between main and the media workers (docs/ARCHITECTURE.md, "Worker protocol"): only main talks to
// the database; a worker asks main over its MessagePort. The STS WebSocket and telephony both use it. Values cross
// by structured clone (Dates survive, class instances do not).
import type { Auth } from '../auth/authenticate.js';
import type { Admission } from '../store/leases.js';
import type { Finish, FinishOutcome, NewConversation, NewItem, NewRecording } from '../store/conversations.js';
import type { CompressedRecording } from '../media/recording-compressor.js';
import type { RecordingSide } from '../schemas/conversations.js';
import type { ConversationPatch } from '../conversation/host.js';
import type { ResolvedAgent } from '../domain/conversation-agent.js';
import type { ConfigurationEndpoint } from '../schemas/agents.js';
import type { CallInfo, EndedBy } from '../schemas/conversations.js';

/** Requests a worker makes of main; each is answered by exactly one `reply` with the same `id`. */
export type WorkerRequest =
  | { type: 'authenticate'; id: number; secret: string; clientAddress: string }
  | { type: 'resolve_agent'; id: number; orgId: string; project: string; agent: string }
  | { type: 'resolve_project'; id: number; orgId: string; project: string }
  | { type: 'resolve_tools'; id: number; orgId: string; projectId: string; names: string[] }
  | { type: 'admit'; id: number; orgId: string; projectId: string; conversationId: string }
  | { type: 'create_conversation'; id: number; conversation: NewConversation }
  | { type: 'update_conversation'; id: number; conversationId: string; patch: ConversationPatch }
  | { type: 'append_items'; id: number; conversationId: string; items: NewItem[] }
  | { type: 'finish_conversation'; id: number; conversationId: string; finish: Finish; recordings: NewRecording[] }
  /**
   * A finished recording's `.wav` (path `from`, as its row stores it) was gzipped in the background: move the row
   * to `to`, only while it still points at `from` (compare-and-set; `updated: false` when the recording was
   * deleted or replaced meanwhile: the worker then removes the `.gz`, on true the `.wav`).
   */
  | { type: 'recording_compressed'; id: number; conversationId: string; side: RecordingSide; from: string; to: CompressedRecording };

/** What each request answers with, by type. */
export interface WorkerReplies {
  authenticate: Auth | null;
  resolve_agent: ResolvedAgent | null;
  resolve_project: { id: string; name: string } | null;
  resolve_tools: ResolvedAgent['tools'];
  admit: Admission;
  create_conversation: { conversationId: string };
  update_conversation: { updated: boolean };
  append_items: { itemIds: string[] };
  /**
   * `ended`: this request ended the conversation (false when it had ended already, e.g. canceled through the API:
   * the earlier ending stands and only what it left empty was filled in). `recordingsStored`: the recording rows were
   * written (also after a cancel; not when the recordings were deleted or nothing is retained).
   */
  finish_conversation: FinishOutcome;
  recording_compressed: { updated: boolean };
}

export type Reply =
  | { type: 'reply'; id: number; ok: true; value: unknown }
  | { type: 'reply'; id: number; ok: false; error: { message: string; status?: number; code?: string } };

/** One socket of a worker as `inspect` reports it: what it holds unsent (docs/sts-protocol.md, "Backpressure"). */
export interface SocketInspection {
  kind: 'sts' | 'observer';
  /** The conversation it talks to or observes; null while an STS socket is still configuring. */
  conversationId: string | null;
  /** The socket is here, its conversation on another worker. */
  relayed: boolean;
  /** Bytes uWS holds for the socket beyond what the kernel took. */
  bufferedBytes: number;
  /** Assistant audio is paused until the socket drains. */
  audioPaused: boolean;
}

/** Notices a worker sends main without expecting an answer. */
export type WorkerNotice =
  | { type: 'worker_ready'; workerId: number; port: number }
  | { type: 'conversation_opened'; workerId: number; conversationId: string; orgId: string }
  | { type: 'conversation_closed'; workerId: number; conversationId: string }
  | { type: 'load'; workerId: number; conversations: number }
  /** Data for a socket relayed through main (observer or reconnect socket that landed on another worker). */
  | { type: 'relay_to_socket'; relayId: number; data: string | ArrayBuffer; binary: boolean }
  | { type: 'relay_closed'; relayId: number; code: number; reason: string }
  /**
   * Flow control of a relayed socket, from the worker that holds it to the owner of its conversation: paused once
   * the socket holds more than the audio high-water mark unsent, resumed when it drained (docs/sts-protocol.md,
   * "Backpressure"); the owner offers audio only while it is not paused.
   */
  | { type: 'relay_flow'; relayId: number; paused: boolean }
  /** A socket on this worker needs a conversation another worker owns. */
  | { type: 'relay_request'; relayId: number; conversationId: string; kind: RelayKind; auth: Auth }
  | { type: 'relay_from_socket'; relayId: number; data: string | ArrayBuffer; binary: boolean }
  /** The answer to main's `inspect`. */
  | { type: 'inspection'; id: number; workerId: number; sockets: SocketInspection[] }
  | CallNotice;

export type RelayKind = 'observer' | 'reconnect';

/** Messages main sends a worker. */
export type MainMessage =
  | Reply
  | { type: 'relay_open'; relayId: number; conversationId: string; kind: RelayKind; auth: Auth }
  | { type: 'relay_from_socket'; relayId: number; data: string | ArrayBuffer; binary: boolean }
  | { type: 'relay_to_socket'; relayId: number; data: string | ArrayBuffer; binary: boolean }
  | { type: 'relay_closed'; relayId: number; code: number; reason: string }
  | { type: 'relay_flow'; relayId: number; paused: boolean }
  | CallMessage
  /** Operators and tests: report every socket's buffered bytes (answered by `inspection` with the same id). */
  | { type: 'inspect'; id: number }
  | { type: 'shutdown'; graceMs: number };

export type WorkerMessage = WorkerRequest | WorkerNotice;

// ---- telephony: main signals (SIP), the worker runs the call's media and conversation ----

/** Where a peer receives RTP: an IP address and a UDP port. */
export interface MediaAddress {
  address: string;
  port: number;
}

/**
 * A call's negotiated stream as the media worker runs it (RFC 3264 offer/answer): the codec and its payload type,
 * RFC 4733 telephone-event's payload type (null: none negotiated), the packetization and the stream's direction.
 * src/telephony/media-policy.ts makes it from sip/'s negotiated media.
 */
export interface CallMedia {
  codec: 'PCMU' | 'PCMA' | 'opus';
  payloadType: number;
  clockRate: number;
  channels: number;
  telephoneEventPayloadType: number | null;
  ptimeMs: number;
  direction: 'sendrecv' | 'sendonly' | 'recvonly' | 'inactive';
}

/** Where the call came from: the record's `origin`. */
export type CallOrigin = 'telephony-inbound' | 'telephony-outbound';

/**
 * Why main ends a call: `bye` the peer hung up; `cancel` the caller gave up before the answer; `shutdown` the node
 * stops; `failed` the call could not be set up or connected (an outbound call's failure, a lost answer).
 */
export type CallHangupReason = 'bye' | 'cancel' | 'shutdown' | 'failed';

/** Telephony messages main sends a worker. `callId` is Parley's own id of the call, unique per node. */
export type CallMessage =
  /**
   * A call this worker runs from now on: it binds `rtpPort` (even) and `rtpPort + 1` (RTCP, RFC 3550 11) and answers
   * call_media_ready. `remote` is null until the peer's SDP is known (an outbound call before its answer). The
   * conversation id is admitted against the project's cap by main already.
   */
  | {
      type: 'call_assigned';
      callId: string;
      conversationId: string;
      rtpPort: number;
      remote: MediaAddress | null;
      media: CallMedia;
      agent: ResolvedAgent;
      origin: CallOrigin;
      callInfo: CallInfo;
      /** The dialled number's configuration endpoint (inbound calls), asked in place of the agent's; null: none. */
      configurationEndpoint: ConfigurationEndpoint | null;
      /** The outbound call config's fields over the agent's settings (outbound calls); null: none. */
      overrides: Record<string, unknown> | null;
      /** The agent's listen_only_inbound_enabled applies (an inbound call to such an agent). */
      listenOnly: boolean;
    }
  /** A re-INVITE or UPDATE (new address, hold, resume), or an outbound call's answer. */
  | { type: 'call_media_update'; callId: string; remote: MediaAddress | null; media: CallMedia }
  /** The call is answered (200 OK sent or received): the conversation starts. */
  | { type: 'call_start'; callId: string }
  | { type: 'call_hangup'; callId: string; reason: CallHangupReason }
  /** Digits from a SIP INFO (application/dtmf-relay or application/dtmf), in order. */
  | { type: 'call_dtmf'; callId: string; digits: string };

/** Telephony notices a worker sends main. */
export type CallNotice =
  /** The answer to call_assigned: the ports are bound (ok), or why not (main tries another port once, then refuses). */
  | { type: 'call_media_ready'; callId: string; ok: true }
  | { type: 'call_media_ready'; callId: string; ok: false; error: string }
  /**
   * Once per call_assigned the worker accepted, when the call is over and its ports are closed: after its record is
   * saved when it had started (`started`: a record exists). main then sends BYE if the dialog is still up, frees the
   * ports, and releases the conversation's lease when no record was made.
   */
  | { type: 'call_ended'; callId: string; conversationId: string; endedBy: EndedBy; started: boolean };

// The contract between main and the media workers (docs/ARCHITECTURE.md, "Worker protocol"): only main talks to
// the database; a worker asks main over its MessagePort. The STS WebSocket and telephony both use it. Values cross
// by structured clone (Dates survive, class instances do not).
import type { Auth } from '../auth/authenticate.js';
import type { Admission } from '../store/leases.js';
import type { Finish, FinishOutcome, NewConversation, NewItem, NewRecording } from '../store/conversations.js';
import type { CompressedRecording } from '../media/recording-compressor.js';
import type { CallInfo, EndedBy, RecordingSide } from '../schemas/conversations.js';
import type { ConfigurationEndpoint } from '../schemas/agents.js';
import type { AnsweredBy, ConversationPatch } from '../conversation/host.js';
import type { PhoneTransferRequest, PhoneTransferResult } from '../conversation/tools/phone-transfer.js';
import type { ResolvedAgent } from '../domain/conversation-agent.js';
import type { StoragePolicyRef, StorageOutcome } from '../store/external-storage.js';
import type { StoragePolicy } from '../jobs/external-storage/s3-client.js';
import type { Conversation } from '../schemas/conversations.js';
import type { WorkerMetricsSnapshot } from '../metrics/media.js';

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
  | {
      type: 'recording_compressed';
      id: number;
      conversationId: string;
      side: RecordingSide;
      from: string;
      to: CompressedRecording;
    }
  // External storage (docs/external-storage.md), answered only to the worker that owns the conversation (403
  // otherwise): the policy of the conversation's project that `ref` names, credentials included, asked at the start
  // by name and before every request by id (rotated credentials apply at once); an artifact's outcome (never its
  // content); the stored record the delivered JSON is built on.
  | { type: 'storage_policy'; id: number; conversationId: string; ref: StoragePolicyRef }
  | { type: 'storage_outcome'; id: number; outcome: StorageOutcome }
  | { type: 'stored_record'; id: number; conversationId: string };

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
  /** null: the project has no such policy. */
  storage_policy: StoragePolicy | null;
  /** false: the conversation is gone. */
  storage_outcome: { recorded: boolean };
  /** The Conversation record as the API shows it (audio_url null), or null when it is gone. */
  stored_record: Conversation | null;
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
  /** The worker's metrics (src/metrics/media.ts), posted periodically while metrics are exposed. */
  | { type: 'metrics'; workerId: number; snapshot: WorkerMetricsSnapshot }
  /**
   * While draining: what still runs here, conversations (starting ones included) and calls, sent at `drain` and at
   * every change; main stops the node once every worker reports 0 and SIP holds no call.
   */
  | { type: 'drain_progress'; workerId: number; live: number }
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
  /**
   * The conversation was canceled through the API (`POST /v1/conversations/{id}/cancel`; its record is ended
   * already): the worker that owns it ends it now and closes its socket.
   */
  | { type: 'conversation_cancel'; conversationId: string }
  /** Operators and tests: report every socket's buffered bytes (answered by `inspection` with the same id). */
  | { type: 'inspect'; id: number }
  /**
   * The node drains (SIGTERM): new STS conversations are refused (a socket not yet configured closes with 1012
   * `restarting`), live ones, reconnects and observers go on; the worker answers with drain_progress.
   */
  | { type: 'drain' }
  | { type: 'shutdown'; graceMs: number };

export type WorkerMessage = WorkerRequest | WorkerNotice;

// ---- telephony: main signals (SIP), the worker runs the call's media and conversation ----

/** An RTP peer: an IPv4 address (the media sockets are IPv4) and a UDP port. */
export interface MediaAddress {
  address: string;
  port: number;
}

/**
 * A call's media as the SDP offer/answer settled it (RFC 3264). Parley answers one audio codec; the worker sends and
 * receives that codec only.
 */
export interface CallMedia {
  /** RFC 3551 table 4 (PCMU, PCMA) or RFC 7587 (opus). The conversation's input and output format follow from it. */
  codec: 'PCMU' | 'PCMA' | 'opus';
  /** The codec's RTP payload type in this session (0 and 8 are static; opus is dynamic). */
  payloadType: number;
  /** RTP clock rate: 8000 for G.711, 48000 for opus (RFC 7587 4.1). */
  clockRate: number;
  /** Audio channels of the rtpmap (1 for G.711; opus is signalled as 2 and sent mono, RFC 7587 7). */
  channels: number;
  /** RFC 4733 telephone-event payload type, or null when none was negotiated (DTMF is then detected in the audio). */
  telephoneEventPayloadType: number | null;
  /**
   * The packetization the peer asked for (a=ptime, RFC 4566 6), in ms. Parley sends packets of the largest multiple
   * of 20 ms not above it (20 at least; opus always 20), and takes any packet size in.
   */
  ptimeMs: number;
  /**
   * The direction the peer's SDP states (RFC 3264 6.1, its own view): `sendonly` or `inactive` is hold and
   * `recvonly` a peer that sends nothing. The worker sends RTP while the peer receives (sendrecv, recvonly) and
   * counts RTP inactivity only while it sends (sendrecv).
   */
  direction: 'sendrecv' | 'sendonly' | 'recvonly' | 'inactive';
}

/** Where the call came from: the record's `origin`. */
export type CallOrigin = 'telephony-inbound' | 'telephony-outbound';

/**
 * Why main ends a call: `bye` the peer hung up (ended_by user); `cancel` the caller gave up before the answer, or
 * `failed` an outbound call that never connected (no conversation: the worker frees the ports); `shutdown` the node
 * stops (ended_by error, as for the STS conversations a shutdown ends). `failed` after the start ends it as error.
 */
export type CallHangupReason = 'bye' | 'cancel' | 'shutdown' | 'failed';

/** Telephony messages main sends a worker (in MainMessage). Every call is named by callId, Parley's id of the leg. */
export type CallMessage =
  /**
   * A call this worker runs from now on: it binds `rtpPort` (even) and `rtpPort + 1` (RTCP, RFC 3550 11) and answers
   * call_media_ready. `remote` is null until the peer's SDP is known (an outbound call before its answer).
   */
  | {
      type: 'call_assigned';
      callId: string;
      /** Admitted against the project's cap by main already: the conversation takes this id and does not admit. */
      conversationId: string;
      rtpPort: number;
      remote: MediaAddress | null;
      media: CallMedia;
      agent: ResolvedAgent;
      origin: CallOrigin;
      callInfo: CallInfo;
      /** The phone number's configuration endpoint (inbound calls), called in place of the agent's; null: none. */
      configurationEndpoint: ConfigurationEndpoint | null;
      /** The outbound call config's fields over the agent's (outbound calls); null: none. */
      overrides: Record<string, unknown> | null;
      /** The agent's listen_only_inbound_enabled applies (an inbound call). */
      listenOnly: boolean;
      /**
       * Answering-machine detection runs on the callee's audio from the answer (an outbound call): the conversation
       * first speaks once it is known (src/telephony/voicemail-detection.ts). Absent: false.
       */
      voicemailDetection?: boolean;
    }
  /** A re-INVITE (or an outbound call's answer): the peer's new address, codec parameters and direction (hold). */
  | { type: 'call_media_update'; callId: string; remote: MediaAddress | null; media: CallMedia }
  /** The call is answered (200 OK sent or received): the conversation starts. */
  | { type: 'call_start'; callId: string }
  | { type: 'call_hangup'; callId: string; reason: CallHangupReason }
  /** Digits from a SIP INFO (application/dtmf-relay or application/dtmf), in order. */
  | { type: 'call_dtmf'; callId: string; digits: string }
  /** A step of a phone transfer the worker asked for (TransferCommand). */
  | { type: 'call_transfer'; callId: string; command: TransferCommand };

/**
 * main's side of a phone transfer (docs/telephony.md, "Transfers"), for the transfer the worker asked for
 * (`transferId`). A bridged transfer: open_leg (bind the new leg's ports, answered by leg_ready), then bridge once
 * the target answered (with detect_voicemail the worker first screens the answer, leg_screened: a machine is not
 * bridged, and main dials again or settles), then leg_hangup when the target hangs up. `result` ends a transfer that has no bridge
 * (REFER completed, or nobody answered, or it failed), closing a leg that was opened.
 */
export type TransferCommand =
  | { kind: 'open_leg'; transferId: number; rtpPort: number }
  | {
      kind: 'bridge';
      transferId: number;
      remote: MediaAddress | null;
      media: CallMedia;
      attempts: number;
      referRefused: string | null;
    }
  | { kind: 'leg_hangup'; transferId: number }
  | { kind: 'result'; transferId: number; result: PhoneTransferResult };

/**
 * The worker's side: `request` starts a transfer (callerId: the number the new leg presents, per
 * use_agent_phone_number; agentNumber: the agent's number on this call, REFER's Referred-By; null when none); `leg_ready` answers open_leg; `leg_closed`: the worker closed
 * the leg's ports (the bridge ended or the transfer settled), main may reuse them and hangs the leg up.
 */
export type TransferEvent =
  | {
      kind: 'request';
      transferId: number;
      request: PhoneTransferRequest;
      callerId: string | null;
      agentNumber: string | null;
    }
  | { kind: 'leg_ready'; transferId: number; ok: true }
  | { kind: 'leg_ready'; transferId: number; ok: false; error: string }
  | { kind: 'leg_closed'; transferId: number }
  /** detect_voicemail: who answered the leg (after a bridge command); a machine is not bridged, main hangs it up. */
  | { kind: 'leg_screened'; transferId: number; answeredBy: AnsweredBy };

/** Telephony notices of a call's conversation that main carries out in SIP (in CallNotice). */
export type CallSignalNotice =
  /**
   * The keypad tool pressed keys on a call that negotiated no telephone-event: main sends them as SIP INFO
   * (application/dtmf-relay), one digit after another.
   */
  { type: 'call_dtmf_out'; callId: string; digits: string };

/** Telephony notices a worker sends main (in WorkerNotice). */
export type CallNotice =
  /** The answer to call_assigned: the ports are bound (ok), or why not (main tries another port, then refuses). */
  | { type: 'call_media_ready'; callId: string; ok: true }
  | { type: 'call_media_ready'; callId: string; ok: false; error: string }
  /**
   * Once per call_assigned, when the call is over and its ports are closed: after its record is saved when it had
   * started (`started`: a record exists), at once after a hang-up before the start (no record: main releases the
   * conversation's lease). main then sends BYE if the dialog is still up and frees the ports.
   */
  | { type: 'call_ended'; callId: string; conversationId: string; endedBy: EndedBy; started: boolean }
  | { type: 'call_transfer'; callId: string; event: TransferEvent }
  | CallSignalNotice;

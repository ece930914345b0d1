// The worker side of the worker protocol (src/workers/worker-protocol.ts): requests to main, each with its own
// id and a timeout, answered by one `reply`. Also the ConversationStore of src/conversation/host.ts over it.
import type { ConversationStore } from '../conversation/host.js';
import type { CompressionStore } from '../media/recording-compressor.js';
import type { StorageChannel } from '../jobs/external-storage/live-delivery.js';
import type { Reply, WorkerMessage, WorkerReplies, WorkerRequest } from './worker-protocol.js';

/** The one error type of this boundary: main answered with an error, or did not answer in time. */
export class MainRequestError extends Error {
  constructor(
    message: string,
    readonly requestType: WorkerRequest['type'],
    readonly status?: number,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'MainRequestError';
  }
}

/** What a worker posts on (its parentPort, or a MessagePort in tests). */
export interface MessageSink {
  postMessage(message: WorkerMessage): void;
}

export const MAIN_REQUEST_DEFAULTS = {
  /** A database round trip through main; beyond this the conversation is told it failed. */
  timeout_ms: 10_000,
  /**
   * The record's appends and finish, which main holds through a database outage (src/workers/main-handlers.ts
   * WRITE_HOLD, derived from this): the worker waits for main's answer longer than main holds them.
   */
  held_write_timeout_ms: 70_000,
} as const;

/** Requests main holds while the database is unavailable (MAIN_REQUEST_DEFAULTS.held_write_timeout_ms). */
const HELD_WRITES: ReadonlySet<WorkerRequest['type']> = new Set(['append_items', 'finish_conversation']);

type RequestType = WorkerRequest['type'];
type Payload<T extends RequestType> = Omit<Extract<WorkerRequest, { type: T }>, 'type' | 'id'>;

interface Pending {
  type: RequestType;
  resolve(value: unknown): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

export class MainClient {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  constructor(
    private readonly sink: MessageSink,
    private readonly timeoutMs: number = MAIN_REQUEST_DEFAULTS.timeout_ms,
    private readonly heldWriteTimeoutMs: number = MAIN_REQUEST_DEFAULTS.held_write_timeout_ms,
  ) {}

  request<T extends RequestType>(type: T, payload: Payload<T>): Promise<WorkerReplies[T]> {
    const id = this.nextId++;
    const timeoutMs = HELD_WRITES.has(type) ? this.heldWriteTimeoutMs : this.timeoutMs;
    return new Promise<WorkerReplies[T]>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new MainRequestError(`main did not answer ${type} within ${timeoutMs} ms`, type, 504, 'main_timeout'));
      }, timeoutMs);
      this.pending.set(id, { type, resolve: resolve, reject, timer });
      this.sink.postMessage({ ...payload, type, id } as unknown as WorkerRequest);
    });
  }

  /** A `reply` from main; an unknown id (timed out meanwhile) is ignored. */
  handleReply(reply: Reply): void {
    const p = this.pending.get(reply.id);
    if (!p) return;
    this.pending.delete(reply.id);
    clearTimeout(p.timer);
    if (reply.ok) p.resolve(reply.value);
    else p.reject(new MainRequestError(reply.error.message, p.type, reply.error.status, reply.error.code));
  }

  /** Requests still waiting (shutdown waits for finish_conversation to land). */
  get inFlight(): number {
    return this.pending.size;
  }

  /** Fails every waiting request (main went away). */
  failAll(message: string): void {
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new MainRequestError(message, p.type, 503, 'main_gone'));
      this.pending.delete(id);
    }
  }
}

/** The conversation's store: every method one request to main. */
export function conversationStore(main: MainClient): ConversationStore {
  return {
    resolveAgent: (orgId, project, agent) => main.request('resolve_agent', { orgId, project, agent }),
    resolveProject: (orgId, project) => main.request('resolve_project', { orgId, project }),
    resolveTools: (orgId, projectId, names) => main.request('resolve_tools', { orgId, projectId, names }),
    admit: (orgId, projectId, conversationId) => main.request('admit', { orgId, projectId, conversationId }),
    createConversation: (conversation) => main.request('create_conversation', { conversation }),
    updateConversation: (conversationId, patch) => main.request('update_conversation', { conversationId, patch }),
    appendItems: (conversationId, items) => main.request('append_items', { conversationId, items }),
    finishConversation: (conversationId, finish, recordings) =>
      main.request('finish_conversation', { conversationId, finish, recordings }),
  };
}

/** The recording compressor's store (src/media/recording-compressor.ts): the `recording_compressed` request. */
export function compressionStore(main: MainClient): CompressionStore {
  return {
    recordingCompressed: (conversationId, side, from, to) =>
      main.request('recording_compressed', { conversationId, side, from, to }),
  };
}

/** External storage's requests (src/jobs/external-storage/live-delivery.ts): the policy, outcomes, the stored record. */
export function storageChannel(main: MainClient): StorageChannel {
  return {
    policy: (conversationId, ref) => main.request('storage_policy', { conversationId, ref }),
    outcome: (outcome) => main.request('storage_outcome', { outcome }),
    storedRecord: (conversationId) => main.request('stored_record', { conversationId }),
  };
}

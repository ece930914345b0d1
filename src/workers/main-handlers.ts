// main's answers to the workers' requests (src/workers/worker-protocol.ts): the only place media workers reach
// the database, through the domain and the conversations repository. Item appends of all conversations are
// coalesced into shared statements (src/store/append-batcher.ts). A failure goes back as a `reply` with ok: false;
// domain errors are mapped here, once, to the status the worker acts on (403 refuses a socket's upgrade).
import type { Logger } from '../log.js';
import type { Sql } from '../store/db.js';
import { AllowlistCache, lookupCredential, type Auth } from '../auth/authenticate.js';
import { admitConversation } from '../domain/admission.js';
import { resolveAgentForConversation, resolveProjectForConversation, toolsForConversation } from '../domain/conversation-agent.js';
import { DomainError, forbidden, type DomainErrorKind } from '../domain/errors.js';
import type { LeasePolicy } from '../store/leases.js';
import {
  createConversation,
  finishConversation,
  getConversation,
  moveRecordingToCompressed,
  updateConversation,
} from '../store/conversations.js';
import { AppendBatcher, APPEND_BATCH_DEFAULTS, type AppendBatchOptions } from '../store/append-batcher.js';
import { conversationStoragePolicy, recordStorageOutcome } from '../store/external-storage.js';
import { storagePolicyFromRow } from '../jobs/external-storage/delivery.js';
import { wakeJobQueues } from '../jobs/queue.js';
import { raiseConversationEnd } from '../jobs/webhooks/conversation-events.js';
import type { Reply, WorkerReplies, WorkerRequest } from './worker-protocol.js';

export interface HandlerDeps {
  sql: Sql;
  policy: LeasePolicy;
  log: Logger;
  now(): Date;
  /** How item appends are coalesced (APPEND_BATCH_DEFAULTS when absent). */
  appendBatch?: AppendBatchOptions;
}

/** The workspace's ip_allowlist refused the client's address (the worker answers the upgrade with 403). */
const IP_NOT_ALLOWED = { code: 'ip_not_allowed', message: 'client address is not in the workspace ip_allowlist' } as const;

/** The status a worker reads off a failed reply, by kind (HTTP's: the STS upgrade answers with it). */
const STATUS_OF_KIND: Record<DomainErrorKind, number> = {
  invalid: 400,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  limit_reached: 429,
  unavailable: 503,
};

/** The worker a request came from, as main's directory knows it (src/workers/worker-pool.ts). */
export interface RequestOrigin {
  /** Whether that worker owns the live conversation `conversationId`. */
  owns(conversationId: string): boolean;
}

/** Requests about a conversation's external storage go to its owner only: they carry its policy's credentials. */
function ownedBy(from: RequestOrigin | undefined, conversationId: string): void {
  if (!from?.owns(conversationId)) throw forbidden(`this worker does not own conversation ${conversationId}`, 'not_owner');
}

export function createRequestHandler(deps: HandlerDeps): (req: WorkerRequest, from?: RequestOrigin) => Promise<Reply> {
  const { sql, policy } = deps;
  const allowlists = new AllowlistCache();
  const appends = new AppendBatcher(sql, deps.log, deps.appendBatch ?? APPEND_BATCH_DEFAULTS);

  async function answer(req: WorkerRequest, from: RequestOrigin | undefined): Promise<WorkerReplies[WorkerRequest['type']]> {
    switch (req.type) {
      case 'authenticate': {
        const cred = await lookupCredential(sql, req.secret, deps.now());
        if (!cred) return null satisfies Auth | null;
        if (!allowlists.allows(cred.ipAllowlist, req.clientAddress)) throw forbidden(IP_NOT_ALLOWED.message, IP_NOT_ALLOWED.code);
        return cred.auth;
      }
      case 'resolve_agent':
        return resolveAgentForConversation(sql, req.orgId, req.project, req.agent);
      case 'resolve_project':
        return resolveProjectForConversation(sql, req.orgId, req.project);
      case 'resolve_tools':
        return toolsForConversation(sql, req.orgId, req.projectId, req.names);
      case 'admit':
        return admitConversation(sql, policy, req.orgId, req.projectId, req.conversationId);
      case 'create_conversation':
        return { conversationId: await createConversation(sql, req.conversation) };
      case 'update_conversation':
        return { updated: await updateConversation(sql, req.conversationId, req.patch) };
      case 'append_items':
        return { itemIds: await appends.append(req.conversationId, req.items) };
      case 'finish_conversation': {
        // The end's webhook events commit with the finish; its post-call jobs and deliveries run at once.
        const outcome = await finishConversation(sql, req.conversationId, req.finish, req.recordings, { onFirstFinish: raiseConversationEnd });
        wakeJobQueues();
        return outcome;
      }
      case 'recording_compressed':
        return { updated: await moveRecordingToCompressed(sql, req.conversationId, req.side, req.from, req.to) };
      case 'storage_policy': {
        ownedBy(from, req.conversationId);
        const row = await conversationStoragePolicy(sql, req.conversationId, req.ref);
        return row && storagePolicyFromRow(row);
      }
      case 'storage_outcome':
        ownedBy(from, req.outcome.conversation_id);
        return { recorded: await recordStorageOutcome(sql, req.outcome) };
      case 'stored_record': {
        ownedBy(from, req.conversationId);
        return (await getConversation(sql, req.conversationId))?.record ?? null;
      }
    }
  }

  return async (req, from) => {
    try {
      return { type: 'reply', id: req.id, ok: true, value: await answer(req, from) };
    } catch (err) {
      if (err instanceof DomainError) {
        return { type: 'reply', id: req.id, ok: false, error: { message: err.message, status: STATUS_OF_KIND[err.kind], code: err.code } };
      }
      deps.log.error({ err, request: req.type }, 'worker request failed');
      return { type: 'reply', id: req.id, ok: false, error: { message: (err as Error).message } };
    }
  };
}

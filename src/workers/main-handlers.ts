// main's answers to the workers' requests (src/workers/worker-protocol.ts): the only place media workers reach
// the database, through the domain and the conversations repository. Item appends of all conversations are
// coalesced into shared statements (src/store/append-batcher.ts). A failure goes back as a `reply` with ok: false;
// errors are mapped here, once, to the status and code the worker acts on (403 refuses a socket's upgrade, 503 is
// a database that is unavailable); a message of the database itself never goes to a worker (it could reach a client).
//
// The record's writes outlive a database outage: appends are held and sent again in order (append-batcher.ts), and a
// finish waits for its conversation's appends, then is tried again while the database is unavailable, within the
// same bound (WRITE_HOLD), so a finish never lands before the items it follows. A conversation whose record could not
// be created has its lease released here, at once: no record exists for anyone to finish.
import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import type { Logger } from '../log.js';
import { isDatabaseUnavailable, type Sql } from '../store/db.js';
import { AllowlistCache, lookupCredential, type Auth } from '../auth/authenticate.js';
import { admitConversation } from '../domain/admission.js';
import {
  resolveAgentForConversation,
  resolveProjectForConversation,
  toolsForConversation,
} from '../domain/conversation-agent.js';
import { DomainError, forbidden, type DomainErrorKind } from '../domain/errors.js';
import { release, type LeasePolicy } from '../store/leases.js';
import {
  createConversation,
  finishConversation,
  getConversation,
  moveRecordingToCompressed,
  updateConversation,
} from '../store/conversations.js';
import {
  AppendBatcher,
  APPEND_BATCH_DEFAULTS,
  APPEND_HOLD_DEFAULTS,
  type AppendBatchOptions,
  type AppendHoldOptions,
} from '../store/append-batcher.js';
import { conversationStoragePolicy, recordStorageOutcome } from '../store/external-storage.js';
import { storagePolicyFromRow } from '../jobs/external-storage/delivery.js';
import { wakeJobQueues } from '../jobs/queue.js';
import { raiseConversationEnd } from '../jobs/webhooks/conversation-events.js';
import { MAIN_REQUEST_DEFAULTS } from './main-client.js';
import { nodeMetrics } from '../metrics/node.js';
import type { Reply, WorkerReplies, WorkerRequest } from './worker-protocol.js';

/**
 * How long the record's writes are held through a database outage: within the worker's wait for them
 * (MAIN_REQUEST_DEFAULTS.held_write_timeout_ms), so the worker hears main's answer rather than its own timeout.
 */
export const WRITE_HOLD: AppendHoldOptions = {
  ...APPEND_HOLD_DEFAULTS,
  max_hold_ms: MAIN_REQUEST_DEFAULTS.held_write_timeout_ms - MAIN_REQUEST_DEFAULTS.timeout_ms,
};

/** What a worker is told when the database is unavailable, or refused a value, or failed otherwise. */
const UNAVAILABLE = { message: 'the database is unavailable', status: 503, code: 'database_unavailable' } as const;
const REFUSED_VALUE = { message: 'a value could not be stored', status: 400, code: 'invalid_value' } as const;
const INTERNAL = { message: 'internal error', status: 500, code: 'internal_error' } as const;

/** SQLSTATE class 22, data exception (PostgreSQL docs, Appendix A): a value the database cannot store. */
function refusedValue(err: unknown): boolean {
  return err instanceof postgres.PostgresError && err.code.startsWith('22');
}

export interface HandlerDeps {
  sql: Sql;
  policy: LeasePolicy;
  log: Logger;
  now(): Date;
  /** How item appends are coalesced (APPEND_BATCH_DEFAULTS when absent). */
  appendBatch?: AppendBatchOptions;
  /** How the record's writes are held through a database outage (WRITE_HOLD when absent). */
  hold?: AppendHoldOptions;
}

/** The workspace's ip_allowlist refused the client's address (the worker answers the upgrade with 403). */
const IP_NOT_ALLOWED = {
  code: 'ip_not_allowed',
  message: 'client address is not in the workspace ip_allowlist',
} as const;

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
  if (!from?.owns(conversationId))
    throw forbidden(`this worker does not own conversation ${conversationId}`, 'not_owner');
}

export function createRequestHandler(deps: HandlerDeps): (req: WorkerRequest, from?: RequestOrigin) => Promise<Reply> {
  const { sql, policy } = deps;
  const allowlists = new AllowlistCache();
  const hold = deps.hold ?? WRITE_HOLD;
  const appends = new AppendBatcher(sql, deps.log, deps.appendBatch ?? APPEND_BATCH_DEFAULTS, hold);

  /**
   * Runs `write` until it succeeds or fails otherwise than for an unavailable database, trying again no later than
   * `deadline` (performance.now(); hold.max_hold_ms from now by default).
   */
  async function heldWrite<T>(
    what: string,
    conversationId: string,
    write: () => Promise<T>,
    deadline = performance.now() + hold.max_hold_ms,
  ): Promise<T> {
    let delay = hold.retry_min_ms;
    for (;;) {
      try {
        return await write();
      } catch (err) {
        if (!isDatabaseUnavailable(err) || performance.now() + delay > deadline) throw err;
        deps.log.warn({ err, conversationId, retryInMs: delay }, `${what}: the database is unavailable; trying again`);
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, hold.retry_max_ms);
      }
    }
  }

  /** The record could not be created: nobody will finish it, so its lease goes now (while the database lets it). */
  async function releaseUncreated(conversationId: string, cause: unknown): Promise<void> {
    try {
      await heldWrite('releasing the lease of a conversation whose record could not be created', conversationId, () =>
        release(sql, conversationId),
      );
    } catch (err) {
      deps.log.error(
        { err, cause, conversationId },
        'the lease of a conversation whose record could not be created was not released: it expires with its node',
      );
    }
  }

  async function answer(
    req: WorkerRequest,
    from: RequestOrigin | undefined,
  ): Promise<WorkerReplies[WorkerRequest['type']]> {
    switch (req.type) {
      case 'authenticate': {
        const cred = await lookupCredential(sql, req.secret, deps.now());
        if (!cred) return null satisfies Auth | null;
        if (!allowlists.allows(cred.ipAllowlist, req.clientAddress))
          throw forbidden(IP_NOT_ALLOWED.message, IP_NOT_ALLOWED.code);
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
        try {
          return { conversationId: await createConversation(sql, req.conversation) };
        } catch (err) {
          // Whether or not the row was written (a lost connection), the worker treats the start as failed.
          if (req.conversation.id) void releaseUncreated(req.conversation.id, err);
          throw err;
        }
      case 'update_conversation':
        return { updated: await updateConversation(sql, req.conversationId, req.patch) };
      case 'append_items':
        return { itemIds: await appends.append(req.conversationId, req.items) };
      case 'finish_conversation': {
        // After every append of the conversation (a finish enqueues its post-call jobs: they read the items); the
        // whole answer within the hold, so the worker hears it before its own timeout. The end's webhook events
        // commit with the finish; its post-call jobs and deliveries run at once.
        const deadline = performance.now() + hold.max_hold_ms;
        await appends.settled(req.conversationId);
        const finish = () =>
          finishConversation(sql, req.conversationId, req.finish, req.recordings, {
            onFirstFinish: raiseConversationEnd,
          });
        const outcome = await heldWrite('finishing a conversation', req.conversationId, finish, deadline);
        if (outcome.ended) nodeMetrics.conversationsEnded.inc({ ended_by: req.finish.ended_by });
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
        return {
          type: 'reply',
          id: req.id,
          ok: false,
          error: { message: err.message, status: STATUS_OF_KIND[err.kind], code: err.code },
        };
      }
      if (isDatabaseUnavailable(err)) {
        deps.log.warn({ err, request: req.type }, 'worker request failed: the database is unavailable');
        return { type: 'reply', id: req.id, ok: false, error: UNAVAILABLE };
      }
      deps.log.error({ err, request: req.type }, 'worker request failed');
      return { type: 'reply', id: req.id, ok: false, error: refusedValue(err) ? REFUSED_VALUE : INTERNAL };
    }
  };
}

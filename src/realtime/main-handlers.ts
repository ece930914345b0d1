// main's answers to the workers' requests (src/realtime/worker-protocol.ts): the only place media workers reach
// the database. Each request maps to one repository call (item appends of all conversations are coalesced into
// shared statements, src/store/append-batcher.ts); failures go back as a `reply` with ok: false.
import type { Logger } from '../log.js';
import type { Sql } from '../store/db.js';
import { AllowlistCache, lookupCredential, type Auth } from '../auth/authenticate.js';
import { ApiError } from '../api/errors.js';
import { findAgent } from '../api/agents.js';
import { resolveProject } from '../api/lookup.js';
import { toolsByNames } from '../store/tools.js';
import { admit, type LeasePolicy } from '../store/leases.js';
import { createConversation, finishConversation, moveRecordingToCompressed, updateConversation } from '../store/conversations.js';
import { AppendBatcher, APPEND_BATCH_DEFAULTS, type AppendBatchOptions } from '../store/append-batcher.js';
import type { Reply, ResolvedAgent, WorkerReplies, WorkerRequest } from './worker-protocol.js';

export interface HandlerDeps {
  sql: Sql;
  policy: LeasePolicy;
  log: Logger;
  now(): Date;
  /** How item appends are coalesced (APPEND_BATCH_DEFAULTS when absent). */
  appendBatch?: AppendBatchOptions;
}

/** The workspace's ip_allowlist refused the client's address (the worker answers the upgrade with 403). */
export const IP_NOT_ALLOWED = { status: 403, code: 'ip_not_allowed', message: 'client address is not in the workspace ip_allowlist' } as const;

async function resolveAgent(sql: Sql, orgId: string, project: string, agent: string): Promise<ResolvedAgent | null> {
  let found;
  try {
    found = await findAgent(sql, orgId, project, agent);
  } catch (err) {
    // Not found, or another workspace's: both mean "no such agent" to this caller.
    if (err instanceof ApiError && (err.status === 404 || err.status === 403)) return null;
    throw err;
  }
  const { row, project: p } = found;
  const tools = await toolsByNames(sql, p.id, row.config.tools ?? []);
  return {
    orgId: row.org_id,
    project: { id: p.id, name: p.name },
    agent: { id: row.id, name: row.name, enabled: row.enabled },
    config: row.config as unknown as Record<string, unknown>,
    tools: tools.map((t) => ({ id: t.id, name: t.name, definition: t.definition as unknown as Record<string, unknown> })),
  };
}

export function createRequestHandler(deps: HandlerDeps): (req: WorkerRequest) => Promise<Reply> {
  const { sql, policy } = deps;
  const allowlists = new AllowlistCache();
  const appends = new AppendBatcher(sql, deps.log, deps.appendBatch ?? APPEND_BATCH_DEFAULTS);

  async function answer(req: WorkerRequest): Promise<WorkerReplies[WorkerRequest['type']]> {
    switch (req.type) {
      case 'authenticate': {
        const cred = await lookupCredential(sql, req.secret, deps.now());
        if (!cred) return null satisfies Auth | null;
        if (!allowlists.allows(cred.ipAllowlist, req.clientAddress)) {
          throw new ApiError(IP_NOT_ALLOWED.status, IP_NOT_ALLOWED.message, { code: IP_NOT_ALLOWED.code });
        }
        return cred.auth;
      }
      case 'resolve_agent':
        return resolveAgent(sql, req.orgId, req.project, req.agent);
      case 'resolve_project':
        try {
          const p = await resolveProject(sql, req.orgId, req.project);
          return { id: p.id, name: p.name };
        } catch (err) {
          if (err instanceof ApiError && (err.status === 404 || err.status === 403)) return null;
          throw err;
        }
      case 'resolve_tools': {
        const rows = await toolsByNames(sql, req.projectId, req.names);
        return rows
          .filter((t) => t.org_id === req.orgId)
          .map((t) => ({ id: t.id, name: t.name, definition: t.definition as unknown as Record<string, unknown> }));
      }
      case 'admit': {
        const [p] = await sql<{ org_id: string }[]>`select org_id from projects where id = ${req.projectId}`;
        if (!p || p.org_id !== req.orgId) return { admitted: false, reason: 'no_project' };
        return admit(sql, policy, req.projectId, req.conversationId);
      }
      case 'create_conversation':
        return { conversationId: await createConversation(sql, req.conversation) };
      case 'update_conversation':
        return { updated: await updateConversation(sql, req.conversationId, req.patch) };
      case 'append_items':
        return { itemIds: await appends.append(req.conversationId, req.items) };
      case 'finish_conversation':
        return finishConversation(sql, req.conversationId, req.finish, req.recordings);
      case 'recording_compressed':
        return { updated: await moveRecordingToCompressed(sql, req.conversationId, req.side, req.from, req.to) };
    }
  }

  return async (req) => {
    try {
      return { type: 'reply', id: req.id, ok: true, value: await answer(req) };
    } catch (err) {
      const e = err as Error & { status?: number; code?: string };
      if (!(err instanceof ApiError)) deps.log.error({ err, request: req.type }, 'worker request failed');
      return {
        type: 'reply',
        id: req.id,
        ok: false,
        error: { message: e.message, status: e.status, code: err instanceof ApiError ? e.code : undefined },
      };
    }
  };
}

// A phone call's conversation as main handles it before and after its media worker does: admitted under the
// project's cap when the call arrives or is placed, released when it never started, finished by main when the
// worker running it died (docs/ARCHITECTURE.md, "Process shape").
import type { LeasePolicy } from '../store/leases.js';
import { release } from '../store/leases.js';
import { finishConversation, updateConversation } from '../store/conversations.js';
import type { Sql } from '../store/db.js';
import { admitConversation } from './admission.js';
import { DomainError, notFound } from './errors.js';

/**
 * Takes the lease of a call's conversation in the project. Throws limit_reached `concurrency_limit_reached` when
 * the project is at its cap, not_found when the project is gone (or another workspace's).
 */
export async function admitCall(
  sql: Sql,
  policy: LeasePolicy,
  orgId: string,
  projectId: string,
  conversationId: string,
): Promise<void> {
  const admission = await admitConversation(sql, policy, orgId, projectId, conversationId);
  if (admission.admitted) return;
  if (admission.reason === 'no_project') throw notFound('project', projectId);
  throw new DomainError('limit_reached', `the project is at its limit of ${admission.cap} concurrent conversations`, {
    code: 'concurrency_limit_reached',
  });
}

/** Frees the lease of a call whose conversation never started (no record). */
export async function releaseCall(sql: Sql, conversationId: string): Promise<void> {
  await release(sql, conversationId);
}

/**
 * Ends the record of a call whose media worker died (`ended_by: error`, its duration counted from `startedAt`) and
 * frees its lease. A record that was never made is left absent; one already ended keeps its ending.
 */
export async function finishLostCall(
  sql: Sql,
  conversationId: string,
  at: { startedAt: Date; endedAt: Date },
): Promise<void> {
  const durationMs = Math.max(0, at.endedAt.getTime() - at.startedAt.getTime());
  await finishConversation(sql, conversationId, { ended_by: 'error', ended_at: at.endedAt, duration_ms: durationMs });
}

/**
 * Merges keys into a live call's record metadata (the others it holds stay): what telephony learns of the call on
 * main, such as the transfers the peer asked for. false when the record does not exist or has ended.
 */
export async function recordCallMetadata(
  sql: Sql,
  conversationId: string,
  metadata: Record<string, unknown>,
): Promise<boolean> {
  return updateConversation(sql, conversationId, { metadata });
}

// Admission of conversations under the per-project concurrency cap (`max_active_conversations`, else the
// workspace limit), counted in the database so it holds across nodes (store/leases.ts keeps the leases).
import type { Sql } from '../store/db.js';
import { admit, checkCapacity, type Admission, type LeasePolicy } from '../store/leases.js';
import { projectById, type ProjectRow } from '../store/projects.js';
import { DomainError } from './errors.js';
import { nodeMetrics } from '../metrics/node.js';

/**
 * Takes a lease for the conversation in the workspace's project if the project is under its cap (a conversation
 * that holds one already renews it). `no_project` when the project is missing or another workspace's.
 */
export async function admitConversation(
  sql: Sql,
  policy: LeasePolicy,
  orgId: string,
  projectId: string,
  conversationId: string,
): Promise<Admission> {
  const project = await projectById(sql, projectId);
  if (!project || project.org_id !== orgId) return { admitted: false, reason: 'no_project' };
  const admission = await admit(sql, policy, projectId, conversationId);
  if (!admission.admitted) nodeMetrics.admissionsRefused.inc();
  return admission;
}

/**
 * Throws limit_reached `concurrency_limit_reached` unless the project would admit one more conversation now (an
 * outbound call checks before it dials); takes no lease.
 */
export async function requireCapacity(
  sql: Sql,
  policy: Pick<LeasePolicy, 'workspaceCap'>,
  project: Pick<ProjectRow, 'id' | 'name'>,
): Promise<void> {
  const capacity = await checkCapacity(sql, policy, project.id);
  if (!capacity.ok) {
    throw new DomainError(
      'limit_reached',
      `project '${project.name}' is at its limit of ${capacity.cap} concurrent conversations`,
      {
        code: 'concurrency_limit_reached',
      },
    );
  }
}

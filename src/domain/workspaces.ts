// The caller's workspace: its record and its settings (logo, invite domains, ip_allowlist).
import type { Sql } from '../store/db.js';
import { updateWorkspaceSettings, workspaceById, type WorkspaceRow } from '../store/workspaces.js';
import type { CredentialRevocations } from './credentials.js';
import { notFound } from './errors.js';

/** The workspace as read, timestamps in ISO form. */
export type WorkspaceRecord = Omit<WorkspaceRow, 'created_at'> & { created_at: string };

/** The workspace `orgId`; not_found when it is gone. */
export async function getWorkspace(sql: Sql, orgId: string): Promise<WorkspaceRecord> {
  const row = await workspaceById(sql, orgId);
  if (!row) throw notFound('workspace');
  return { ...row, created_at: row.created_at.toISOString() };
}

/**
 * Changes what is sent (e-mail domains kept lowercase). A new ip_allowlist holds from the next request on: the
 * workspace's cached credentials are forgotten before this returns.
 */
export async function updateWorkspace(
  sql: Sql,
  revocations: CredentialRevocations,
  orgId: string,
  changes: { logo_url?: string | null; invite_link_allowed_domains?: string[]; ip_allowlist?: string[] },
): Promise<void> {
  await updateWorkspaceSettings(sql, orgId, {
    logo_url: changes.logo_url,
    invite_link_allowed_domains: changes.invite_link_allowed_domains?.map((d) => d.toLowerCase()),
    ip_allowlist: changes.ip_allowlist,
  });
  if (changes.ip_allowlist !== undefined) revocations.forgetWorkspace(orgId);
}

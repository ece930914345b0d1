// API keys of a workspace: created, listed, renamed, rotated and deleted. A secret is shown once, when made; a
// workspace keeps at least one key (without one it would be unreachable but for the admin command).
import { newApiKeySecret } from '../auth/secrets.js';
import {
  apiKeyById,
  deleteApiKeyUnlessLast,
  insertApiKey,
  listApiKeys,
  setApiKeyName,
  replaceApiKeySecret,
  type ApiKeyRow,
} from '../store/api-keys.js';
import type { Sql } from '../store/db.js';
import type { DomainContext } from './context.js';
import type { CredentialRevocations } from './credentials.js';
import { conflict } from './errors.js';
import { ownedBy } from './ownership.js';

/** A key as listed: never its secret, only the last characters. */
export interface ApiKeyRecord {
  id: string;
  name: string;
  key_hint: string;
  created_at: string;
  rotated_at: string | null;
}

/** The key `id` of the workspace; not_found when missing, forbidden when another workspace's. */
async function ownedKey(sql: Sql, orgId: string, id: string): Promise<ApiKeyRow> {
  return ownedBy(await apiKeyById(sql, id), orgId, 'API key', id);
}

/** A new key of the workspace: its id and its secret (shown this once). */
export async function createApiKey(sql: Sql, orgId: string, name: string): Promise<{ id: string; secret: string }> {
  return insertApiKey(sql, orgId, name);
}

/** The workspace's keys, oldest first. */
export async function listApiKeyRecords(sql: Sql, orgId: string): Promise<ApiKeyRecord[]> {
  return (await listApiKeys(sql, orgId)).map((r) => ({
    id: r.id,
    name: r.name,
    key_hint: r.secret_hint,
    created_at: r.created_at.toISOString(),
    rotated_at: r.rotated_at?.toISOString() ?? null,
  }));
}

/** Renames the workspace's key `id` (not_found, forbidden for another workspace's). */
export async function renameApiKey(sql: Sql, orgId: string, id: string, name: string): Promise<void> {
  const row = await ownedKey(sql, orgId, id);
  await setApiKeyName(sql, row.id, name);
}

/** Deletes the key and the session tokens it minted; conflict `last_api_key` for the workspace's last key. */
export async function deleteApiKey(
  sql: Sql,
  revocations: CredentialRevocations,
  orgId: string,
  id: string,
): Promise<void> {
  const row = await ownedKey(sql, orgId, id);
  if (!(await deleteApiKeyUnlessLast(sql, row.org_id, row.id))) {
    throw conflict('the last API key of a workspace cannot be deleted', 'last_api_key');
  }
  revocations.forgetApiKey(row.id);
}

/** Gives the key a new secret (returned, shown this once); the old one stops working at once. */
export async function rotateApiKey(
  ctx: DomainContext,
  revocations: CredentialRevocations,
  orgId: string,
  id: string,
): Promise<{ id: string; name: string; secret: string }> {
  const row = await ownedKey(ctx.sql, orgId, id);
  const secret = newApiKeySecret();
  await replaceApiKeySecret(ctx.sql, row.id, secret, ctx.now());
  revocations.forgetApiKey(row.id);
  return { id: row.id, name: row.name, secret };
}

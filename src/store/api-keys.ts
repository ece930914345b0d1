// API keys repository: rows of `api_keys` (the secret only as its SHA-256, src/auth/secrets.ts) and the lookup
// that authenticates a key.
import { hashSecret, newApiKeySecret, secretHint } from '../auth/secrets.js';
import { pointReads, type Sql } from './db.js';
import { newId } from './ids.js';
import { transaction, type Tx } from './transaction.js';

export interface ApiKeyRow {
  id: string;
  org_id: string;
  name: string;
  secret_hint: string;
  created_at: Date;
  rotated_at: Date | null;
}

/** Inserts an API key of `orgId`; returns its id and secret (the secret is not stored). */
export async function insertApiKey(
  sql: Sql | Tx,
  orgId: string,
  name: string,
  secret = newApiKeySecret(),
): Promise<{ id: string; secret: string }> {
  const id = newId('api_key');
  await sql`insert into api_keys (id, org_id, name, secret_hash, secret_hint)
            values (${id}, ${orgId}, ${name}, ${hashSecret(secret)}, ${secretHint(secret)})`;
  return { id, secret };
}

export async function apiKeyById(sql: Sql, id: string): Promise<ApiKeyRow | undefined> {
  const [row] = await sql<
    ApiKeyRow[]
  >`select id, org_id, name, secret_hint, created_at, rotated_at from api_keys where id = ${id}`;
  return row;
}

/** The workspace's keys, oldest first. */
export async function listApiKeys(sql: Sql, orgId: string): Promise<ApiKeyRow[]> {
  return sql<ApiKeyRow[]>`
    select id, org_id, name, secret_hint, created_at, rotated_at from api_keys
    where org_id = ${orgId} order by created_at, id`;
}

export async function setApiKeyName(sql: Sql, id: string, name: string): Promise<void> {
  await sql`update api_keys set name = ${name} where id = ${id}`;
}

/**
 * Deletes the key unless it is its workspace's last; false when it was the last (or is gone). The workspace row is
 * locked so two deletions at once cannot both see "another key remains".
 */
export async function deleteApiKeyUnlessLast(sql: Sql, orgId: string, id: string): Promise<boolean> {
  const deleted = await transaction(sql, async (tx) => {
    await tx`select id from organizations where id = ${orgId} for update`;
    return tx`delete from api_keys where id = ${id}
              and (select count(*) from api_keys where org_id = ${orgId}) > 1 returning id`;
  });
  return deleted.length > 0;
}

/** Replaces the key's secret in one statement: the old secret stops working at once. */
export async function replaceApiKeySecret(sql: Sql, id: string, secret: string, rotatedAt: Date): Promise<void> {
  await sql`update api_keys set secret_hash = ${hashSecret(secret)}, secret_hint = ${secretHint(secret)},
            rotated_at = ${rotatedAt} where id = ${id}`;
}

/** The key whose secret hashes to `digest`, with its workspace's ip_allowlist; one indexed query, a point read. */
export async function apiKeyByDigest(
  sql: Sql,
  digest: string,
): Promise<{ id: string; org_id: string; ip_allowlist: string[] } | undefined> {
  const [row] = await pointReads(sql)<{ id: string; org_id: string; ip_allowlist: string[] }[]>`
    select k.id, k.org_id, o.ip_allowlist
    from api_keys k join organizations o on o.id = k.org_id
    where k.secret_hash = ${digest}`;
  return row;
}

// Workspaces (organizations): creation with their `main` project and a first API key, and the bootstrap of
// an empty database.
import type { Sql } from './db.js';
import { newId } from './ids.js';
import { hashSecret, newApiKeySecret, secretHint } from '../auth/secrets.js';
import { transaction } from './transaction.js';

export interface NewWorkspace {
  orgId: string;
  projectId: string;
  apiKeyId: string;
  /** The secret, shown once. */
  apiKey: string;
}

/** Inserts an API key of `orgId`; returns its id and secret (the secret is not stored). */
export async function insertApiKey(sql: Sql, orgId: string, name: string, secret = newApiKeySecret()) {
  const id = newId('api_key');
  await sql`insert into api_keys (id, org_id, name, secret_hash, secret_hint)
            values (${id}, ${orgId}, ${name}, ${hashSecret(secret)}, ${secretHint(secret)})`;
  return { id, secret };
}

/** A workspace with its `main` project and an API key (given, or generated). */
export async function createWorkspace(sql: Sql, name: string, apiKey?: string): Promise<NewWorkspace> {
  return transaction(sql, async (tx) => {
    const orgId = newId('org');
    const projectId = newId('proj');
    await tx`insert into organizations (id, name) values (${orgId}, ${name})`;
    await tx`insert into projects (id, org_id, name) values (${projectId}, ${orgId}, 'main')`;
    const key = await insertApiKey(tx as unknown as Sql, orgId, 'default', apiKey);
    return { orgId, projectId, apiKeyId: key.id, apiKey: key.secret };
  });
}

/** Name of the workspace made on first start. */
export const BOOTSTRAP_WORKSPACE = 'default';

/**
 * On an empty database: creates the first workspace, its `main` project and an API key (`apiKey` when given).
 * Returns it, or null when the database already has a workspace.
 */
export async function bootstrap(sql: Sql, apiKey?: string): Promise<NewWorkspace | null> {
  const [any] = await sql`select 1 from organizations limit 1`;
  if (any) return null;
  return createWorkspace(sql, BOOTSTRAP_WORKSPACE, apiKey);
}

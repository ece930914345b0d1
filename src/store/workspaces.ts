// Workspaces (organizations) repository: creation with their `main` project and a first API key, the bootstrap of
// an empty database, and the workspace's own settings.
import type { Sql } from './db.js';
import { newId } from './ids.js';
import { insertApiKey } from './api-keys.js';
import { transaction, type Tx } from './transaction.js';

export interface NewWorkspace {
  orgId: string;
  projectId: string;
  apiKeyId: string;
  /** The secret, shown once. */
  apiKey: string;
}

export interface WorkspaceRow {
  id: string;
  name: string;
  logo_url: string | null;
  invite_link_allowed_domains: string[];
  ip_allowlist: string[];
  features: Record<string, boolean>;
  created_at: Date;
}

/** A workspace with its `main` project and an API key (given, or generated). */
export async function createWorkspace(sql: Sql, name: string, apiKey?: string): Promise<NewWorkspace> {
  return transaction(sql, (tx) => insertWorkspace(tx, name, apiKey));
}

async function insertWorkspace(tx: Tx, name: string, apiKey?: string): Promise<NewWorkspace> {
  const orgId = newId('org');
  const projectId = newId('proj');
  await tx`insert into organizations (id, name) values (${orgId}, ${name})`;
  await tx`insert into projects (id, org_id, name) values (${projectId}, ${orgId}, 'main')`;
  const key = await insertApiKey(tx, orgId, 'default', apiKey);
  return { orgId, projectId, apiKeyId: key.id, apiKey: key.secret };
}

/** Name of the workspace made on first start. */
export const BOOTSTRAP_WORKSPACE = 'default';

/** Arbitrary constant key of pg_advisory_xact_lock for the bootstrap ("pboots" in ASCII), apart from migrations'. */
const BOOTSTRAP_LOCK_KEY = 0x70626f6f7473;

/**
 * On an empty database: creates the first workspace, its `main` project and an API key (`apiKey` when given).
 * Returns it, or null when the database already has a workspace. Nodes starting together on one empty database
 * take turns on an advisory lock: one creates the workspace, the others find it.
 */
export async function bootstrap(sql: Sql, apiKey?: string): Promise<NewWorkspace | null> {
  return transaction(sql, async (tx) => {
    await tx`select pg_advisory_xact_lock(${BOOTSTRAP_LOCK_KEY})`;
    const [any] = await tx`select 1 from organizations limit 1`;
    if (any) return null;
    return insertWorkspace(tx, BOOTSTRAP_WORKSPACE, apiKey);
  });
}

export async function workspaceById(sql: Sql, id: string): Promise<WorkspaceRow | undefined> {
  const [row] = await sql<WorkspaceRow[]>`select * from organizations where id = ${id}`;
  return row;
}

/** The id of the workspace with that id or name (operators name workspaces either way). */
export async function workspaceIdByNameOrId(sql: Sql, nameOrId: string): Promise<string | undefined> {
  const [row] = await sql<{ id: string }[]>`select id from organizations where id = ${nameOrId} or name = ${nameOrId}`;
  return row?.id;
}

/** Every workspace, oldest first. */
export async function listWorkspaces(sql: Sql): Promise<Pick<WorkspaceRow, 'id' | 'name' | 'features'>[]> {
  return sql<
    Pick<WorkspaceRow, 'id' | 'name' | 'features'>[]
  >`select id, name, features from organizations order by created_at`;
}

export async function workspaceNameTaken(sql: Sql, name: string): Promise<boolean> {
  const [row] = await sql`select 1 from organizations where name = ${name}`;
  return row !== undefined;
}

/** Changes what is given of the workspace's settings; fields left undefined keep their value. */
export async function updateWorkspaceSettings(
  sql: Sql,
  id: string,
  s: { logo_url?: string | null; invite_link_allowed_domains?: string[]; ip_allowlist?: string[] },
): Promise<void> {
  await sql`update organizations set
    logo_url = ${s.logo_url === undefined ? sql`logo_url` : s.logo_url},
    invite_link_allowed_domains = ${
      s.invite_link_allowed_domains === undefined
        ? sql`invite_link_allowed_domains`
        : sql.json(s.invite_link_allowed_domains)
    },
    ip_allowlist = ${s.ip_allowlist === undefined ? sql`ip_allowlist` : sql.json(s.ip_allowlist)}
    where id = ${id}`;
}

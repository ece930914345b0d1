// External storage for delivery: a policy as an upload reads it (credentials included), and the outcome of each
// artifact delivered to it.
import type { Sql } from './db.js';

export interface StoragePolicyRow {
  id: string;
  project_id: string;
  name: string;
  endpoint_url: string;
  bucket: string;
  region: string | null;
  key_prefix: string | null;
  addressing_style: 'auto' | 'virtual' | 'path';
  access_key_id: string;
  secret_access_key: string;
}

const COLUMNS =
  'id, project_id, name, endpoint_url, bucket, region, key_prefix, addressing_style, access_key_id, secret_access_key';

/** The policy of a project by name (what an agent's `external_storage_policy` names); null when there is none. */
export async function findStoragePolicyByName(
  sql: Sql,
  projectId: string,
  name: string,
): Promise<StoragePolicyRow | null> {
  const [row] = await sql<StoragePolicyRow[]>`
    select ${sql.unsafe(COLUMNS)} from external_storage_policies where project_id = ${projectId} and name = ${name}`;
  return row ?? null;
}

/** How a conversation names its policy: by name (the agent's `external_storage_policy`) at its start, then by id. */
export type StoragePolicyRef = { name: string } | { id: string };

/**
 * The policy `ref` names in the project of the conversation, as it is now (credentials included); null when the
 * project has none such (or the conversation is gone).
 */
export async function conversationStoragePolicy(
  sql: Sql,
  conversationId: string,
  ref: StoragePolicyRef,
): Promise<StoragePolicyRow | null> {
  const which = 'name' in ref ? sql`p.name = ${ref.name}` : sql`p.id = ${ref.id}`;
  const [row] = await sql<StoragePolicyRow[]>`
    select ${sql.unsafe(
      COLUMNS.split(', ')
        .map((c) => `p.${c}`)
        .join(', '),
    )}
    from external_storage_policies p join conversations c on c.project_id = p.project_id
    where c.id = ${conversationId} and ${which}`;
  return row ?? null;
}

/** The policy as it is now (its credentials may have been rotated since the last read); null when deleted. */
export async function getStoragePolicy(sql: Sql, id: string): Promise<StoragePolicyRow | null> {
  const [row] = await sql<
    StoragePolicyRow[]
  >`select ${sql.unsafe(COLUMNS)} from external_storage_policies where id = ${id}`;
  return row ?? null;
}

export type StorageArtifact = 'record' | 'recording';

export interface StorageOutcome {
  conversation_id: string;
  artifact: StorageArtifact;
  policy_id: string;
  bucket: string;
  object_key: string;
  status: 'delivered' | 'failed';
  bytes: number | null;
  error: string | null;
  finished_at: Date;
}

/** Records (or replaces) the outcome of one artifact of a conversation; false when the conversation is gone. */
export async function recordStorageOutcome(sql: Sql, o: StorageOutcome): Promise<boolean> {
  const rows = await sql`
    insert into external_storage_deliveries (conversation_id, artifact, policy_id, bucket, object_key, status, bytes, error, finished_at)
    select ${o.conversation_id}, ${o.artifact}, ${o.policy_id}, ${o.bucket}, ${o.object_key}, ${o.status}, ${o.bytes}, ${o.error}, ${o.finished_at}
    where exists (select 1 from conversations where id = ${o.conversation_id})
    on conflict (conversation_id, artifact) do update set policy_id = excluded.policy_id, bucket = excluded.bucket,
      object_key = excluded.object_key, status = excluded.status, bytes = excluded.bytes, error = excluded.error,
      finished_at = excluded.finished_at
    returning 1`;
  return rows.length > 0;
}

/** The outcomes of these conversations' deliveries, by conversation then artifact. */
export async function storageOutcomesOf(sql: Sql, conversationIds: readonly string[]): Promise<StorageOutcome[]> {
  if (conversationIds.length === 0) return [];
  return sql<StorageOutcome[]>`
    select conversation_id, artifact, policy_id, bucket, object_key, status, bytes::float8 as bytes, error, finished_at
    from external_storage_deliveries where conversation_id in ${sql(conversationIds as string[])}
    order by conversation_id, artifact`;
}

export async function listStorageOutcomes(sql: Sql, conversationId: string): Promise<StorageOutcome[]> {
  return sql<StorageOutcome[]>`
    select conversation_id, artifact, policy_id, bucket, object_key, status, bytes::float8 as bytes, error, finished_at
    from external_storage_deliveries where conversation_id = ${conversationId} order by artifact`;
}

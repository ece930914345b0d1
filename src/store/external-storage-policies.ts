// External storage policies repository: rows of `external_storage_policies`, names unique per project.
import type { Sql } from './db.js';
import { newId } from './ids.js';

export interface PolicyRow {
  id: string;
  org_id: string;
  project_id: string;
  name: string;
  endpoint_url: string;
  bucket: string;
  region: string | null;
  key_prefix: string | null;
  addressing_style: 'auto' | 'virtual' | 'path';
  access_key_id: string;
  secret_access_key: string;
  created_at: Date;
  updated_at: Date;
}

/** A policy's writable fields. */
export type PolicyFields = Pick<
  PolicyRow,
  | 'name'
  | 'endpoint_url'
  | 'bucket'
  | 'region'
  | 'key_prefix'
  | 'addressing_style'
  | 'access_key_id'
  | 'secret_access_key'
>;

/** The prefix of policy ids. */
export const POLICY_ID_PREFIX = 'ext_storage_policy';

/** PostgreSQL SQLSTATE 23505 unique_violation: the project already has a policy of that name. */
const UNIQUE_VIOLATION = '23505';

export async function policyById(sql: Sql, id: string): Promise<PolicyRow | undefined> {
  const [row] = await sql<PolicyRow[]>`select * from external_storage_policies where id = ${id}`;
  return row;
}

export async function policyByName(sql: Sql, projectId: string, name: string): Promise<PolicyRow | undefined> {
  const [row] = await sql<
    PolicyRow[]
  >`select * from external_storage_policies where project_id = ${projectId} and name = ${name}`;
  return row;
}

/** Whether the project has a policy of that name. */
export async function policyExists(sql: Sql, projectId: string, name: string): Promise<boolean> {
  const [row] = await sql`select 1 from external_storage_policies where project_id = ${projectId} and name = ${name}`;
  return row !== undefined;
}

/** The project's policies, oldest first. */
export async function listPolicies(sql: Sql, projectId: string): Promise<PolicyRow[]> {
  return sql<
    PolicyRow[]
  >`select * from external_storage_policies where project_id = ${projectId} order by created_at, id`;
}

/** Inserts a policy; its new id, or `name_taken`. */
export async function insertPolicy(
  sql: Sql,
  orgId: string,
  projectId: string,
  p: PolicyFields,
): Promise<{ id: string } | 'name_taken'> {
  const id = newId(POLICY_ID_PREFIX);
  try {
    await sql`insert into external_storage_policies
      (id, org_id, project_id, name, endpoint_url, bucket, region, key_prefix, addressing_style, access_key_id, secret_access_key)
      values (${id}, ${orgId}, ${projectId}, ${p.name}, ${p.endpoint_url}, ${p.bucket}, ${p.region}, ${p.key_prefix},
              ${p.addressing_style}, ${p.access_key_id}, ${p.secret_access_key})`;
  } catch (err) {
    if ((err as { code?: string }).code === UNIQUE_VIOLATION) return 'name_taken';
    throw err;
  }
  return { id };
}

/** Writes every field of the policy; `name_taken` when another policy of the project has the name. */
export async function updatePolicyRow(
  sql: Sql,
  id: string,
  p: PolicyFields,
  updatedAt: Date,
): Promise<'ok' | 'name_taken'> {
  try {
    await sql`update external_storage_policies set
      name = ${p.name},
      endpoint_url = ${p.endpoint_url},
      bucket = ${p.bucket},
      region = ${p.region},
      key_prefix = ${p.key_prefix},
      addressing_style = ${p.addressing_style},
      access_key_id = ${p.access_key_id},
      secret_access_key = ${p.secret_access_key},
      updated_at = ${updatedAt}
      where id = ${id}`;
  } catch (err) {
    if ((err as { code?: string }).code === UNIQUE_VIOLATION) return 'name_taken';
    throw err;
  }
  return 'ok';
}

export async function deletePolicyRow(sql: Sql, id: string): Promise<void> {
  await sql`delete from external_storage_policies where id = ${id}`;
}

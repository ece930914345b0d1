// External storage policies of a project (where recordings go under zero data retention): addressing by name or
// id, create, update, delete. The secret access key is written, never read back; credentials rotate together.
import type { Sql } from '../store/db.js';
import { isId } from '../store/ids.js';
import {
  deletePolicyRow,
  insertPolicy,
  listPolicies,
  policyById,
  policyByName,
  POLICY_ID_PREFIX,
  updatePolicyRow,
  type PolicyFields,
  type PolicyRow,
} from '../store/external-storage-policies.js';
import type { DomainContext } from './context.js';
import { invalidParam, notFound } from './errors.js';
import { ownedBy } from './ownership.js';
import { resolveProject } from './projects.js';

/** A policy as a read returns it (no secret). */
export interface PolicyRecord {
  id: string;
  name: string;
  endpoint_url: string;
  bucket: string;
  region: string | null;
  key_prefix: string | null;
  addressing_style: PolicyRow['addressing_style'];
  access_key_id: string;
  created_at: string;
  updated_at: string;
}

function recordOf(r: PolicyRow): PolicyRecord {
  return {
    id: r.id,
    name: r.name,
    endpoint_url: r.endpoint_url,
    bucket: r.bucket,
    region: r.region,
    key_prefix: r.key_prefix,
    addressing_style: r.addressing_style,
    access_key_id: r.access_key_id,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
}

/** A name conflict answers in the validation shape (on `name`). */
const nameTaken = (name: string) =>
  invalidParam('name', `an external storage policy named '${name}' already exists`, 'conflict');

/**
 * The policy `nameOrId` names: by id in any project of the workspace, else by name in the project `project` names.
 * Throws not_found or forbidden (another workspace's).
 */
export async function findPolicy(sql: Sql, orgId: string, nameOrId: string, project: string): Promise<PolicyRow> {
  if (isId(POLICY_ID_PREFIX, nameOrId))
    return ownedBy(await policyById(sql, nameOrId), orgId, 'external storage policy', nameOrId);
  const p = await resolveProject(sql, orgId, project);
  const row = await policyByName(sql, p.id, nameOrId);
  if (!row) throw notFound('external storage policy', nameOrId);
  return row;
}

/** Creates a policy of the project; conflict (on `name`) when the project has one of that name. */
export async function createPolicy(
  sql: Sql,
  orgId: string,
  project: string,
  fields: PolicyFields,
): Promise<{ id: string; name: string }> {
  const p = await resolveProject(sql, orgId, project);
  const out = await insertPolicy(sql, p.org_id, p.id, fields);
  if (out === 'name_taken') throw nameTaken(fields.name);
  return { id: out.id, name: fields.name };
}

/** The project's policies, oldest first. */
export async function listPolicyRecords(sql: Sql, orgId: string, project: string): Promise<PolicyRecord[]> {
  const p = await resolveProject(sql, orgId, project);
  return (await listPolicies(sql, p.id)).map(recordOf);
}

/** The record of the policy `nameOrId` names (findPolicy's errors). */
export async function getPolicyRecord(
  sql: Sql,
  orgId: string,
  nameOrId: string,
  project: string,
): Promise<PolicyRecord> {
  return recordOf(await findPolicy(sql, orgId, nameOrId, project));
}

/**
 * Changes what `changes` sends; the credentials change only when both are sent (the schema requires them together).
 * Conflict (on `name`) when the new name is taken.
 */
export async function updatePolicy(
  ctx: DomainContext,
  orgId: string,
  nameOrId: string,
  project: string,
  changes: Partial<PolicyFields>,
): Promise<void> {
  const row = await findPolicy(ctx.sql, orgId, nameOrId, project);
  const rotate = changes.access_key_id !== undefined && changes.secret_access_key !== undefined;
  const fields: PolicyFields = {
    name: changes.name ?? row.name,
    endpoint_url: changes.endpoint_url ?? row.endpoint_url,
    bucket: changes.bucket ?? row.bucket,
    region: changes.region === undefined ? row.region : changes.region,
    key_prefix: changes.key_prefix === undefined ? row.key_prefix : changes.key_prefix,
    addressing_style: changes.addressing_style ?? row.addressing_style,
    access_key_id: rotate ? changes.access_key_id! : row.access_key_id,
    secret_access_key: rotate ? changes.secret_access_key! : row.secret_access_key,
  };
  if ((await updatePolicyRow(ctx.sql, row.id, fields, ctx.now())) === 'name_taken') throw nameTaken(fields.name);
}

/** Deletes the policy (findPolicy's errors). */
export async function deletePolicy(sql: Sql, orgId: string, nameOrId: string, project: string): Promise<void> {
  const row = await findPolicy(sql, orgId, nameOrId, project);
  await deletePolicyRow(sql, row.id);
}

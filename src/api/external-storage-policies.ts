// External storage policies of a project: create, list, get, update (spec endpoint 3), delete.
// A name conflict answers 409 with the validation-shaped body (spec endpoint 3).
import type { Sql } from '../store/db.js';
import { newId } from '../store/ids.js';
import { successBody } from '../schemas/common.js';
import {
  createdExternalStoragePolicyBody,
  externalStoragePoliciesBody,
  externalStoragePolicyBody,
  externalStoragePolicySchemas,
} from '../schemas/external-storage-policies.js';
import { nameOrIdParams } from '../schemas/extraction-schemas.js';
import { invalidParam, notFound } from './errors.js';
import { isId, ownedBy, projectQuery, resolveProject } from './lookup.js';
import type { RoutePlugin } from './routes.js';

interface PolicyRow {
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

const UNIQUE_VIOLATION = '23505'; // PostgreSQL SQLSTATE unique_violation
const ID_PREFIX = 'ext_storage_policy';

function record(r: PolicyRow) {
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

/** The policy named (in the `project` query's project) or identified by `nameOrId`; 404/403 otherwise. */
export async function findExternalStoragePolicy(sql: Sql, orgId: string, nameOrId: string, project = 'main'): Promise<PolicyRow> {
  if (isId(ID_PREFIX, nameOrId)) {
    const [row] = await sql<PolicyRow[]>`select * from external_storage_policies where id = ${nameOrId}`;
    return ownedBy(row, orgId, 'external storage policy', nameOrId);
  }
  const p = await resolveProject(sql, orgId, project);
  const [row] = await sql<PolicyRow[]>`
    select * from external_storage_policies where project_id = ${p.id} and name = ${nameOrId}`;
  if (!row) throw notFound('external storage policy', nameOrId);
  return row;
}

const nameTaken = (name: string) => invalidParam('name', `an external storage policy named '${name}' already exists`, 409);

export const externalStoragePolicyRoutes: RoutePlugin = async (app, { sql, now, settings }) => {
  const tags = ['external storage policies'];
  const schemas = externalStoragePolicySchemas(settings);

  app.post(
    '/v1/external_storage_policies',
    { schema: { tags, querystring: projectQuery, body: schemas.create, response: { 201: createdExternalStoragePolicyBody } } },
    async (req, reply) => {
      const p = await resolveProject(sql, req.auth.orgId, req.query.project);
      const b = req.body;
      const id = newId(ID_PREFIX);
      try {
        await sql`insert into external_storage_policies
          (id, org_id, project_id, name, endpoint_url, bucket, region, key_prefix, addressing_style, access_key_id, secret_access_key)
          values (${id}, ${p.org_id}, ${p.id}, ${b.name}, ${b.endpoint_url}, ${b.bucket}, ${b.region}, ${b.key_prefix},
                  ${b.addressing_style}, ${b.access_key_id}, ${b.secret_access_key})`;
      } catch (err) {
        if ((err as { code?: string }).code === UNIQUE_VIOLATION) throw nameTaken(b.name);
        throw err;
      }
      return reply.status(201).send({ id, name: b.name });
    },
  );

  app.get(
    '/v1/external_storage_policies',
    { schema: { tags, querystring: projectQuery, response: { 200: externalStoragePoliciesBody } } },
    async (req) => {
      const p = await resolveProject(sql, req.auth.orgId, req.query.project);
      const rows = await sql<PolicyRow[]>`
        select * from external_storage_policies where project_id = ${p.id} order by created_at, id`;
      return { external_storage_policies: rows.map(record) };
    },
  );

  app.get(
    '/v1/external_storage_policies/:nameOrId',
    { schema: { tags, params: nameOrIdParams, querystring: projectQuery, response: { 200: externalStoragePolicyBody } } },
    async (req) => ({
      external_storage_policy: record(await findExternalStoragePolicy(sql, req.auth.orgId, req.params.nameOrId, req.query.project)),
    }),
  );

  app.patch(
    '/v1/external_storage_policies/:nameOrId',
    { schema: { tags, params: nameOrIdParams, querystring: projectQuery, body: schemas.update, response: { 200: successBody } } },
    async (req) => {
      const row = await findExternalStoragePolicy(sql, req.auth.orgId, req.params.nameOrId, req.query.project);
      const b = req.body;
      const rotate = b.access_key_id !== undefined && b.secret_access_key !== undefined;
      const name = b.name ?? row.name;
      try {
        await sql`update external_storage_policies set
          name = ${name},
          endpoint_url = ${b.endpoint_url ?? row.endpoint_url},
          bucket = ${b.bucket ?? row.bucket},
          region = ${b.region === undefined ? row.region : b.region},
          key_prefix = ${b.key_prefix === undefined ? row.key_prefix : b.key_prefix},
          addressing_style = ${b.addressing_style ?? row.addressing_style},
          access_key_id = ${rotate ? b.access_key_id! : row.access_key_id},
          secret_access_key = ${rotate ? b.secret_access_key! : row.secret_access_key},
          updated_at = ${now()}
          where id = ${row.id}`;
      } catch (err) {
        if ((err as { code?: string }).code === UNIQUE_VIOLATION) throw nameTaken(name);
        throw err;
      }
      return { success: true };
    },
  );

  app.delete(
    '/v1/external_storage_policies/:nameOrId',
    { schema: { tags, params: nameOrIdParams, querystring: projectQuery, response: { 200: successBody } } },
    async (req) => {
      const row = await findExternalStoragePolicy(sql, req.auth.orgId, req.params.nameOrId, req.query.project);
      await sql`delete from external_storage_policies where id = ${row.id}`;
      return { success: true };
    },
  );
};

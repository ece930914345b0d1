// Extraction schemas of a project: create, list, get (spec endpoint 18), update, delete. Deleting keeps the
// row (deleted_at) so extractions made from it still name it with `isDeleted: true`.
import type { Sql } from '../store/db.js';
import { newId } from '../store/ids.js';
import { successBody } from '../schemas/common.js';
import {
  createdExtractionSchemaBody,
  createExtractionSchemaBody,
  extractionSchemaBody,
  extractionSchemasBody,
  nameOrIdParams,
  updateExtractionSchemaBody,
  type ExtractionSchema,
} from '../schemas/extraction-schemas.js';
import { invalidParam, notFound } from './errors.js';
import { isId, ownedBy, projectQuery, resolveProject } from './lookup.js';
import type { RoutePlugin } from './routes.js';

interface SchemaRow extends ExtractionSchema {
  org_id: string;
  project_id: string;
}

const UNIQUE_VIOLATION = '23505'; // PostgreSQL SQLSTATE unique_violation

function record(r: SchemaRow): ExtractionSchema {
  return { id: r.id, name: r.name, prompt: r.prompt, fields: r.fields };
}

/** The live schema named (in the `project` query's project) or identified; 404/403 otherwise. */
async function findSchema(sql: Sql, orgId: string, nameOrId: string, project: string): Promise<SchemaRow> {
  if (isId('conv_extract_schema', nameOrId)) {
    const [row] = await sql<SchemaRow[]>`select * from extraction_schemas where id = ${nameOrId} and deleted_at is null`;
    return ownedBy(row, orgId, 'extraction schema', nameOrId);
  }
  const p = await resolveProject(sql, orgId, project);
  const [row] = await sql<SchemaRow[]>`
    select * from extraction_schemas where project_id = ${p.id} and name = ${nameOrId} and deleted_at is null`;
  if (!row) throw notFound('extraction schema', nameOrId);
  return row;
}

const nameTaken = (name: string) => invalidParam('name', `an extraction schema named '${name}' already exists`, 409);

export const extractionSchemaRoutes: RoutePlugin = async (app, { sql, now }) => {
  const tags = ['extraction schemas'];
  app.post(
    '/v1/extraction_schemas',
    { schema: { tags, querystring: projectQuery, body: createExtractionSchemaBody, response: { 201: createdExtractionSchemaBody } } },
    async (req, reply) => {
      const p = await resolveProject(sql, req.auth.orgId, req.query.project);
      const id = newId('conv_extract_schema');
      try {
        await sql`insert into extraction_schemas (id, org_id, project_id, name, prompt, fields)
                  values (${id}, ${p.org_id}, ${p.id}, ${req.body.name}, ${req.body.prompt}, ${sql.json(req.body.fields)})`;
      } catch (err) {
        if ((err as { code?: string }).code === UNIQUE_VIOLATION) throw nameTaken(req.body.name);
        throw err;
      }
      return reply.status(201).send({ id, name: req.body.name });
    },
  );

  app.get(
    '/v1/extraction_schemas',
    { schema: { tags, querystring: projectQuery, response: { 200: extractionSchemasBody } } },
    async (req) => {
      const p = await resolveProject(sql, req.auth.orgId, req.query.project);
      const rows = await sql<SchemaRow[]>`
        select * from extraction_schemas where project_id = ${p.id} and deleted_at is null order by created_at, id`;
      return { extraction_schemas: rows.map(record) };
    },
  );

  app.get(
    '/v1/extraction_schemas/:nameOrId',
    { schema: { tags, params: nameOrIdParams, querystring: projectQuery, response: { 200: extractionSchemaBody } } },
    async (req) => ({ extraction_schema: record(await findSchema(sql, req.auth.orgId, req.params.nameOrId, req.query.project)) }),
  );

  app.patch(
    '/v1/extraction_schemas/:nameOrId',
    {
      schema: { tags, params: nameOrIdParams, querystring: projectQuery, body: updateExtractionSchemaBody, response: { 200: successBody } },
    },
    async (req) => {
      const row = await findSchema(sql, req.auth.orgId, req.params.nameOrId, req.query.project);
      const b = req.body;
      try {
        await sql`update extraction_schemas set
          name = ${b.name ?? row.name}, prompt = ${b.prompt ?? row.prompt},
          fields = ${sql.json(b.fields ?? row.fields)}, updated_at = ${now()}
          where id = ${row.id}`;
      } catch (err) {
        if ((err as { code?: string }).code === UNIQUE_VIOLATION) throw nameTaken(b.name ?? row.name);
        throw err;
      }
      return { success: true };
    },
  );

  app.delete(
    '/v1/extraction_schemas/:nameOrId',
    { schema: { tags, params: nameOrIdParams, querystring: projectQuery, response: { 200: successBody } } },
    async (req) => {
      const row = await findSchema(sql, req.auth.orgId, req.params.nameOrId, req.query.project);
      await sql`update extraction_schemas set deleted_at = ${now()} where id = ${row.id}`;
      return { success: true };
    },
  );
};

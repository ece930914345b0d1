// Extraction schemas of a project: addressing by name or id, create, update, delete. Deleting keeps the row so
// extractions made from it still name it (`isDeleted: true`); a deleted schema is found no more and frees its name.
import type { ExtractionSchema } from '../schemas/extraction-schemas.js';
import type { Sql } from '../store/db.js';
import {
  EXTRACTION_SCHEMA_ID_PREFIX,
  insertSchema,
  listLiveSchemas,
  liveSchemaById,
  liveSchemaByName,
  markSchemaDeleted,
  updateSchema,
  type ExtractionSchemaFields,
  type ExtractionSchemaRow,
} from '../store/extraction-schemas.js';
import { isId } from '../store/ids.js';
import type { DomainContext } from './context.js';
import { invalidParam, notFound } from './errors.js';
import { ownedBy } from './ownership.js';
import { resolveProject } from './projects.js';

const recordOf = (r: ExtractionSchemaRow): ExtractionSchema => ({
  id: r.id,
  name: r.name,
  prompt: r.prompt,
  fields: r.fields,
});

/** A name conflict answers in the validation shape (on `name`). */
const nameTaken = (name: string) =>
  invalidParam('name', `an extraction schema named '${name}' already exists`, 'conflict');

/**
 * The live schema `nameOrId` names: by id in any project of the workspace, else by name in the project `project`
 * names. Throws not_found or forbidden (another workspace's).
 */
export async function findExtractionSchema(
  sql: Sql,
  orgId: string,
  nameOrId: string,
  project: string,
): Promise<ExtractionSchemaRow> {
  if (isId(EXTRACTION_SCHEMA_ID_PREFIX, nameOrId))
    return ownedBy(await liveSchemaById(sql, nameOrId), orgId, 'extraction schema', nameOrId);
  const p = await resolveProject(sql, orgId, project);
  const row = await liveSchemaByName(sql, p.id, nameOrId);
  if (!row) throw notFound('extraction schema', nameOrId);
  return row;
}

/** Creates a schema of the project; conflict (on `name`) when a live schema of the project has the name. */
export async function createExtractionSchema(
  sql: Sql,
  orgId: string,
  project: string,
  fields: ExtractionSchemaFields,
): Promise<{ id: string; name: string }> {
  const p = await resolveProject(sql, orgId, project);
  const out = await insertSchema(sql, p.org_id, p.id, fields);
  if (out === 'name_taken') throw nameTaken(fields.name);
  return { id: out.id, name: fields.name };
}

/** The project's live schemas, oldest first. */
export async function listExtractionSchemas(sql: Sql, orgId: string, project: string): Promise<ExtractionSchema[]> {
  const p = await resolveProject(sql, orgId, project);
  return (await listLiveSchemas(sql, p.id)).map(recordOf);
}

/** The record of the live schema `nameOrId` names (findExtractionSchema's errors). */
export async function getExtractionSchema(
  sql: Sql,
  orgId: string,
  nameOrId: string,
  project: string,
): Promise<ExtractionSchema> {
  return recordOf(await findExtractionSchema(sql, orgId, nameOrId, project));
}

/** Changes what `changes` sends; conflict (on `name`) when the new name is taken. */
export async function updateExtractionSchema(
  ctx: DomainContext,
  orgId: string,
  nameOrId: string,
  project: string,
  changes: Partial<ExtractionSchemaFields>,
): Promise<void> {
  const row = await findExtractionSchema(ctx.sql, orgId, nameOrId, project);
  const fields = {
    name: changes.name ?? row.name,
    prompt: changes.prompt ?? row.prompt,
    fields: changes.fields ?? row.fields,
  };
  if ((await updateSchema(ctx.sql, row.id, fields, ctx.now())) === 'name_taken') throw nameTaken(fields.name);
}

/** Deletes the schema, keeping its row for the extractions made from it. */
export async function deleteExtractionSchema(
  ctx: DomainContext,
  orgId: string,
  nameOrId: string,
  project: string,
): Promise<void> {
  const row = await findExtractionSchema(ctx.sql, orgId, nameOrId, project);
  await markSchemaDeleted(ctx.sql, row.id, ctx.now());
}

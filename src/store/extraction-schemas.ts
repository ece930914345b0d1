// Extraction schemas repository: rows of `extraction_schemas`. A deleted schema keeps its row (deleted_at) so
// extractions made from it still name it; only live schemas are found, and names are unique among them.
import type { ExtractionSchema } from '../schemas/extraction-schemas.js';
import type { Sql } from './db.js';
import { newId } from './ids.js';

export interface ExtractionSchemaRow extends ExtractionSchema {
  org_id: string;
  project_id: string;
}

/** A schema's writable fields. */
export type ExtractionSchemaFields = Pick<ExtractionSchema, 'name' | 'prompt' | 'fields'>;

/** The prefix of schema ids. */
export const EXTRACTION_SCHEMA_ID_PREFIX = 'conv_extract_schema';

/** PostgreSQL SQLSTATE 23505 unique_violation: the project already has a live schema of that name. */
const UNIQUE_VIOLATION = '23505';

export async function liveSchemaById(sql: Sql, id: string): Promise<ExtractionSchemaRow | undefined> {
  const [row] = await sql<
    ExtractionSchemaRow[]
  >`select * from extraction_schemas where id = ${id} and deleted_at is null`;
  return row;
}

export async function liveSchemaByName(
  sql: Sql,
  projectId: string,
  name: string,
): Promise<ExtractionSchemaRow | undefined> {
  const [row] = await sql<ExtractionSchemaRow[]>`
    select * from extraction_schemas where project_id = ${projectId} and name = ${name} and deleted_at is null`;
  return row;
}

/** The project's live schemas, oldest first. */
export async function listLiveSchemas(sql: Sql, projectId: string): Promise<ExtractionSchemaRow[]> {
  return sql<ExtractionSchemaRow[]>`
    select * from extraction_schemas where project_id = ${projectId} and deleted_at is null order by created_at, id`;
}

/** Inserts a schema; its new id, or `name_taken`. */
export async function insertSchema(
  sql: Sql,
  orgId: string,
  projectId: string,
  s: ExtractionSchemaFields,
): Promise<{ id: string } | 'name_taken'> {
  const id = newId(EXTRACTION_SCHEMA_ID_PREFIX);
  try {
    await sql`insert into extraction_schemas (id, org_id, project_id, name, prompt, fields)
              values (${id}, ${orgId}, ${projectId}, ${s.name}, ${s.prompt}, ${sql.json(s.fields)})`;
  } catch (err) {
    if ((err as { code?: string }).code === UNIQUE_VIOLATION) return 'name_taken';
    throw err;
  }
  return { id };
}

/** Writes the schema's fields; `name_taken` when another live schema of the project has the name. */
export async function updateSchema(
  sql: Sql,
  id: string,
  s: ExtractionSchemaFields,
  updatedAt: Date,
): Promise<'ok' | 'name_taken'> {
  try {
    await sql`update extraction_schemas set
      name = ${s.name}, prompt = ${s.prompt}, fields = ${sql.json(s.fields)}, updated_at = ${updatedAt}
      where id = ${id}`;
  } catch (err) {
    if ((err as { code?: string }).code === UNIQUE_VIOLATION) return 'name_taken';
    throw err;
  }
  return 'ok';
}

/** Marks the schema deleted (kept for the extractions that name it). */
export async function markSchemaDeleted(sql: Sql, id: string, deletedAt: Date): Promise<void> {
  await sql`update extraction_schemas set deleted_at = ${deletedAt} where id = ${id}`;
}

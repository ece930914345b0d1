// Tools repository: rows of `tools`; the definition is stored as created (src/schemas/tools.ts).
import type { ToolDefinition } from '../schemas/tools.js';
import type { Sql } from './db.js';
import { newId } from './ids.js';

type Json = Parameters<Sql['json']>[0];

export interface ToolRow {
  id: string;
  org_id: string;
  project_id: string;
  name: string;
  type: string;
  definition: ToolDefinition;
  created_at: Date;
  updated_at: Date;
}

/** PostgreSQL SQLSTATE 23505 unique_violation. */
const UNIQUE_VIOLATION = '23505';

export async function toolById(sql: Sql, id: string): Promise<ToolRow | undefined> {
  const [row] = await sql<ToolRow[]>`select * from tools where id = ${id}`;
  return row;
}

export async function toolByName(sql: Sql, projectId: string, name: string): Promise<ToolRow | undefined> {
  const [row] = await sql<ToolRow[]>`select * from tools where project_id = ${projectId} and name = ${name}`;
  return row;
}

export async function listTools(sql: Sql, projectId: string): Promise<ToolRow[]> {
  return sql<ToolRow[]>`select * from tools where project_id = ${projectId} order by created_at, name`;
}

/** The new row, or null when the organization already has a tool of that name. */
export async function insertTool(
  sql: Sql,
  orgId: string,
  projectId: string,
  def: ToolDefinition,
): Promise<ToolRow | null> {
  const [row] = await sql<ToolRow[]>`
    insert into tools (id, org_id, project_id, name, type, definition)
    values (${newId('tool')}, ${orgId}, ${projectId}, ${def.name}, ${def.type}, ${sql.json(def as unknown as Json)})
    on conflict (org_id, name) do nothing
    returning *`;
  return row ?? null;
}

/**
 * Replaces the definition if it is still `before` (a concurrent update makes this one `stale`); `name_taken` when
 * another tool of the organization has the new name.
 */
export async function updateTool(
  sql: Sql,
  id: string,
  before: ToolDefinition,
  def: ToolDefinition,
): Promise<'ok' | 'stale' | 'name_taken'> {
  try {
    const rows = await sql`
      update tools set name = ${def.name}, type = ${def.type}, definition = ${sql.json(def as unknown as Json)}, updated_at = now()
      where id = ${id} and definition = ${sql.json(before as unknown as Json)} returning 1`;
    return rows.length > 0 ? 'ok' : 'stale';
  } catch (err) {
    if ((err as { code?: string }).code === UNIQUE_VIOLATION) return 'name_taken';
    throw err;
  }
}

export async function deleteTool(sql: Sql, id: string): Promise<void> {
  await sql`delete from tools where id = ${id}`;
}

/** Names of the project's tools among `names`. */
export async function existingToolNames(sql: Sql, projectId: string, names: string[]): Promise<Set<string>> {
  if (names.length === 0) return new Set();
  const rows = await sql<
    { name: string }[]
  >`select name from tools where project_id = ${projectId} and name = any(${names})`;
  return new Set(rows.map((r) => r.name));
}

/** The tools of a project among `names` (what a live conversation of an agent naming them needs). */
export async function toolsByNames(sql: Sql, projectId: string, names: string[]): Promise<ToolRow[]> {
  if (names.length === 0) return [];
  return sql<ToolRow[]>`select * from tools where project_id = ${projectId} and name = any(${names}) order by name`;
}

// Projects repository: rows of `projects` and what a Project record adds to them.
import type { Sql } from './db.js';
import { newId } from './ids.js';
import type { Tx } from './transaction.js';

export interface ProjectRow {
  id: string;
  org_id: string;
  name: string;
  max_active_conversations: number | null;
  default_agent_id: string | null;
  created_at: Date;
}

/** PostgreSQL SQLSTATE 23505 unique_violation: the workspace already has a project of that name. */
const UNIQUE_VIOLATION = '23505';

export async function projectById(sql: Sql | Tx, id: string): Promise<ProjectRow | undefined> {
  const [row] = await sql<ProjectRow[]>`select * from projects where id = ${id}`;
  return row;
}

export async function projectByName(sql: Sql | Tx, orgId: string, name: string): Promise<ProjectRow | undefined> {
  const [row] = await sql<ProjectRow[]>`select * from projects where org_id = ${orgId} and name = ${name}`;
  return row;
}

export async function listProjects(sql: Sql, orgId: string): Promise<ProjectRow[]> {
  return sql<ProjectRow[]>`select * from projects where org_id = ${orgId} order by created_at, name`;
}

/** The new row, or undefined when the workspace already has a project of that name. */
export async function insertProject(
  sql: Sql,
  orgId: string,
  fields: { name: string; max_active_conversations?: number | null; default_agent_id?: string | null },
): Promise<ProjectRow | undefined> {
  const [row] = await sql<ProjectRow[]>`
    insert into projects (id, org_id, name, max_active_conversations, default_agent_id)
    values (${newId('proj')}, ${orgId}, ${fields.name}, ${fields.max_active_conversations ?? null},
            ${fields.default_agent_id ?? null})
    on conflict (org_id, name) do nothing
    returning *`;
  return row;
}

/** Writes the project's fields; `name_taken` when another project of the workspace has the name. */
export async function updateProject(
  sql: Sql,
  id: string,
  fields: { name: string; max_active_conversations: number | null; default_agent_id: string | null },
): Promise<'ok' | 'name_taken'> {
  try {
    await sql`update projects set name = ${fields.name}, max_active_conversations = ${fields.max_active_conversations},
              default_agent_id = ${fields.default_agent_id} where id = ${id}`;
    return 'ok';
  } catch (err) {
    if ((err as { code?: string }).code === UNIQUE_VIOLATION) return 'name_taken';
    throw err;
  }
}

/** Deletes the project; its agents, tools and the rest go with it (foreign keys cascade). */
export async function deleteProject(sql: Sql, id: string): Promise<void> {
  await sql`delete from projects where id = ${id}`;
}

/** `{id, name}` of each default agent named by the rows (agents live in the agents-tools migration). */
export async function defaultAgents(sql: Sql, rows: ProjectRow[]): Promise<Map<string, { id: string; name: string }>> {
  const ids = rows.map((r) => r.default_agent_id).filter((v): v is string => v !== null);
  const out = new Map<string, { id: string; name: string }>();
  if (ids.length === 0) return out;
  const agents = await sql<{ id: string; name: string }[]>`select id, name from agents where id = any(${ids})`;
  for (const a of agents) out.set(a.id, { id: a.id, name: a.name });
  return out;
}

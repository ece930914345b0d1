// Projects repository: rows of `projects` and what a Project record adds to them.
import type { Sql } from './db.js';
import { newId } from './ids.js';

export interface ProjectRow {
  id: string;
  org_id: string;
  name: string;
  max_active_conversations: number | null;
  default_agent_id: string | null;
  created_at: Date;
}

export async function listProjects(sql: Sql, orgId: string): Promise<ProjectRow[]> {
  return sql<ProjectRow[]>`select * from projects where org_id = ${orgId} order by created_at, name`;
}

export async function insertProject(
  sql: Sql,
  orgId: string,
  fields: { name: string; max_active_conversations?: number | null; default_agent_id?: string | null },
): Promise<ProjectRow> {
  const [row] = await sql<ProjectRow[]>`
    insert into projects (id, org_id, name, max_active_conversations, default_agent_id)
    values (${newId('proj')}, ${orgId}, ${fields.name}, ${fields.max_active_conversations ?? null},
            ${fields.default_agent_id ?? null})
    on conflict (org_id, name) do nothing
    returning *`;
  return row;
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

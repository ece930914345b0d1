// Projects: addressing by name or id (every resource's `project` parameter), records with their live counts, and
// the rules of `main`, the project every workspace is created with.
import type { Project } from '../schemas/projects.js';
import type { Sql } from '../store/db.js';
import { isId } from '../store/ids.js';
import { activeCounts } from '../store/leases.js';
import { findAgentId } from '../store/agents.js';
import {
  defaultAgents,
  deleteProject as deleteProjectRow,
  insertProject,
  listProjects,
  projectById,
  projectByName,
  updateProject as updateProjectRow,
  type ProjectRow,
} from '../store/projects.js';
import { conflict, invalidParam, notFound } from './errors.js';
import { ownedBy } from './ownership.js';

/** The workspace's first project, created with it; it cannot be renamed or deleted. */
export const MAIN_PROJECT = 'main';

/**
 * The project `nameOrId` names in the caller's workspace (a name, or an id). Throws not_found when there is none and
 * forbidden when the id names another workspace's project.
 */
export async function resolveProject(sql: Sql, orgId: string, nameOrId = MAIN_PROJECT): Promise<ProjectRow> {
  if (isId('proj', nameOrId)) return ownedBy(await projectById(sql, nameOrId), orgId, 'project', nameOrId);
  const row = await projectByName(sql, orgId, nameOrId);
  if (!row) throw notFound('project', nameOrId);
  return row;
}

/** The Project records of `rows`: default agent and conversations in progress now. */
async function projectRecords(sql: Sql, rows: ProjectRow[]): Promise<Project[]> {
  const [agents, active] = await Promise.all([
    defaultAgents(sql, rows),
    activeCounts(
      sql,
      rows.map((r) => r.id),
    ),
  ]);
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    default_agent: (r.default_agent_id && agents.get(r.default_agent_id)) || null,
    active_conversations: active.get(r.id) ?? 0,
    max_active_conversations: r.max_active_conversations,
  }));
}

async function recordOf(sql: Sql, row: ProjectRow): Promise<Project> {
  const [record] = await projectRecords(sql, [row]);
  return record!;
}

/** The workspace's projects, oldest first. */
export async function listProjectRecords(sql: Sql, orgId: string): Promise<Project[]> {
  return projectRecords(sql, await listProjects(sql, orgId));
}

/** The record of the project `nameOrId` names (resolveProject's errors). */
export async function getProjectRecord(sql: Sql, orgId: string, nameOrId: string): Promise<Project> {
  return recordOf(sql, await resolveProject(sql, orgId, nameOrId));
}

/** A new project; conflict (on `name`) when the workspace has one of that name. */
export async function createProject(
  sql: Sql,
  orgId: string,
  fields: { name: string; max_active_conversations?: number | null },
): Promise<Project> {
  const row = await insertProject(sql, orgId, fields);
  if (!row) throw invalidParam('name', `a project named '${fields.name}' already exists`, 'conflict');
  return recordOf(sql, row);
}

/** The agent id a `default_agent` value (name or id, in the project) names; invalid when there is none. */
async function defaultAgentId(sql: Sql, projectId: string, value: string | null): Promise<string | null> {
  if (value === null) return null;
  const id = await findAgentId(sql, projectId, isId('agent', value) ? 'id' : 'name', value);
  if (!id) throw invalidParam('default_agent', `no agent '${value}' in this project`);
  return id;
}

/** Changes what is sent; `main` keeps its name, and a name taken by another project is a conflict. */
export async function updateProject(
  sql: Sql,
  orgId: string,
  nameOrId: string,
  changes: { name?: string; max_active_conversations?: number | null; default_agent?: string | null },
): Promise<void> {
  const row = await resolveProject(sql, orgId, nameOrId);
  if (changes.name !== undefined && changes.name !== row.name && row.name === MAIN_PROJECT) {
    throw invalidParam('name', 'the main project cannot be renamed');
  }
  const fields = {
    name: changes.name ?? row.name,
    max_active_conversations:
      changes.max_active_conversations === undefined ? row.max_active_conversations : changes.max_active_conversations,
    default_agent_id:
      changes.default_agent === undefined
        ? row.default_agent_id
        : await defaultAgentId(sql, row.id, changes.default_agent),
  };
  if ((await updateProjectRow(sql, row.id, fields)) === 'name_taken') {
    throw invalidParam('name', `a project named '${fields.name}' already exists`, 'conflict');
  }
}

/** Deletes the project and everything in it; `main` cannot go (conflict `main_project`). */
export async function deleteProject(sql: Sql, orgId: string, nameOrId: string): Promise<void> {
  const row = await resolveProject(sql, orgId, nameOrId);
  if (row.name === MAIN_PROJECT) throw conflict('the main project cannot be deleted', 'main_project');
  await deleteProjectRow(sql, row.id);
}

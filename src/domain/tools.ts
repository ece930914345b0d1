// Custom tools of a project: addressing by name or id, create, update (the merged tool must satisfy every rule a
// created one does) and delete. Names are unique in the workspace; transfer tools name agents of their project.
import type { Settings } from '../config.js';
import {
  toolCreateBody,
  toolView,
  toStoredDefinition,
  type ToolDefinition,
  type ToolUpdateBody,
} from '../schemas/tools.js';
import { existingAgentNames } from '../store/agents.js';
import type { Sql } from '../store/db.js';
import { isId } from '../store/ids.js';
import { projectById, type ProjectRow } from '../store/projects.js';
import {
  deleteTool as deleteToolRow,
  insertTool,
  listTools,
  toolById,
  toolByName,
  updateTool as updateToolRow,
  type ToolRow,
} from '../store/tools.js';
import type { DomainContext } from './context.js';
import { conflict, DomainError, invalidParams, notFound } from './errors.js';
import { ownedBy } from './ownership.js';
import { resolveProject } from './projects.js';

/** A tool as a read returns it. */
export type ToolRecord = ReturnType<typeof toolView>;

const nameExists = (name: string) => conflict(`a tool named '${name}' already exists`, 'name_exists');

const recordOf = (row: Pick<ToolRow, 'id' | 'definition'>, project: Pick<ProjectRow, 'id' | 'name'>): ToolRecord =>
  toolView(row.id, { id: project.id, name: project.name }, row.definition);

/**
 * The tool `nameOrId` names: by id in any project of the workspace, else by name in the project `project` names.
 * Throws not_found or forbidden (another workspace's).
 */
export async function findTool(
  sql: Sql,
  orgId: string,
  project: string,
  nameOrId: string,
): Promise<{ row: ToolRow; project: ProjectRow }> {
  if (isId('tool', nameOrId)) {
    const row = ownedBy(await toolById(sql, nameOrId), orgId, 'tool', nameOrId);
    const p = await projectById(sql, row.project_id);
    if (!p) throw notFound('tool', nameOrId); // deleted with its project meanwhile
    return { row, project: p };
  }
  const p = await resolveProject(sql, orgId, project);
  const row = await toolByName(sql, p.id, nameOrId);
  if (!row) throw notFound('tool', nameOrId);
  return { row, project: p };
}

/** A transfer tool's `agents_to_transfer_to` names agents of the tool's project; invalid (per entry) otherwise. */
async function checkTransferAgents(sql: Sql, projectId: string, def: ToolDefinition): Promise<void> {
  const names = def.agents_to_transfer_to;
  if (!names) return;
  const known = await existingAgentNames(sql, projectId, names);
  const issues: Record<string, string> = {};
  names.forEach((n, i) => {
    if (!known.has(n)) issues[`agents_to_transfer_to.${i}`] = `no agent named '${n}' in the tool's project`;
  });
  if (Object.keys(issues).length > 0) throw invalidParams(issues);
}

/** The project's tools, oldest first. */
export async function listToolRecords(sql: Sql, orgId: string, project: string): Promise<ToolRecord[]> {
  const p = await resolveProject(sql, orgId, project);
  return (await listTools(sql, p.id)).map((row) => recordOf(row, p));
}

/** The record of the tool `nameOrId` names (findTool's errors). */
export async function getToolRecord(sql: Sql, orgId: string, project: string, nameOrId: string): Promise<ToolRecord> {
  const { row, project: p } = await findTool(sql, orgId, project, nameOrId);
  return recordOf(row, p);
}

/** Creates a tool of the project from a valid definition; conflict `name_exists` when the workspace has the name. */
export async function createTool(
  sql: Sql,
  orgId: string,
  project: string,
  definition: ToolDefinition,
): Promise<{ id: string; name: string }> {
  const p = await resolveProject(sql, orgId, project);
  const def = toStoredDefinition(definition);
  await checkTransferAgents(sql, p.id, def);
  const row = await insertTool(sql, orgId, p.id, def);
  if (!row) throw nameExists(def.name);
  return { id: row.id, name: row.name };
}

/** The create schema of a server's settings, built once (it is large). */
const createSchemas = new WeakMap<Settings, ReturnType<typeof toolCreateBody>>();
function createSchemaOf(settings: Settings): ReturnType<typeof toolCreateBody> {
  let schema = createSchemas.get(settings);
  if (!schema) {
    schema = toolCreateBody(settings);
    createSchemas.set(settings, schema);
  }
  return schema;
}

/**
 * Changes what `changes` sends of the tool; the type cannot change, and the merged tool must satisfy every rule a
 * created one does (invalid with paramErrors). Conflict `name_exists` for a taken name, `tool_busy` when another
 * update changed it meanwhile. Returns the record after.
 */
export async function updateTool(
  ctx: DomainContext,
  orgId: string,
  project: string,
  nameOrId: string,
  changes: ToolUpdateBody,
): Promise<ToolRecord> {
  const { sql } = ctx;
  const { row, project: p } = await findTool(sql, orgId, project, nameOrId);
  if (changes.type !== undefined && changes.type !== row.definition.type) {
    throw new DomainError('invalid', 'invalid parameter type: the type of a tool cannot change', {
      paramErrors: { type: 'cannot change; create a new tool' },
    });
  }
  const merged: Record<string, unknown> = { ...row.definition };
  for (const [k, v] of Object.entries(changes)) if (v !== undefined) merged[k] = v;
  const parsed = createSchemaOf(ctx.settings).safeParse(merged);
  if (!parsed.success) {
    const issues: Record<string, string> = {};
    for (const i of parsed.error.issues) issues[i.path.map(String).join('.') || 'body'] ??= i.message;
    throw invalidParams(issues);
  }
  const def = toStoredDefinition(parsed.data);
  if (changes.agents_to_transfer_to !== undefined) await checkTransferAgents(sql, p.id, def);
  const outcome = await updateToolRow(sql, row.id, row.definition, def);
  if (outcome === 'name_taken') throw nameExists(def.name);
  if (outcome === 'stale') throw conflict('the tool was changed by another request; retry', 'tool_busy');
  return recordOf({ id: row.id, definition: def }, p);
}

/** Deletes the tool (findTool's errors). */
export async function deleteTool(sql: Sql, orgId: string, project: string, nameOrId: string): Promise<void> {
  const { row } = await findTool(sql, orgId, project, nameOrId);
  await deleteToolRow(sql, row.id);
}

// The tools a POST /v1/responses request offers the model, with the stored ones it names looked up in its project.
import type { ResponsesRequestBody } from '../schemas/responses.js';
import type { Sql } from '../store/db.js';
import { invalidParam } from '../domain/errors.js';
import { resolveProject } from '../domain/projects.js';
import { resolveTools, storedToolNames, ToolReferenceError, type StoredTool } from './resolve.js';
import { loadStoredTools } from './stored-tools.js';
import type { OfferedTool } from './tools.js';

/**
 * The offered tools of the workspace's request: inline definitions, then what `tools` names (stored tools of the
 * `project` it names). Throws the project's errors, and invalid on the entry a tool reference fails at.
 */
export async function offeredTools(
  sql: Sql,
  orgId: string,
  body: Pick<ResponsesRequestBody, 'tools' | 'tool_definitions' | 'project'>,
  opts: { webSearch: boolean },
): Promise<OfferedTool[]> {
  let stored: ReadonlyMap<string, StoredTool> = new Map();
  if (body.project !== undefined) {
    const project = await resolveProject(sql, orgId, body.project);
    const names = storedToolNames(body.tools);
    if (names.length > 0) stored = await loadStoredTools(sql, project.id, names);
  }
  try {
    return resolveTools(body, stored, opts);
  } catch (err) {
    if (err instanceof ToolReferenceError) throw invalidParam(err.param, err.message);
    throw err;
  }
}

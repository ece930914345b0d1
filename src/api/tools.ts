// Tools: create (spec endpoint 7), list (8), delete (9), and get and update.
import { z } from 'zod';
import { requireApiKey } from '../auth/hook.js';
import { successBody } from '../schemas/common.js';
import { toolCreateBody, toolRecord, toolUpdateBody, toolView, toStoredDefinition, type ToolDefinition } from '../schemas/tools.js';
import { existingAgentNames } from '../store/agents.js';
import type { Sql } from '../store/db.js';
import type { ProjectRow } from '../store/projects.js';
import { deleteTool, insertTool, listTools, toolById, toolByName, updateTool, type ToolRow } from '../store/tools.js';
import { badRequest, conflict, notFound } from './errors.js';
import { isId, ownedBy, projectQuery, resolveProject } from './lookup.js';
import type { RoutePlugin } from './routes.js';

const nameOrIdParams = z.object({ nameOrId: z.string().min(1).max(200) });
const nameExists = (name: string) => conflict(`a tool named '${name}' already exists`, 'name_exists');

/** The tool a path names: by id in any workspace (403 for another's), else by name in the `project` query's project. */
async function findTool(sql: Sql, orgId: string, project: string, nameOrId: string): Promise<{ row: ToolRow; project: ProjectRow }> {
  if (isId('tool', nameOrId)) {
    const row = ownedBy(await toolById(sql, nameOrId), orgId, 'tool', nameOrId);
    const [p] = await sql<ProjectRow[]>`select * from projects where id = ${row.project_id}`;
    return { row, project: p };
  }
  const p = await resolveProject(sql, orgId, project);
  const row = await toolByName(sql, p.id, nameOrId);
  if (!row) throw notFound('tool', nameOrId);
  return { row, project: p };
}

/** Spec, "Tool": agents_to_transfer_to names agents of the tool's project. */
async function checkTransferAgents(sql: Sql, projectId: string, def: ToolDefinition): Promise<void> {
  const names = def.agents_to_transfer_to;
  if (!names) return;
  const known = await existingAgentNames(sql, projectId, names);
  const issues: Record<string, string> = {};
  names.forEach((n, i) => {
    if (!known.has(n)) issues[`agents_to_transfer_to.${i}`] = `no agent named '${n}' in the tool's project`;
  });
  const [first] = Object.keys(issues);
  if (first) throw badRequest(`invalid parameter ${first}: ${issues[first]}`, issues);
}

const view = (row: ToolRow, project: ProjectRow) => toolView(row.id, { id: project.id, name: project.name }, row.definition);

export const toolRoutes: RoutePlugin = async (app, ctx) => {
  const { sql } = ctx;
  const createBody = toolCreateBody(ctx.settings);
  const updateBody = toolUpdateBody(ctx.settings);

  app.post(
    '/v1/tools',
    {
      schema: {
        tags: ['tools'],
        querystring: projectQuery,
        body: createBody,
        response: { 201: z.object({ id: z.string(), name: z.string() }) },
      },
    },
    async (req, reply) => {
      // Spec, "Authentication" 4: only API keys create tools.
      requireApiKey(req.auth, 'create tools');
      const project = await resolveProject(sql, req.auth.orgId, req.query.project);
      const def = toStoredDefinition(req.body as ToolDefinition);
      await checkTransferAgents(sql, project.id, def);
      const row = await insertTool(sql, req.auth.orgId, project.id, def);
      if (!row) throw nameExists(def.name);
      return reply.status(201).send({ id: row.id, name: row.name });
    },
  );

  app.get(
    '/v1/tools',
    { schema: { tags: ['tools'], querystring: projectQuery, response: { 200: z.object({ tools: z.array(toolRecord) }) } } },
    async (req) => {
      const project = await resolveProject(sql, req.auth.orgId, req.query.project);
      return { tools: (await listTools(sql, project.id)).map((row) => view(row, project)) };
    },
  );

  app.get(
    '/v1/tools/:nameOrId',
    { schema: { tags: ['tools'], params: nameOrIdParams, querystring: projectQuery, response: { 200: z.object({ tool: toolRecord }) } } },
    async (req) => {
      const { row, project } = await findTool(sql, req.auth.orgId, req.query.project, req.params.nameOrId);
      return { tool: view(row, project) };
    },
  );

  app.patch(
    '/v1/tools/:nameOrId',
    {
      schema: {
        tags: ['tools'],
        params: nameOrIdParams,
        querystring: projectQuery,
        body: updateBody,
        response: { 200: z.object({ success: z.boolean(), tool: toolRecord }) },
      },
    },
    async (req) => {
      requireApiKey(req.auth, 'update tools');
      const { row, project } = await findTool(sql, req.auth.orgId, req.query.project, req.params.nameOrId);
      if (req.body.type !== undefined && req.body.type !== row.definition.type) {
        throw badRequest('invalid parameter type: the type of a tool cannot change', { type: 'cannot change; create a new tool' });
      }
      const merged: Record<string, unknown> = { ...row.definition };
      for (const [k, v] of Object.entries(req.body)) if (v !== undefined) merged[k] = v;
      // The merged tool must satisfy every rule a created one does.
      const parsed = createBody.safeParse(merged);
      if (!parsed.success) {
        const issues: Record<string, string> = {};
        for (const i of parsed.error.issues) issues[i.path.map(String).join('.') || 'body'] ??= i.message;
        const [first] = Object.keys(issues);
        throw badRequest(`invalid parameter ${first}: ${issues[first]}`, issues);
      }
      const def = toStoredDefinition(parsed.data as ToolDefinition);
      if (req.body.agents_to_transfer_to !== undefined) await checkTransferAgents(sql, project.id, def);
      const outcome = await updateTool(sql, row.id, row.definition, def);
      if (outcome === 'name_taken') throw nameExists(def.name);
      if (outcome === 'stale') throw conflict('the tool was changed by another request; retry', 'tool_busy');
      return { success: true, tool: view({ ...row, name: def.name, definition: def }, project) };
    },
  );

  app.delete(
    '/v1/tools/:nameOrId',
    { schema: { tags: ['tools'], params: nameOrIdParams, querystring: projectQuery, response: { 200: successBody } } },
    async (req) => {
      requireApiKey(req.auth, 'delete tools');
      const { row } = await findTool(sql, req.auth.orgId, req.query.project, req.params.nameOrId);
      await deleteTool(sql, row.id);
      return { success: true };
    },
  );
};

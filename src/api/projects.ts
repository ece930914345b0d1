// Projects: get and list (spec endpoints 15, 16), create, update, delete.
import type { Sql } from '../store/db.js';
import { activeCounts } from '../store/leases.js';
import {
  defaultAgents,
  insertProject,
  listProjects,
  type ProjectRow,
} from '../store/projects.js';
import {
  createProjectBody,
  projectBody,
  projectParams,
  projectsBody,
  updateProjectBody,
  type Project,
} from '../schemas/projects.js';
import { successBody } from '../schemas/common.js';
import { conflict, invalidParam } from './errors.js';
import { isId, resolveProject } from './lookup.js';
import type { RoutePlugin } from './routes.js';

/** The workspace's first project, created with it; it cannot be renamed or deleted. */
export const MAIN_PROJECT = 'main';

async function toRecords(sql: Sql, rows: ProjectRow[]): Promise<Project[]> {
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

/** The agent id a `default_agent` value (name or id, in the project) names; 400 when there is none. */
async function resolveDefaultAgent(sql: Sql, projectId: string, value: string | null): Promise<string | null> {
  if (value === null) return null;
  const [row] = await sql<{ id: string }[]>`
    select id from agents where project_id = ${projectId} and ${isId('agent', value) ? sql`id` : sql`name`} = ${value}`;
  if (!row) throw invalidParam('default_agent', `no agent '${value}' in this project`);
  return row.id;
}

export const projectRoutes: RoutePlugin = async (app, { sql }) => {
  app.get('/v1/projects', { schema: { tags: ['projects'], response: { 200: projectsBody } } }, async (req) => ({
    projects: await toRecords(sql, await listProjects(sql, req.auth.orgId)),
  }));

  app.get(
    '/v1/projects/:nameOrId',
    { schema: { tags: ['projects'], params: projectParams, response: { 200: projectBody } } },
    async (req) => {
      const row = await resolveProject(sql, req.auth.orgId, req.params.nameOrId);
      const [project] = await toRecords(sql, [row]);
      return { project };
    },
  );

  app.post(
    '/v1/projects',
    { schema: { tags: ['projects'], body: createProjectBody, response: { 201: projectBody } } },
    async (req, reply) => {
      const row = await insertProject(sql, req.auth.orgId, {
        name: req.body.name,
        max_active_conversations: req.body.max_active_conversations,
      });
      if (!row) throw invalidParam('name', `a project named '${req.body.name}' already exists`, 409);
      const [project] = await toRecords(sql, [row]);
      return reply.status(201).send({ project });
    },
  );

  app.patch(
    '/v1/projects/:nameOrId',
    { schema: { tags: ['projects'], params: projectParams, body: updateProjectBody, response: { 200: successBody } } },
    async (req) => {
      const row = await resolveProject(sql, req.auth.orgId, req.params.nameOrId);
      const b = req.body;
      if (b.name !== undefined && b.name !== row.name && row.name === MAIN_PROJECT) {
        throw invalidParam('name', 'the main project cannot be renamed');
      }
      const defaultAgentId =
        b.default_agent === undefined ? row.default_agent_id : await resolveDefaultAgent(sql, row.id, b.default_agent);
      const name = b.name ?? row.name;
      const maxActive = b.max_active_conversations === undefined ? row.max_active_conversations : b.max_active_conversations;
      try {
        await sql`update projects set name = ${name}, max_active_conversations = ${maxActive},
                  default_agent_id = ${defaultAgentId} where id = ${row.id}`;
      } catch (err) {
        if ((err as { code?: string }).code === '23505') {
          throw invalidParam('name', `a project named '${name}' already exists`, 409);
        }
        throw err;
      }
      return { success: true };
    },
  );

  app.delete(
    '/v1/projects/:nameOrId',
    { schema: { tags: ['projects'], params: projectParams, response: { 200: successBody } } },
    async (req) => {
      const row = await resolveProject(sql, req.auth.orgId, req.params.nameOrId);
      if (row.name === MAIN_PROJECT) throw conflict('the main project cannot be deleted', 'main_project');
      await sql`delete from projects where id = ${row.id}`;
      return { success: true };
    },
  );
};

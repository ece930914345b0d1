// Projects: GET, POST /v1/projects and GET, PATCH, DELETE /v1/projects/{nameOrId}.
import {
  createProject,
  deleteProject,
  getProjectRecord,
  listProjectRecords,
  updateProject,
} from '../domain/projects.js';
import { createProjectBody, projectBody, projectParams, projectsBody, updateProjectBody } from '../schemas/projects.js';
import { successBody } from '../schemas/common.js';
import type { RoutePlugin } from './types.js';

export const projectRoutes: RoutePlugin = async (app, { sql }) => {
  app.get('/projects', { schema: { tags: ['projects'], response: { 200: projectsBody } } }, async (req) => ({
    projects: await listProjectRecords(sql, req.auth.orgId),
  }));

  app.get(
    '/projects/:nameOrId',
    { schema: { tags: ['projects'], params: projectParams, response: { 200: projectBody } } },
    async (req) => ({ project: await getProjectRecord(sql, req.auth.orgId, req.params.nameOrId) }),
  );

  app.post(
    '/projects',
    { schema: { tags: ['projects'], body: createProjectBody, response: { 201: projectBody } } },
    async (req, reply) => reply.status(201).send({ project: await createProject(sql, req.auth.orgId, req.body) }),
  );

  app.patch(
    '/projects/:nameOrId',
    { schema: { tags: ['projects'], params: projectParams, body: updateProjectBody, response: { 200: successBody } } },
    async (req) => {
      await updateProject(sql, req.auth.orgId, req.params.nameOrId, req.body);
      return { success: true };
    },
  );

  app.delete(
    '/projects/:nameOrId',
    { schema: { tags: ['projects'], params: projectParams, response: { 200: successBody } } },
    async (req) => {
      await deleteProject(sql, req.auth.orgId, req.params.nameOrId);
      return { success: true };
    },
  );
};

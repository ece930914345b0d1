// Tools: POST, GET /v1/tools and GET, PATCH, DELETE /v1/tools/{nameOrId}. Only API keys create, change and delete.
import { z } from 'zod';
import { createTool, deleteTool, getToolRecord, listToolRecords, updateTool } from '../domain/tools.js';
import { successBody } from '../schemas/common.js';
import { toolCreateBody, toolRecord, toolUpdateBody } from '../schemas/tools.js';
import { requireApiKey } from './auth-hook.js';
import { nameOrIdParams, projectQuery } from './params.js';
import type { RoutePlugin } from './types.js';

export const toolRoutes: RoutePlugin = async (app, ctx) => {
  const { sql } = ctx;
  const createBody = toolCreateBody(ctx.settings);
  const updateBody = toolUpdateBody(ctx.settings);

  app.post(
    '/tools',
    {
      schema: {
        tags: ['tools'],
        querystring: projectQuery,
        body: createBody,
        response: { 201: z.object({ id: z.string(), name: z.string() }) },
      },
    },
    async (req, reply) => {
      requireApiKey(req.auth, 'create tools');
      return reply.status(201).send(await createTool(sql, req.auth.orgId, req.query.project, req.body));
    },
  );

  app.get(
    '/tools',
    {
      schema: {
        tags: ['tools'],
        querystring: projectQuery,
        response: { 200: z.object({ tools: z.array(toolRecord) }) },
      },
    },
    async (req) => ({ tools: await listToolRecords(sql, req.auth.orgId, req.query.project) }),
  );

  app.get(
    '/tools/:nameOrId',
    {
      schema: {
        tags: ['tools'],
        params: nameOrIdParams,
        querystring: projectQuery,
        response: { 200: z.object({ tool: toolRecord }) },
      },
    },
    async (req) => ({ tool: await getToolRecord(sql, req.auth.orgId, req.query.project, req.params.nameOrId) }),
  );

  app.patch(
    '/tools/:nameOrId',
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
      return {
        success: true,
        tool: await updateTool(ctx, req.auth.orgId, req.query.project, req.params.nameOrId, req.body),
      };
    },
  );

  app.delete(
    '/tools/:nameOrId',
    { schema: { tags: ['tools'], params: nameOrIdParams, querystring: projectQuery, response: { 200: successBody } } },
    async (req) => {
      requireApiKey(req.auth, 'delete tools');
      await deleteTool(sql, req.auth.orgId, req.query.project, req.params.nameOrId);
      return { success: true };
    },
  );
};

// Agents: PUT /v1/agents/upsert, POST /v1/agents, GET (one, list), PATCH, DELETE, and enable/disable. The rules
// and the write service are the domain's (src/domain/agents.ts, agent-write.ts).
import { z } from 'zod';
import {
  createAgent,
  deleteAgent,
  disableAgent,
  enableAgent,
  getAgentRecord,
  listAgentRecords,
  updateAgent,
  upsertAgent,
} from '../domain/agents.js';
import { agentRecord, agentUpdateBody, agentUpsertBody } from '../schemas/agents.js';
import { successBody } from '../schemas/common.js';
import { requireApiKey } from './auth-hook.js';
import { nameOrIdParams, projectQuery } from './params.js';
import type { RoutePlugin } from './types.js';

const agentBody = z.object({ agent: agentRecord });

export const agentRoutes: RoutePlugin = async (app, ctx) => {
  const { sql } = ctx;
  const upsertBody = agentUpsertBody(ctx.settings);
  const updateBody = agentUpdateBody(ctx.settings);
  const params = nameOrIdParams;

  app.put(
    '/agents/upsert',
    {
      schema: {
        tags: ['agents'],
        querystring: projectQuery,
        body: upsertBody,
        response: { 200: z.object({ agent: agentRecord, inserted: z.boolean(), updated: z.boolean() }) },
      },
    },
    async (req) => {
      requireApiKey(req.auth, 'upsert agents');
      return upsertAgent(ctx, req.auth.orgId, req.query.project, req.body);
    },
  );

  app.post(
    '/agents',
    { schema: { tags: ['agents'], querystring: projectQuery, body: upsertBody, response: { 201: agentBody } } },
    async (req, reply) => {
      requireApiKey(req.auth, 'create agents');
      const agent = await createAgent(ctx, req.auth.orgId, req.query.project, req.body);
      return reply.status(201).send({ agent });
    },
  );

  app.get(
    '/agents',
    {
      schema: {
        tags: ['agents'],
        querystring: projectQuery,
        response: { 200: z.object({ agents: z.array(agentRecord) }) },
      },
    },
    async (req) => ({ agents: await listAgentRecords(sql, req.auth.orgId, req.query.project) }),
  );

  app.get(
    '/agents/:nameOrId',
    { schema: { tags: ['agents'], params, querystring: projectQuery, response: { 200: agentBody } } },
    async (req) => ({ agent: await getAgentRecord(sql, req.auth.orgId, req.query.project, req.params.nameOrId) }),
  );

  app.patch(
    '/agents/:nameOrId',
    {
      schema: {
        tags: ['agents'],
        params,
        querystring: projectQuery,
        body: updateBody,
        response: { 200: z.object({ success: z.boolean(), version_number: z.number().int(), agent: agentRecord }) },
      },
    },
    async (req) => {
      requireApiKey(req.auth, 'update agents');
      const out = await updateAgent(ctx, req.auth.orgId, req.query.project, req.params.nameOrId, req.body);
      return { success: true, version_number: out.version, agent: out.agent };
    },
  );

  app.delete(
    '/agents/:nameOrId',
    { schema: { tags: ['agents'], params, querystring: projectQuery, response: { 200: successBody } } },
    async (req) => {
      requireApiKey(req.auth, 'delete agents');
      await deleteAgent(sql, req.auth.orgId, req.query.project, req.params.nameOrId);
      return { success: true };
    },
  );

  app.post(
    '/agents/:nameOrId/enable',
    { schema: { tags: ['agents'], params, querystring: projectQuery, response: { 200: successBody } } },
    async (req) => {
      requireApiKey(req.auth, 'enable agents');
      await enableAgent(ctx, req.auth.orgId, req.query.project, req.params.nameOrId);
      return { success: true };
    },
  );

  app.post(
    '/agents/:nameOrId/disable',
    { schema: { tags: ['agents'], params, querystring: projectQuery, response: { 200: successBody } } },
    async (req) => {
      requireApiKey(req.auth, 'disable agents');
      await disableAgent(sql, req.auth.orgId, req.query.project, req.params.nameOrId);
      return { success: true };
    },
  );
};

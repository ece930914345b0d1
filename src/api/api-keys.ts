// API keys: POST, GET /v1/api_keys, PATCH, DELETE /v1/api_keys/{id} and POST .../rotate. Only API keys manage keys.
import { createApiKey, deleteApiKey, listApiKeyRecords, renameApiKey, rotateApiKey } from '../domain/api-keys.js';
import {
  apiKeyParams,
  apiKeySecretBody,
  apiKeysBody,
  createApiKeyBody,
  updateApiKeyBody,
} from '../schemas/api-keys.js';
import { successBody } from '../schemas/common.js';
import { requireApiKey } from './auth-hook.js';
import type { RoutePlugin } from './types.js';

const ACTION = 'manage API keys';

export const apiKeyRoutes: RoutePlugin = async (app, ctx) => {
  const { sql, credentials } = ctx;

  app.post(
    '/api_keys',
    { schema: { tags: ['api keys'], body: createApiKeyBody, response: { 201: apiKeySecretBody } } },
    async (req, reply) => {
      requireApiKey(req.auth, ACTION);
      const key = await createApiKey(sql, req.auth.orgId, req.body.name);
      return reply.status(201).send({ id: key.id, name: req.body.name, api_key: key.secret });
    },
  );

  app.get('/api_keys', { schema: { tags: ['api keys'], response: { 200: apiKeysBody } } }, async (req) => {
    requireApiKey(req.auth, ACTION);
    return { api_keys: await listApiKeyRecords(sql, req.auth.orgId) };
  });

  app.patch(
    '/api_keys/:id',
    { schema: { tags: ['api keys'], params: apiKeyParams, body: updateApiKeyBody, response: { 200: successBody } } },
    async (req) => {
      requireApiKey(req.auth, ACTION);
      await renameApiKey(sql, req.auth.orgId, req.params.id, req.body.name);
      return { success: true };
    },
  );

  app.delete(
    '/api_keys/:id',
    { schema: { tags: ['api keys'], params: apiKeyParams, response: { 200: successBody } } },
    async (req) => {
      requireApiKey(req.auth, ACTION);
      await deleteApiKey(sql, credentials, req.auth.orgId, req.params.id);
      return { success: true };
    },
  );

  app.post(
    '/api_keys/:id/rotate',
    { schema: { tags: ['api keys'], params: apiKeyParams, response: { 200: apiKeySecretBody } } },
    async (req) => {
      requireApiKey(req.auth, ACTION);
      const key = await rotateApiKey(ctx, credentials, req.auth.orgId, req.params.id);
      return { id: key.id, name: key.name, api_key: key.secret };
    },
  );
};

// API keys: create, list, update, delete, rotate (spec endpoint 2). Only API keys may manage keys.
import { requireApiKey } from '../auth/hook.js';
import { hashSecret, newApiKeySecret, secretHint } from '../auth/secrets.js';
import { insertApiKey } from '../store/workspaces.js';
import {
  apiKeyParams,
  apiKeySecretBody,
  apiKeysBody,
  createApiKeyBody,
  updateApiKeyBody,
} from '../schemas/api-keys.js';
import { successBody } from '../schemas/common.js';
import { conflict } from './errors.js';
import { ownedBy } from './lookup.js';
import type { RoutePlugin } from './routes.js';
import { transaction } from '../store/transaction.js';

interface KeyRow {
  id: string;
  org_id: string;
  name: string;
  secret_hint: string;
  created_at: Date;
  rotated_at: Date | null;
}

export const apiKeyRoutes: RoutePlugin = async (app, { sql, now, credentials }) => {
  const load = async (orgId: string, id: string) => {
    const [row] = await sql<KeyRow[]>`select id, org_id, name, secret_hint, created_at, rotated_at from api_keys where id = ${id}`;
    return ownedBy(row, orgId, 'API key', id);
  };

  app.post(
    '/v1/api_keys',
    { schema: { tags: ['api keys'], body: createApiKeyBody, response: { 201: apiKeySecretBody } } },
    async (req, reply) => {
      requireApiKey(req.auth, 'manage API keys');
      const key = await insertApiKey(sql, req.auth.orgId, req.body.name);
      return reply.status(201).send({ id: key.id, name: req.body.name, api_key: key.secret });
    },
  );

  app.get('/v1/api_keys', { schema: { tags: ['api keys'], response: { 200: apiKeysBody } } }, async (req) => {
    requireApiKey(req.auth, 'manage API keys');
    const rows = await sql<KeyRow[]>`
      select id, org_id, name, secret_hint, created_at, rotated_at from api_keys
      where org_id = ${req.auth.orgId} order by created_at, id`;
    return {
      api_keys: rows.map((r) => ({
        id: r.id,
        name: r.name,
        key_hint: r.secret_hint,
        created_at: r.created_at.toISOString(),
        rotated_at: r.rotated_at?.toISOString() ?? null,
      })),
    };
  });

  app.patch(
    '/v1/api_keys/:id',
    { schema: { tags: ['api keys'], params: apiKeyParams, body: updateApiKeyBody, response: { 200: successBody } } },
    async (req) => {
      requireApiKey(req.auth, 'manage API keys');
      const row = await load(req.auth.orgId, req.params.id);
      await sql`update api_keys set name = ${req.body.name} where id = ${row.id}`;
      return { success: true };
    },
  );

  app.delete(
    '/v1/api_keys/:id',
    { schema: { tags: ['api keys'], params: apiKeyParams, response: { 200: successBody } } },
    async (req) => {
      requireApiKey(req.auth, 'manage API keys');
      const row = await load(req.auth.orgId, req.params.id);
      // The last key cannot go: the workspace would be unreachable (the admin command can make another).
      // The workspace row is locked so two deletions at once cannot both see "another key remains".
      const deleted = await transaction(sql, async (tx) => {
        await tx`select id from organizations where id = ${row.org_id} for update`;
        return tx`delete from api_keys where id = ${row.id}
                  and (select count(*) from api_keys where org_id = ${row.org_id}) > 1 returning id`;
      });
      if (deleted.length === 0) throw conflict('the last API key of a workspace cannot be deleted', 'last_api_key');
      credentials.forgetApiKey(row.id);
      return { success: true };
    },
  );

  app.post(
    '/v1/api_keys/:id/rotate',
    { schema: { tags: ['api keys'], params: apiKeyParams, response: { 200: apiKeySecretBody } } },
    async (req) => {
      requireApiKey(req.auth, 'manage API keys');
      const row = await load(req.auth.orgId, req.params.id);
      const secret = newApiKeySecret();
      // The old hash is replaced in the same statement: the old secret stops working at once.
      await sql`update api_keys set secret_hash = ${hashSecret(secret)}, secret_hint = ${secretHint(secret)},
                rotated_at = ${now()} where id = ${row.id}`;
      credentials.forgetApiKey(row.id);
      return { id: row.id, name: row.name, api_key: secret };
    },
  );
};

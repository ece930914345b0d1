// Phone numbers of an agent: update (spec endpoint 4) and delete a custom number (5). Both run under the
// agent's write lock, so a concurrent write of the agent answers 409 (retry) instead of waiting.
import { z } from 'zod';
import { configurationEndpoint } from '../schemas/agents.js';
import { e164, successBody } from '../schemas/common.js';
import { addPhone, bumpVersion, phoneOwner, phonesOf, recordVersion, removePhones, setPhoneEndpoint } from '../store/agents.js';
import type { Auth } from '../auth/authenticate.js';
import { agentDisabled, findAgent, nameOrIdParams, withAgentLock } from './agents.js';
import { badRequest, notFound, unauthorized } from './errors.js';
import { projectQuery } from './lookup.js';
import type { RoutePlugin } from './routes.js';

/**
 * Spec, "Authentication" 5: these endpoints answer 401 to an unsupported authentication method, so session tokens
 * are let through the auth hook (allowSessionToken) to be answered 401 here rather than the hook's 403.
 */
function requireApiKeyOr401(auth: Auth): void {
  if (auth.kind !== 'api_key') throw unauthorized('the phone-number endpoints accept API keys only');
}

export const phoneNumberRoutes: RoutePlugin = async (app, ctx) => {
  const { sql } = ctx;
  const updateBody = z.object({
    phone_number: e164,
    configuration_endpoint: configurationEndpoint(ctx.settings).nullable().optional(),
  });
  const deleteBody = z.object({ phone_number: e164 });

  app.patch(
    '/v1/agents/:nameOrId/phone-numbers',
    {
      config: { allowSessionToken: true },
      schema: { tags: ['agents'], params: nameOrIdParams, querystring: projectQuery, body: updateBody, response: { 200: successBody } },
    },
    async (req) => {
      requireApiKeyOr401(req.auth);
      const { row } = await findAgent(sql, req.auth.orgId, req.query.project, req.params.nameOrId);
      if (!row.enabled) throw agentDisabled(row.name);
      const { phone_number: number, configuration_endpoint: endpoint } = req.body;
      await withAgentLock(ctx, row.id, async (tx) => {
        const owner = await phoneOwner(tx, number);
        if (owner && owner.agent_id !== row.id) {
          throw badRequest(`invalid parameter phone_number: ${number} is already assigned`, {
            phone_number: `${number} is already assigned to another agent`,
          });
        }
        if (!owner) {
          await addPhone(tx, { number, agentId: row.id, orgId: row.org_id, kind: 'custom', configurationEndpoint: endpoint ?? null });
        } else if (endpoint !== undefined) {
          await setPhoneEndpoint(tx, number, endpoint);
        } else {
          return; // already this agent's number, nothing sent to change
        }
        await recordVersion(tx, await bumpVersion(tx, row.id));
      });
      return { success: true };
    },
  );

  app.delete(
    '/v1/agents/:nameOrId/custom-phone-numbers',
    {
      config: { allowSessionToken: true },
      schema: { tags: ['agents'], params: nameOrIdParams, querystring: projectQuery, body: deleteBody, response: { 200: successBody } },
    },
    async (req) => {
      requireApiKeyOr401(req.auth);
      const { row } = await findAgent(sql, req.auth.orgId, req.query.project, req.params.nameOrId);
      if (!row.enabled) throw agentDisabled(row.name);
      const number = req.body.phone_number;
      await withAgentLock(ctx, row.id, async (tx) => {
        const owner = await phoneOwner(tx, number);
        if (!owner || owner.org_id !== row.org_id) throw notFound('phone number', number);
        if (owner.agent_id !== row.id) {
          throw badRequest(`invalid parameter phone_number: ${number} is not assigned to this agent`, {
            phone_number: `${number} is not assigned to agent '${row.name}'`,
          });
        }
        if (owner.kind !== 'custom') {
          throw badRequest(`invalid parameter phone_number: ${number} is not a custom number`, {
            phone_number: `${number} was assigned automatically, not a custom number (release it with phone_number null)`,
          });
        }
        const left = ((await phonesOf(tx, [row.id])).get(row.id) ?? []).length - 1;
        if (left === 0 && row.config.inbound_rollout < 1) {
          throw badRequest('invalid parameter phone_number: the agent needs a number while inbound_rollout is below 1.0', {
            phone_number: 'is the last number of an agent whose inbound_rollout is below 1.0 (set it to 1 first)',
          });
        }
        await removePhones(tx, row.id, [number]);
        await recordVersion(tx, await bumpVersion(tx, row.id));
      });
      return { success: true };
    },
  );
};

// An agent's phone numbers: PATCH /v1/agents/{nameOrId}/phone-numbers (assign a custom number or set its
// configuration endpoint) and DELETE /v1/agents/{nameOrId}/custom-phone-numbers (release one).
import { z } from 'zod';
import { assignPhoneNumber, releaseCustomPhoneNumber } from '../domain/phone-numbers.js';
import { configurationEndpoint } from '../schemas/agents.js';
import { e164, successBody } from '../schemas/common.js';
import { requireApiKeyOr401 } from './auth-hook.js';
import { nameOrIdParams, projectQuery } from './params.js';
import type { RoutePlugin } from './types.js';

const WHO = 'the phone-number endpoints';

export const phoneNumberRoutes: RoutePlugin = async (app, ctx) => {
  const updateBody = z.object({
    phone_number: e164,
    configuration_endpoint: configurationEndpoint(ctx.settings).nullable().optional(),
  });
  const deleteBody = z.object({ phone_number: e164 });

  app.patch(
    '/agents/:nameOrId/phone-numbers',
    {
      // Session tokens reach the route so that they get its 401 (requireApiKeyOr401), not the hook's 403.
      config: { allowSessionToken: true },
      schema: {
        tags: ['agents'],
        params: nameOrIdParams,
        querystring: projectQuery,
        body: updateBody,
        response: { 200: successBody },
      },
    },
    async (req) => {
      requireApiKeyOr401(req.auth, WHO);
      const { phone_number: number, configuration_endpoint: endpoint } = req.body;
      await assignPhoneNumber(ctx, req.auth.orgId, req.query.project, req.params.nameOrId, number, endpoint);
      return { success: true };
    },
  );

  app.delete(
    '/agents/:nameOrId/custom-phone-numbers',
    {
      config: { allowSessionToken: true },
      schema: {
        tags: ['agents'],
        params: nameOrIdParams,
        querystring: projectQuery,
        body: deleteBody,
        response: { 200: successBody },
      },
    },
    async (req) => {
      requireApiKeyOr401(req.auth, WHO);
      await releaseCustomPhoneNumber(
        ctx,
        req.auth.orgId,
        req.query.project,
        req.params.nameOrId,
        req.body.phone_number,
      );
      return { success: true };
    },
  );
};

// POST /v1/conversations/outbound_call. Everything a call needs is resolved and checked by the domain
// (resolveOutboundCall), the project's concurrency cap included; `dry_run` stops there with 200. Placing a real call
// needs the telephony layer, which this control plane does not reach: such a request gets 400.
import { resolveOutboundCall } from '../domain/outbound-call.js';
import { outboundCallBody, outboundCallResponse } from '../schemas/outbound-call.js';
import { ApiError } from './errors.js';
import type { RoutePlugin } from './types.js';

export const outboundCallRoutes: RoutePlugin = async (app, ctx) => {
  app.post(
    '/conversations/outbound_call',
    {
      schema: {
        tags: ['conversations'],
        body: outboundCallBody(ctx.settings),
        response: { 200: outboundCallResponse, 201: outboundCallResponse },
      },
    },
    async (req, reply) => {
      const { config, dry_run: dryRun } = req.body;
      await resolveOutboundCall(ctx, req.auth.orgId, config, { dryRun });
      if (dryRun) return reply.status(200).send({ conversation_id: null, dry_run: true });
      throw new ApiError(400, 'outbound calling is not available on this node yet (no telephony layer to place the call)', {
        code: 'outbound_unavailable',
      });
    },
  );
};

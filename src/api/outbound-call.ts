// POST /v1/conversations/outbound_call. Everything a call needs is resolved and checked by the domain
// (resolveOutboundCall), the project's concurrency cap included; `dry_run` stops there with 200. A real call is placed
// by the node's SIP service through the domain's OutboundCalls (ctx.outboundCalls) and the request waits for its
// outcome: 201 once the callee answered and the record exists, 409 with the reason (no_answer, sip_call_failed,
// call_ended) when it did not connect. The client going away cancels the call. A control plane without SIP answers 503.
import { resolveOutboundCall } from '../domain/outbound-call.js';
import { DomainError } from '../domain/errors.js';
import { outboundCallBody, outboundCallResponse } from '../schemas/outbound-call.js';
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
      const { config, dry_run: dryRun, to_phone_number: toPhoneNumber } = req.body;
      const calls = ctx.outboundCalls;
      const call = await resolveOutboundCall(ctx, req.auth.orgId, config, { dryRun, outboundTrunk: calls?.hasTrunk });
      if (dryRun) return reply.status(200).send({ conversation_id: null, dry_run: true });
      if (!calls) {
        throw new DomainError('unavailable', 'this node places no calls: its SIP service is not running', {
          code: 'outbound_unavailable',
        });
      }
      // The client going away before the outcome cancels the call (its response is closed unsent).
      const gone = new AbortController();
      const onClose = () => {
        if (!reply.raw.writableEnded) gone.abort();
      };
      reply.raw.once('close', onClose);
      try {
        const placed = await calls.place({ orgId: req.auth.orgId, toPhoneNumber, call, sent: config }, gone.signal);
        return reply.status(201).send({ conversation_id: placed.conversationId, dry_run: false });
      } finally {
        reply.raw.off('close', onClose);
      }
    },
  );
};

// POST /v1/responses (experimental): stateless simulated assistant replies for an inline conversation, from the
// configured chat model. Nothing is stored. Gated per workspace and rate limited (src/responses/).
import {
  chatClientFromSettings,
  ChatUpstreamInvalidError,
  ChatUpstreamUnavailableError,
} from '../engines/chat-client.js';
import { responsesGate } from '../responses/gate.js';
import { generateResponses } from '../responses/generate.js';
import { offeredTools } from '../responses/offered-tools.js';
import { takeResponsesToken } from '../responses/rate-limit.js';
import { createWebSearch } from '../engines/web-search.js';
import { errorBody, validationErrorBody } from '../schemas/common.js';
import { responsesRequestBody, responsesResponseBody } from '../schemas/responses.js';
import { requireApiKey } from './auth-hook.js';
import { ApiError, errorBody as toErrorBody } from './errors.js';
import type { RoutePlugin } from './types.js';

export const responsesRoutes: RoutePlugin = async (app, ctx) => {
  const { sql, settings } = ctx;
  const log = ctx.log.child({ module: 'responses' });
  const chat = chatClientFromSettings(settings, log.child({ module: 'chat-client' }));
  const search = settings.PARLEY_WEB_SEARCH_URL ? createWebSearch(settings.PARLEY_WEB_SEARCH_URL) : null;

  app.post(
    '/responses',
    {
      schema: {
        tags: ['responses'],
        summary: 'Generate simulated assistant responses for an inline conversation (experimental)',
        body: responsesRequestBody(settings.PARLEY_RESPONSES_MAX),
        response: {
          200: responsesResponseBody,
          400: validationErrorBody,
          404: errorBody,
          429: errorBody,
          502: errorBody,
          503: errorBody,
        },
      },
      // Before the body is validated: a workspace without the feature sees 404 whatever it sends, and every
      // request counts against the rate limit.
      preValidation: async (request, reply) => {
        requireApiKey(request.auth, 'generate responses');
        const gate = await responsesGate(sql, request.auth.orgId, settings);
        if (!gate.open) throw new ApiError(404, gate.message, { code: 'responses_not_enabled' });
        const take = await takeResponsesToken(sql, request.auth.orgId, settings);
        if (!take.allowed) {
          reply.header('retry-after', String(take.retryAfterSec));
          return reply.status(429).send(
            toErrorBody(
              new ApiError(429, `rate limit exceeded: retry in ${take.retryAfterSec} s`, {
                code: 'rate_limit_exceeded',
              }),
            ),
          );
        }
      },
    },
    async (request, reply) => {
      const body = request.body;
      // A client that goes away cancels its generation (and the chat-model requests in flight).
      const cancel = new AbortController();
      reply.raw.once('close', () => {
        if (!reply.raw.writableFinished) cancel.abort(new Error('the client closed the request'));
      });
      const offered = await offeredTools(sql, request.auth.orgId, body, { webSearch: search !== null });
      try {
        // chat is non-null: the gate is closed without a chat model.
        const responses = await generateResponses(body, offered, { chat: chat!, search, log, signal: cancel.signal });
        return { responses };
      } catch (err) {
        if (cancel.signal.aborted) {
          log.info({ reason: (cancel.signal.reason as Error).message }, 'generation cancelled');
          throw new ApiError(499, 'client closed the request', { code: 'client_closed_request' });
        }
        if (err instanceof ChatUpstreamInvalidError) {
          log.warn({ err }, 'chat model answer unusable');
          throw new ApiError(502, `invalid response from the chat model: ${err.message}`, { code: 'upstream_invalid' });
        }
        if (err instanceof ChatUpstreamUnavailableError) {
          log.warn({ err }, 'chat model unavailable');
          throw new ApiError(503, `chat model unavailable: ${err.message}`, { code: 'upstream_unavailable' });
        }
        throw err;
      }
    },
  );
};

// POST /v1/conversations/outbound_call (spec endpoint 11). Everything a call needs is validated here, the
// project's concurrency cap included; `dry_run` stops there with 200. Placing a real call needs the outbound trunk
// (PARLEY_OUTBOUND_TRUNK) and the telephony layer, which this node does not have yet: such a request gets 400.
import { outboundCallBody, outboundCallResponse } from '../schemas/outbound-call.js';
import { checkCapacity, leasePolicy } from '../store/leases.js';
import { ApiError, conflict, invalidParam, notFound } from './errors.js';
import { resolveProject } from './lookup.js';
import { loadVoiceCatalog } from './voices.js';
import type { RoutePlugin } from './routes.js';

/** The project of a config that names no agent (spec, OutboundCallConfig: `project` default `main`). */
const DEFAULT_PROJECT = 'main';

export const outboundCallRoutes: RoutePlugin = async (app, ctx) => {
  const { sql, settings } = ctx;
  const policy = leasePolicy(settings);
  const voices = new Set(loadVoiceCatalog(settings).map((v) => v.id));

  app.post(
    '/v1/conversations/outbound_call',
    {
      schema: {
        tags: ['conversations'],
        body: outboundCallBody(settings),
        response: { 200: outboundCallResponse, 201: outboundCallResponse },
      },
    },
    async (req, reply) => {
      const { config, dry_run: dryRun } = req.body;
      const project = await resolveProject(sql, req.auth.orgId, config?.project ?? DEFAULT_PROJECT);

      if (config?.agent !== undefined) {
        const [agent] = await sql<{ id: string; enabled: boolean }[]>`
          select id, enabled from agents where project_id = ${project.id} and name = ${config.agent}`;
        if (!agent) throw notFound('agent', config.agent);
        if (!agent.enabled) throw conflict(`agent '${config.agent}' is disabled`, 'agent_disabled');
      }

      if (config?.voice_id !== undefined && !voices.has(config.voice_id)) {
        throw invalidParam('config.voice_id', `no voice '${config.voice_id}' (see GET /v1/voices)`);
      }

      if (config?.tools?.length) {
        const names = [...new Set(config.tools)];
        const found = await sql<{ name: string }[]>`
          select name from tools where project_id = ${project.id} and name in ${sql(names)}`;
        const known = new Set(found.map((r) => r.name));
        const missing = config.tools.findIndex((n) => !known.has(n));
        if (missing >= 0) {
          throw invalidParam(`config.tools.${missing}`, `no tool '${config.tools[missing]}' in project '${project.name}'`);
        }
      }

      if (!dryRun && !settings.PARLEY_OUTBOUND_TRUNK) {
        throw new ApiError(400, 'outbound calls need an outbound trunk: PARLEY_OUTBOUND_TRUNK is not set on this node', {
          code: 'outbound_trunk_not_configured',
        });
      }

      const capacity = await checkCapacity(sql, policy, project.id);
      if (!capacity.ok) {
        throw new ApiError(
          429,
          `project '${project.name}' is at its limit of ${capacity.cap} concurrent conversations`,
          { code: 'concurrency_limit_reached' },
        );
      }

      if (dryRun) return reply.status(200).send({ conversation_id: null, dry_run: true });
      throw new ApiError(400, 'outbound calling is not available on this node yet (no telephony layer to place the call)', {
        code: 'outbound_unavailable',
      });
    },
  );
};

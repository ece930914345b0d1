// An outbound call before it is dialled: everything it needs is resolved and checked (project, agent, voice, tools,
// the outbound trunk, the project's concurrency cap), so the HTTP request's dry run and telephony placing the
// call judge it by the same rules.
import {
  OUTBOUND_CALL_DEFAULTS,
  resolveOutboundCallConfig,
  type OutboundCallConfig,
} from '../schemas/outbound-call.js';
import { agentByName } from '../store/agents.js';
import { leasePolicy } from '../store/leases.js';
import { toolsByNames } from '../store/tools.js';
import { requireCapacity } from './admission.js';
import { agentDisabled } from './agent-write.js';
import type { DomainContext } from './context.js';
import { resolvedAgent, toolOf, type ResolvedAgent } from './conversation-agent.js';
import { DomainError, invalidParam, notFound } from './errors.js';
import { resolveProject } from './projects.js';
import { hasVoice } from './voices.js';

/** A call ready to be placed. */
export interface OutboundCall {
  project: { id: string; name: string };
  /** The agent the config names, or null when the config alone configures the call. */
  agent: ResolvedAgent | null;
  /** The call's effective configuration: the agent's settings (or the defaults) overridden by what the config sends. */
  config: Record<string, unknown>;
  /** The custom tools `config.tools` names, in the project. */
  tools: ResolvedAgent['tools'];
}

/**
 * Resolves an outbound call of the workspace for `config`. Throws, in this order: the project's errors (not_found,
 * forbidden); not_found for an unknown agent, conflict `agent_disabled`; invalid `config.voice_id` (not in the
 * catalog) or `config.tools.N` (no such tool); unless `dryRun`, invalid `outbound_trunk_not_configured` without an
 * outbound trunk (`outboundTrunk`: the node has one; by default whether PARLEY_OUTBOUND_TRUNK is set); limit_reached
 * `concurrency_limit_reached` when the project is at its cap.
 */
export async function resolveOutboundCall(
  ctx: DomainContext,
  orgId: string,
  config: OutboundCallConfig | undefined,
  opts: { dryRun: boolean; outboundTrunk?: boolean },
): Promise<OutboundCall> {
  const { sql, settings } = ctx;
  const project = await resolveProject(sql, orgId, config?.project ?? OUTBOUND_CALL_DEFAULTS.project);

  let agent: ResolvedAgent | null = null;
  if (config?.agent !== undefined) {
    const row = await agentByName(sql, project.id, config.agent);
    if (!row) throw notFound('agent', config.agent);
    if (!row.enabled) throw agentDisabled(config.agent);
    agent = await resolvedAgent(sql, row, project);
  }

  if (config?.voice_id !== undefined && !hasVoice(settings, config.voice_id)) {
    throw invalidParam('config.voice_id', `no voice '${config.voice_id}' (see GET /v1/voices)`);
  }

  let tools: ResolvedAgent['tools'] = [];
  if (config?.tools?.length) {
    const rows = await toolsByNames(sql, project.id, [...new Set(config.tools)]);
    const known = new Set(rows.map((r) => r.name));
    const missing = config.tools.findIndex((n) => !known.has(n));
    if (missing >= 0) {
      throw invalidParam(`config.tools.${missing}`, `no tool '${config.tools[missing]}' in project '${project.name}'`);
    }
    tools = rows.map(toolOf);
  }

  if (!opts.dryRun && !(opts.outboundTrunk ?? Boolean(settings.PARLEY_OUTBOUND_TRUNK))) {
    throw new DomainError(
      'invalid',
      'outbound calls need an outbound trunk: PARLEY_OUTBOUND_TRUNK is not set, nor a trunk with an outbound section in PARLEY_TRUNKS_FILE',
      {
        code: 'outbound_trunk_not_configured',
      },
    );
  }

  await requireCapacity(sql, leasePolicy(settings), project);

  return {
    project: { id: project.id, name: project.name },
    agent,
    config: resolveOutboundCallConfig(config, agent?.config),
    tools,
  };
}

// Inbound rollout: the share `inbound_rollout` (0..1) of an agent's inbound calls stays with the agent; the rest is
// forwarded to `inbound_rollout_forward_phone_number` (by a 302 or a bridged leg; the SIP service decides how).
import type { AgentConfig } from '../schemas/agents.js';

export type RolloutDecision = { route: 'agent' } | { route: 'forward'; phoneNumber: string };

const AGENT: RolloutDecision = { route: 'agent' };

/**
 * Where this call goes. `random` is uniform in [0, 1): the call stays when it draws below the rollout, so 1 keeps
 * every call and 0 forwards every call. Without a forward number (the agent rules require one below 1) the call
 * stays: there is nowhere else to send it.
 */
export function decideRollout(
  agent: Pick<AgentConfig, 'inbound_rollout' | 'inbound_rollout_forward_phone_number'>,
  random: () => number = Math.random,
): RolloutDecision {
  const forwardTo = agent.inbound_rollout_forward_phone_number;
  if (agent.inbound_rollout >= 1 || forwardTo === null) return AGENT;
  if (random() < agent.inbound_rollout) return AGENT;
  return { route: 'forward', phoneNumber: forwardTo };
}

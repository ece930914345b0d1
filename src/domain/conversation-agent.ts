// What a live conversation needs of the stored configuration, whoever hosts it: the agent a `config` names (STS
// socket), the agent an inbound call's number belongs to (telephony), a project without an agent, the custom tools
// an inline configuration names. Misses are null: to a conversation "another workspace's" is "no such agent".
import type { ConfigurationEndpoint } from '../schemas/agents.js';
import { agentByPhoneNumber, type AgentRow } from '../store/agents.js';
import type { Sql } from '../store/db.js';
import { projectById } from '../store/projects.js';
import { toolsByNames, type ToolRow } from '../store/tools.js';
import { findAgent } from './agents.js';
import { DomainError } from './errors.js';
import { resolveProject } from './projects.js';

/** Everything a live conversation needs of a stored agent: its record's config and its tools' definitions. */
export interface ResolvedAgent {
  orgId: string;
  project: { id: string; name: string };
  agent: { id: string; name: string; enabled: boolean };
  /** The agent's writable fields as stored (the agents schema's config). */
  config: Record<string, unknown>;
  /** Definitions of the custom tools the agent names (the tools schema's stored definition, with id). */
  tools: { id: string; name: string; definition: Record<string, unknown> }[];
}

/** A stored tool as a conversation gets it. */
export const toolOf = (t: ToolRow): ResolvedAgent['tools'][number] => ({
  id: t.id,
  name: t.name,
  definition: t.definition,
});

/** What a conversation of `row` (an agent of `project`) needs: its config and the definitions of its custom tools. */
export async function resolvedAgent(
  sql: Sql,
  row: AgentRow,
  project: { id: string; name: string },
): Promise<ResolvedAgent> {
  const tools = await toolsByNames(sql, project.id, row.config.tools ?? []);
  return {
    orgId: row.org_id,
    project: { id: project.id, name: project.name },
    agent: { id: row.id, name: row.name, enabled: row.enabled },
    config: row.config as unknown as Record<string, unknown>,
    tools: tools.map(toolOf),
  };
}

/** A miss of the caller's own workspace (not found) or another's (forbidden) is null; other errors pass. */
async function orNull<T>(lookup: Promise<T>): Promise<T | null> {
  try {
    return await lookup;
  } catch (err) {
    if (err instanceof DomainError && (err.kind === 'not_found' || err.kind === 'forbidden')) return null;
    throw err;
  }
}

/** The agent `agent` (name or id) of the project `project` (name or id) names in the workspace, or null. */
export async function resolveAgentForConversation(
  sql: Sql,
  orgId: string,
  project: string,
  agent: string,
): Promise<ResolvedAgent | null> {
  const found = await orNull(findAgent(sql, orgId, project, agent));
  return found ? resolvedAgent(sql, found.row, found.project) : null;
}

/** The project `project` (name or id) names in the workspace, or null. */
export async function resolveProjectForConversation(
  sql: Sql,
  orgId: string,
  project: string,
): Promise<{ id: string; name: string } | null> {
  const p = await orNull(resolveProject(sql, orgId, project));
  return p ? { id: p.id, name: p.name } : null;
}

/** The workspace's tools of the project among `names` (an inline configuration's custom tools); unknown names are left out. */
export async function toolsForConversation(
  sql: Sql,
  orgId: string,
  projectId: string,
  names: string[],
): Promise<ResolvedAgent['tools']> {
  const rows = await toolsByNames(sql, projectId, names);
  return rows.filter((t) => t.org_id === orgId).map(toolOf);
}

/** An inbound call's agent: who owns the dialled number, and the number's own configuration endpoint. */
export interface PhoneNumberAgent {
  agent: ResolvedAgent;
  /** Whether the agent takes calls (a disabled agent's number is refused). */
  enabled: boolean;
  /** The number's configuration endpoint (asked at the start of each call to it), or null. */
  configurationEndpoint: ConfigurationEndpoint | null;
}

/** The agent the E.164 number `number` is assigned to, with what its conversations need; null when no agent has it. */
export async function agentForPhoneNumber(sql: Sql, number: string): Promise<PhoneNumberAgent | null> {
  const found = await agentByPhoneNumber(sql, number);
  if (!found) return null;
  const project = await projectById(sql, found.row.project_id);
  if (!project) return null; // deleted with its project meanwhile
  return {
    agent: await resolvedAgent(sql, found.row, project),
    enabled: found.row.enabled,
    configurationEndpoint: found.phone.configuration_endpoint,
  };
}

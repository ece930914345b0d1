// Agents: addressing by name (in a project) or id (in any project of the workspace), reading their records, and
// the operations around the write service (agent-write.ts): create, upsert, update, enable, disable, delete.
import type { AgentRecord, AgentUpdateBody, AgentUpsertBody } from '../schemas/agents.js';
import {
  agentById,
  agentByName,
  agentForRead,
  countEnabled,
  deleteAgent as deleteAgentRow,
  listAgents,
  lockOrgEnablement,
  phonesOf,
  setEnabled,
  type AgentRow,
} from '../store/agents.js';
import type { Sql } from '../store/db.js';
import { isId } from '../store/ids.js';
import { projectById, type ProjectRow } from '../store/projects.js';
import { transaction } from '../store/transaction.js';
import { toAgentRecord } from './agent-records.js';
import { writeAgent, type WriteOutcome } from './agent-write.js';
import type { DomainContext } from './context.js';
import { DomainError, forbidden, notFound } from './errors.js';
import { ownedBy } from './ownership.js';
import { resolveProject } from './projects.js';

export interface FoundAgent {
  row: AgentRow;
  project: ProjectRow;
}

/**
 * The agent `nameOrId` names: by id in any project of the workspace, else by name in the project `project` names.
 * Throws not_found (agent or project missing) or forbidden (another workspace's).
 */
export async function findAgent(sql: Sql, orgId: string, project: string, nameOrId: string): Promise<FoundAgent> {
  if (isId('agent', nameOrId)) {
    const row = ownedBy(await agentById(sql, nameOrId), orgId, 'agent', nameOrId);
    const p = await projectById(sql, row.project_id);
    if (!p) throw notFound('agent', nameOrId); // deleted with its project meanwhile
    return { row, project: p };
  }
  const p = await resolveProject(sql, orgId, project);
  const row = await agentByName(sql, p.id, nameOrId);
  if (!row) throw notFound('agent', nameOrId);
  return { row, project: p };
}

async function recordOf(sql: Sql, row: AgentRow, project: Pick<ProjectRow, 'id' | 'name'>): Promise<AgentRecord> {
  const phones = (await phonesOf(sql, [row.id])).get(row.id) ?? [];
  return toAgentRecord(row, phones, { id: project.id, name: project.name });
}

/** The record of an agent as a write left it (its numbers as written: no query). */
function recordAfter(out: WriteOutcome, project: Pick<ProjectRow, 'id' | 'name'>): AgentRecord {
  return toAgentRecord(out.row, out.phones, { id: project.id, name: project.name });
}

/** The record of the agent `nameOrId` names (findAgent's errors). A name costs one query when it is found. */
export async function getAgentRecord(sql: Sql, orgId: string, project: string, nameOrId: string): Promise<AgentRecord> {
  if (!isId('agent', nameOrId)) {
    const hit = await agentForRead(sql, orgId, project, nameOrId);
    if (hit) return toAgentRecord(hit.row, hit.phones, { id: hit.row.project_id, name: hit.projectName });
    // A miss: findAgent tells a missing project from a missing agent.
  }
  const { row, project: p } = await findAgent(sql, orgId, project, nameOrId);
  return recordOf(sql, row, p);
}

/** The records of the project's agents, oldest first. */
export async function listAgentRecords(sql: Sql, orgId: string, project: string): Promise<AgentRecord[]> {
  const p = await resolveProject(sql, orgId, project);
  const rows = await listAgents(sql, p.id);
  const phones = await phonesOf(
    sql,
    rows.map((r) => r.id),
  );
  const ref = { id: p.id, name: p.name };
  return rows.map((r) => toAgentRecord(r, phones.get(r.id) ?? [], ref));
}

/**
 * Creates the agent `body.name` of the project, or replaces its configuration when it exists (writeAgent `upsert`).
 * `updated`: an existing agent changed.
 */
export async function upsertAgent(
  ctx: DomainContext,
  orgId: string,
  project: string,
  body: AgentUpsertBody,
): Promise<{ agent: AgentRecord; inserted: boolean; updated: boolean }> {
  const { sql } = ctx;
  // An existing agent with its project and numbers in one query; a miss tells a missing project from a new agent.
  const hit = await agentForRead(sql, orgId, project, body.name);
  const p = hit ? { id: hit.row.project_id, name: hit.projectName } : await resolveProject(sql, orgId, project);
  const existing = hit ? hit.row : await agentByName(sql, p.id, body.name);
  const out = await writeAgent(ctx, orgId, p, existing, body, 'upsert', hit?.phones);
  return { agent: recordAfter(out, p), inserted: out.inserted, updated: !out.inserted && out.changed };
}

/** Creates the agent `body.name` of the project; conflict (on `name`) when the project has one of that name. */
export async function createAgent(
  ctx: DomainContext,
  orgId: string,
  project: string,
  body: AgentUpsertBody,
): Promise<AgentRecord> {
  const p = await resolveProject(ctx.sql, orgId, project);
  if (await agentByName(ctx.sql, p.id, body.name)) {
    throw new DomainError('conflict', `an agent named '${body.name}' already exists`, {
      paramErrors: { name: `an agent named '${body.name}' already exists in this project` },
    });
  }
  return recordAfter(await writeAgent(ctx, orgId, p, undefined, body, 'upsert'), p);
}

/** Changes what `body` sends of the agent (writeAgent `update`); its record and version number after. */
export async function updateAgent(
  ctx: DomainContext,
  orgId: string,
  project: string,
  nameOrId: string,
  body: AgentUpdateBody,
): Promise<{ agent: AgentRecord; version: number }> {
  const { row, project: p } = await findAgent(ctx.sql, orgId, project, nameOrId);
  const out = await writeAgent(ctx, orgId, p, row, body, 'update');
  return { agent: recordAfter(out, p), version: out.row.version };
}

/** Deletes the agent (and its numbers); a project naming it as default agent then has none. */
export async function deleteAgent(sql: Sql, orgId: string, project: string, nameOrId: string): Promise<void> {
  const { row } = await findAgent(sql, orgId, project, nameOrId);
  await deleteAgentRow(sql, row.id);
}

/**
 * Enables the agent; forbidden `enabled_agents_limit` when the workspace already has PARLEY_MAX_ENABLED_AGENTS
 * enabled. The count and the change are serialised per workspace so concurrent enables cannot pass the maximum.
 */
export async function enableAgent(ctx: DomainContext, orgId: string, project: string, nameOrId: string): Promise<void> {
  const { row } = await findAgent(ctx.sql, orgId, project, nameOrId);
  if (row.enabled) return;
  const max = ctx.settings.PARLEY_MAX_ENABLED_AGENTS;
  await transaction(ctx.sql, async (tx) => {
    await lockOrgEnablement(tx, orgId);
    if ((await countEnabled(tx, orgId)) >= max) {
      throw forbidden(`the workspace already has its maximum of ${max} enabled agents`, 'enabled_agents_limit');
    }
    await setEnabled(tx, row.id, true);
  });
}

/** Disables the agent: it takes no conversations and refuses changes until enabled again. */
export async function disableAgent(sql: Sql, orgId: string, project: string, nameOrId: string): Promise<void> {
  const { row } = await findAgent(sql, orgId, project, nameOrId);
  await setEnabled(sql, row.id, false);
}

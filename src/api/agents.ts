// Agents: upsert (spec endpoint 20), update (19), enable (22), and create, get, list, delete, disable.
// A write is judged on the agent as it will be (cross-field rules on the merged record), then applied in one
// transaction under the agent's write lock; each change is a new version kept in agent_versions.
import { z } from 'zod';
import { requireApiKey } from '../auth/hook.js';
import {
  agentDefaults,
  agentRecord,
  agentRuleIssues,
  agentUpdateBody,
  agentUpsertBody,
  applyDeprecatedLanguages,
  type AgentConfig,
  type AgentUpdateBody,
} from '../schemas/agents.js';
import { successBody } from '../schemas/common.js';
import {
  AgentBusyError,
  addPhone,
  agentById,
  agentForRead,
  agentByName,
  agentWriteLocks,
  countEnabled,
  deleteAgent,
  drawFreeNumber,
  insertAgent,
  listAgents,
  lockOrgEnablement,
  phoneOwner,
  phonesOf,
  recordVersion,
  removePhones,
  setEnabled,
  toAgentRecord,
  updateAgent,
  type AgentRow,
  type PhoneKind,
  type PhoneRow,
  type Tx,
} from '../store/agents.js';
import type { Sql } from '../store/db.js';
import type { ProjectRow } from '../store/projects.js';
import type { AppContext } from './context.js';
import { ApiError, badRequest, conflict, forbidden, notFound } from './errors.js';
import { isId, ownedBy, projectQuery, resolveProject } from './lookup.js';
import type { RoutePlugin } from './routes.js';
import { loadVoiceCatalog } from './voices.js';
import { transaction } from '../store/transaction.js';

/** Built-in tools an agent may name in `tools` and configure in `built_in_tool_configs` (spec, endpoint 17). */
export const BUILT_IN_TOOL_IDS = [
  'keypad_input',
  'natural_conversation_ending',
  'choose_not_to_respond',
  'web_search',
] as const;

/** PostgreSQL SQLSTATE 23505 unique_violation: a concurrent write took the same name or number first. */
const UNIQUE_VIOLATION = '23505';

export const nameOrIdParams = z.object({ nameOrId: z.string().min(1).max(200) });

export interface FoundAgent {
  row: AgentRow;
  project: ProjectRow;
}

/** The agent a path names: by id in any workspace (403 for another's), else by name in the `project` query's project. */
export async function findAgent(sql: Sql, orgId: string, project: string, nameOrId: string): Promise<FoundAgent> {
  if (isId('agent', nameOrId)) {
    const row = ownedBy(await agentById(sql, nameOrId), orgId, 'agent', nameOrId);
    const [p] = await sql<ProjectRow[]>`select * from projects where id = ${row.project_id}`;
    return { row, project: p };
  }
  const p = await resolveProject(sql, orgId, project);
  const row = await agentByName(sql, p.id, nameOrId);
  if (!row) throw notFound('agent', nameOrId);
  return { row, project: p };
}

/** Runs a write of one agent under its lock; another write in flight answers 409 (spec, "States"). */
export async function withAgentLock<T>(ctx: AppContext, agentId: string, fn: (tx: Tx, lockedVersion: number | null) => Promise<T>): Promise<T> {
  try {
    return await agentWriteLocks(ctx).run(ctx.sql, agentId, fn);
  } catch (err) {
    throw busyOr(err);
  }
}

/** Maps the store's "busy" and a lost race on a unique key to 409 (retry); other errors pass. */
export function busyOr(err: unknown): unknown {
  if (err instanceof AgentBusyError) return conflict('the agent is being updated; retry', 'agent_busy');
  if ((err as { code?: string }).code === UNIQUE_VIOLATION) return conflict('a concurrent write took this name or number; retry', 'agent_busy');
  return err;
}

export const agentDisabled = (name: string) => conflict(`agent '${name}' is disabled`, 'agent_disabled');

async function recordOf(sql: Sql, row: AgentRow, project: ProjectRow) {
  const phones = (await phonesOf(sql, [row.id])).get(row.id) ?? [];
  return toAgentRecord(row, phones, { id: project.id, name: project.name });
}

/** The record of an agent as a write left it (its numbers as written: no query). */
function recordAfter(out: WriteOutcome, project: Pick<ProjectRow, 'id' | 'name'>) {
  return toAgentRecord(out.row, out.phones, { id: project.id, name: project.name });
}

// ---- the write ----------------------------------------------------------------------------------------------

interface PhoneTarget {
  number: string | null; // null: draw one from the inventory
  kind: PhoneKind;
}

/** The agent's phone numbers after the write, from its current ones and the directives sent. */
function planPhones(current: PhoneRow[], body: AgentUpdateBody, issues: Record<string, string>): PhoneTarget[] {
  const keep = current.map((p) => ({ number: p.number, kind: p.kind }));
  const custom = body.custom_phone_numbers;
  switch (body.phone_number) {
    case null:
      return [];
    case 'custom':
      if (!custom || custom.length === 0) {
        issues.custom_phone_numbers = 'is required (at least one number) when phone_number is custom';
        return keep;
      }
      return custom.map((number) => ({ number, kind: 'custom' }));
    case 'assign-automatically':
      // Spec: no effect if the agent already has a number.
      return keep.length > 0 ? keep : [{ number: null, kind: 'auto' }];
    case undefined:
      if (custom === undefined) return keep;
      return [...keep.filter((p) => p.kind === 'auto'), ...custom.map((number) => ({ number, kind: 'custom' as const }))];
  }
}

/** Only a release of phone numbers: what a disabled agent may still be updated with (spec, "Agent enablement"). */
function onlyReleasesPhones(body: AgentUpdateBody, current: PhoneRow[]): boolean {
  const keys = Object.keys(body).filter((k) => body[k as keyof AgentUpdateBody] !== undefined);
  if (keys.length === 0) return false;
  const customNow = new Set(current.filter((p) => p.kind === 'custom').map((p) => p.number));
  return keys.every((k) => {
    if (k === 'phone_number') return body.phone_number === null;
    if (k === 'custom_phone_numbers') return body.custom_phone_numbers!.every((n) => customNow.has(n));
    return false;
  });
}

/** Keys of the body that are configuration (everything but name, slug and the phone directives). */
const NOT_CONFIG = new Set(['name', 'slug', 'phone_number', 'custom_phone_numbers', 'custom_phone_number']);

/** JSON with sorted keys: jsonb hands objects back in its own key order. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

/** Checks that need the database: names taken, tools and the storage policy existing, numbers free. */
async function storeIssues(
  sql: Sql,
  orgId: string,
  projectId: string,
  self: { id: string; name: string } | null,
  w: { name: string; slug: string | null; config: AgentConfig; phones: PhoneTarget[]; sent: AgentUpdateBody; settings: AppContext['settings'] },
  issues: Record<string, string>,
): Promise<void> {
  // References (tools, storage policy, voice) are checked when sent, so a tool deleted later does not make
  // every other change of the agent fail.
  if (w.sent.voice_id !== undefined && !loadVoiceCatalog(w.settings).some((v) => v.id === w.config.voice_id)) {
    issues.voice_id = `no voice '${w.config.voice_id}' in the catalog (see GET /v1/voices)`;
  }
  const selfId = self?.id ?? null;
  // The agent keeping its own name needs no look: the name is its (unique) own. A rename racing another
  // write of the same name is refused by the unique index (busyOr: 409).
  if (self?.name !== w.name) {
    const [byName] = await sql<{ id: string }[]>`select id from agents where project_id = ${projectId} and name = ${w.name}`;
    if (byName && byName.id !== selfId) issues.name = `an agent named '${w.name}' already exists in this project`;
  }
  if (w.slug !== null) {
    const [bySlug] = await sql<{ id: string }[]>`select id from agents where project_id = ${projectId} and slug = ${w.slug}`;
    if (bySlug && bySlug.id !== selfId) issues.slug = `an agent with slug '${w.slug}' already exists in this project`;
  }
  const builtIn: readonly string[] = BUILT_IN_TOOL_IDS;
  const custom = w.sent.tools ? w.config.tools.filter((t) => !builtIn.includes(t)) : [];
  if (custom.length > 0) {
    const rows = await sql<{ name: string }[]>`select name from tools where project_id = ${projectId} and name = any(${custom})`;
    const known = new Set(rows.map((r) => r.name));
    w.config.tools.forEach((t, i) => {
      if (!builtIn.includes(t) && !known.has(t)) issues[`tools.${i}`] = `no built-in or custom tool named '${t}' in this project`;
    });
  }
  for (const key of Object.keys(w.config.built_in_tool_configs)) {
    if (!builtIn.includes(key)) issues[`built_in_tool_configs.${key}`] = `'${key}' is not a built-in tool (${builtIn.join(', ')})`;
  }
  if (w.sent.external_storage_policy != null && w.config.external_storage_policy !== null) {
    const [policy] = await sql`select 1 from external_storage_policies where project_id = ${projectId} and name = ${w.config.external_storage_policy}`;
    if (!policy) issues.external_storage_policy = `no external storage policy named '${w.config.external_storage_policy}' in this project`;
  }
  for (const [i, p] of w.phones.entries()) {
    if (p.number === null) continue;
    const owner = await phoneOwner(sql, p.number);
    if (owner && owner.agent_id !== selfId) issues[`custom_phone_numbers.${i}`] = `${p.number} is already assigned to another agent`;
  }
}

export interface WriteOutcome {
  row: AgentRow;
  /** The agent's phone numbers after the write, sorted by number. */
  phones: PhoneRow[];
  inserted: boolean;
  changed: boolean;
}

/**
 * Creates or changes an agent. `upsert` replaces the configuration (fields not sent take the spec's upsert
 * defaults; phone numbers stay unless sent); `update` changes only what is sent.
 */
export async function writeAgent(
  ctx: AppContext,
  orgId: string,
  project: Pick<ProjectRow, 'id' | 'name'>,
  existing: AgentRow | undefined,
  sent: AgentUpdateBody,
  mode: 'upsert' | 'update',
  existingPhones?: PhoneRow[],
): Promise<WriteOutcome> {
  const { sql, settings } = ctx;
  const body = applyDeprecatedLanguages(sent);
  if (body.custom_phone_number != null && body.custom_phone_numbers === undefined) {
    body.custom_phone_numbers = [body.custom_phone_number];
    body.phone_number ??= 'custom';
  }
  const current = existing ? (existingPhones ?? (await phonesOf(sql, [existing.id])).get(existing.id) ?? []) : [];
  if (existing && !existing.enabled && !(mode === 'update' && onlyReleasesPhones(sent, current))) {
    throw agentDisabled(existing.name);
  }

  const base: AgentConfig = mode === 'update' && existing ? structuredClone(existing.config) : agentDefaults();
  if (mode === 'upsert' && existing) base.integrations = existing.config.integrations; // update-only field
  const config = { ...base } as Record<string, unknown>;
  for (const [k, v] of Object.entries(body)) if (v !== undefined && !NOT_CONFIG.has(k)) config[k] = v;
  const cfg = config as unknown as AgentConfig;
  cfg.languages = [cfg.default_language, ...cfg.additional_languages];
  const name = body.name ?? existing!.name;
  const slug = body.slug !== undefined ? body.slug : mode === 'update' && existing ? existing.slug : null;

  const issues: Record<string, string> = {};
  const phones = planPhones(current, body, issues);
  for (const issue of agentRuleIssues(cfg, { hasPhone: phones.length > 0 })) issues[issue.path] ??= issue.message;
  const self = existing ? { id: existing.id, name: existing.name } : null;
  await storeIssues(sql, orgId, project.id, self, { name, slug, config: cfg, phones, sent: body, settings }, issues);
  if (Object.keys(issues).length > 0) {
    const [first] = Object.keys(issues);
    throw badRequest(`invalid parameter ${first}: ${issues[first]}`, issues);
  }

  const configured = settings.PARLEY_PHONE_NUMBERS.split(',').map((s) => s.trim()).filter(Boolean);
  const apply = async (tx: Tx, lockedVersion: number | null = null): Promise<WriteOutcome> => {
    let row: AgentRow;
    let inserted = false;
    if (!existing) {
      await lockOrgEnablement(tx, orgId);
      // New agents are enabled while the organization is under its maximum, disabled once at it.
      const enabled = (await countEnabled(tx, orgId)) < settings.PARLEY_MAX_ENABLED_AGENTS;
      row = await insertAgent(tx, { orgId, projectId: project.id, name, slug, enabled, config: cfg });
      inserted = true;
    } else {
      // What was judged must still be the agent: a write that ended between the read and the lock bumped it.
      if (lockedVersion === null) throw notFound('agent', existing.name);
      if (lockedVersion !== existing.version) throw new AgentBusyError(existing.id);
      row = existing;
    }
    const target = new Set(phones.filter((p) => p.number !== null).map((p) => p.number as string));
    const gone = current.filter((p) => !target.has(p.number) || phones.find((q) => q.number === p.number)?.kind !== p.kind);
    await removePhones(tx, row.id, gone.map((p) => p.number));
    const after = current.filter((p) => !gone.includes(p));
    const have = new Set(after.map((p) => p.number));
    let phonesChanged = gone.length > 0;
    for (const p of phones) {
      if (p.number !== null && have.has(p.number)) continue;
      const number = p.number ?? (await drawFreeNumber(tx, orgId, configured));
      if (number === null) throw badRequest('no free phone number to assign automatically', { phone_number: 'no free phone number in the inventory' });
      await addPhone(tx, { number, agentId: row.id, orgId, kind: p.kind });
      after.push({ number, agent_id: row.id, org_id: orgId, kind: p.kind, configuration_endpoint: null });
      phonesChanged = true;
    }
    after.sort((a, b) => (a.number < b.number ? -1 : a.number > b.number ? 1 : 0));
    const configChanged = existing !== undefined && canonical({ name, slug, cfg }) !== canonical({ name: existing.name, slug: existing.slug, cfg: existing.config });
    if (configChanged || (existing && phonesChanged)) row = await updateAgent(tx, row.id, { name, slug, config: cfg });
    const changed = inserted || configChanged || phonesChanged;
    if (changed) await recordVersion(tx, row, after);
    return { row, phones: after, inserted, changed };
  };
  try {
    return existing
      ? await agentWriteLocks(ctx).run(sql, existing.id, apply)
      : ((await transaction(sql, (tx) => apply(tx))) as WriteOutcome);
  } catch (err) {
    throw busyOr(err);
  }
}

// ---- routes -------------------------------------------------------------------------------------------------

const agentBody = z.object({ agent: agentRecord });

export const agentRoutes: RoutePlugin = async (app, ctx) => {
  const { sql } = ctx;
  const upsertBody = agentUpsertBody(ctx.settings);
  const updateBody = agentUpdateBody(ctx.settings);

  app.put(
    '/v1/agents/upsert',
    {
      schema: {
        tags: ['agents'],
        querystring: projectQuery,
        body: upsertBody,
        response: { 200: z.object({ agent: agentRecord, inserted: z.boolean(), updated: z.boolean() }) },
      },
    },
    async (req) => {
      requireApiKey(req.auth, 'upsert agents');
      // An existing agent with its project and numbers in one query; a miss tells a missing project (404, 403)
      // from a new agent.
      const hit = await agentForRead(sql, req.auth.orgId, req.query.project, req.body.name);
      const project = hit ? { id: hit.row.project_id, name: hit.projectName } : await resolveProject(sql, req.auth.orgId, req.query.project);
      const existing = hit ? hit.row : await agentByName(sql, project.id, req.body.name);
      const out = await writeAgent(ctx, req.auth.orgId, project, existing, req.body, 'upsert', hit?.phones);
      return { agent: recordAfter(out, project), inserted: out.inserted, updated: !out.inserted && out.changed };
    },
  );

  app.post(
    '/v1/agents',
    { schema: { tags: ['agents'], querystring: projectQuery, body: upsertBody, response: { 201: agentBody } } },
    async (req, reply) => {
      requireApiKey(req.auth, 'create agents');
      const project = await resolveProject(sql, req.auth.orgId, req.query.project);
      if (await agentByName(sql, project.id, req.body.name)) {
        throw new ApiError(409, `an agent named '${req.body.name}' already exists`, {
          paramErrors: { name: `an agent named '${req.body.name}' already exists in this project` },
        });
      }
      const out = await writeAgent(ctx, req.auth.orgId, project, undefined, req.body, 'upsert');
      return reply.status(201).send({ agent: recordAfter(out, project) });
    },
  );

  app.get(
    '/v1/agents',
    { schema: { tags: ['agents'], querystring: projectQuery, response: { 200: z.object({ agents: z.array(agentRecord) }) } } },
    async (req) => {
      const project = await resolveProject(sql, req.auth.orgId, req.query.project);
      const rows = await listAgents(sql, project.id);
      const phones = await phonesOf(sql, rows.map((r) => r.id));
      const ref = { id: project.id, name: project.name };
      return { agents: rows.map((r) => toAgentRecord(r, phones.get(r.id) ?? [], ref)) };
    },
  );

  app.get(
    '/v1/agents/:nameOrId',
    { schema: { tags: ['agents'], params: nameOrIdParams, querystring: projectQuery, response: { 200: agentBody } } },
    async (req) => {
      const { nameOrId } = req.params;
      if (!isId('agent', nameOrId)) {
        // Hot path (one query); on a miss findAgent tells a missing project from a missing agent.
        const hit = await agentForRead(sql, req.auth.orgId, req.query.project, nameOrId);
        if (hit) return { agent: toAgentRecord(hit.row, hit.phones, { id: hit.row.project_id, name: hit.projectName }) };
      }
      const { row, project } = await findAgent(sql, req.auth.orgId, req.query.project, nameOrId);
      return { agent: await recordOf(sql, row, project) };
    },
  );

  app.patch(
    '/v1/agents/:nameOrId',
    {
      schema: {
        tags: ['agents'],
        params: nameOrIdParams,
        querystring: projectQuery,
        body: updateBody,
        response: { 200: z.object({ success: z.boolean(), version_number: z.number().int(), agent: agentRecord }) },
      },
    },
    async (req) => {
      requireApiKey(req.auth, 'update agents');
      const { row, project } = await findAgent(sql, req.auth.orgId, req.query.project, req.params.nameOrId);
      const out = await writeAgent(ctx, req.auth.orgId, project, row, req.body, 'update');
      return { success: true, version_number: out.row.version, agent: recordAfter(out, project) };
    },
  );

  app.delete(
    '/v1/agents/:nameOrId',
    { schema: { tags: ['agents'], params: nameOrIdParams, querystring: projectQuery, response: { 200: successBody } } },
    async (req) => {
      requireApiKey(req.auth, 'delete agents');
      const { row } = await findAgent(sql, req.auth.orgId, req.query.project, req.params.nameOrId);
      await deleteAgent(sql, row.id);
      return { success: true };
    },
  );

  app.post(
    '/v1/agents/:nameOrId/enable',
    { schema: { tags: ['agents'], params: nameOrIdParams, querystring: projectQuery, response: { 200: successBody } } },
    async (req) => {
      requireApiKey(req.auth, 'enable agents');
      const { row } = await findAgent(sql, req.auth.orgId, req.query.project, req.params.nameOrId);
      if (row.enabled) return { success: true };
      const max = ctx.settings.PARLEY_MAX_ENABLED_AGENTS;
      await transaction(sql, async (tx) => {
        await lockOrgEnablement(tx, req.auth.orgId);
        if ((await countEnabled(tx, req.auth.orgId)) >= max) {
          throw forbidden(`the workspace already has its maximum of ${max} enabled agents`, 'enabled_agents_limit');
        }
        await setEnabled(tx, row.id, true);
      });
      return { success: true };
    },
  );

  app.post(
    '/v1/agents/:nameOrId/disable',
    { schema: { tags: ['agents'], params: nameOrIdParams, querystring: projectQuery, response: { 200: successBody } } },
    async (req) => {
      requireApiKey(req.auth, 'disable agents');
      const { row } = await findAgent(sql, req.auth.orgId, req.query.project, req.params.nameOrId);
      await setEnabled(sql, row.id, false);
      return { success: true };
    },
  );
};

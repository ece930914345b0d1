// Conversation eval prompts of a project: created and listed (no name rule: names may repeat).
import type { Sql } from '../store/db.js';
import { insertEvalPrompt, listEvalPrompts } from '../store/eval-prompts.js';
import { resolveProject } from './projects.js';

/** Creates a prompt of the project `project` (name or id) names; its new id. */
export async function createEvalPrompt(
  sql: Sql,
  orgId: string,
  project: string,
  prompt: { name: string; prompt: string },
): Promise<string> {
  const p = await resolveProject(sql, orgId, project);
  return insertEvalPrompt(sql, p.org_id, p.id, prompt);
}

/** The project's prompts, oldest first, with ISO timestamps. */
export async function listEvalPromptRecords(
  sql: Sql,
  orgId: string,
  project: string,
): Promise<{ id: string; name: string; prompt: string; created_at: string }[]> {
  const p = await resolveProject(sql, orgId, project);
  return (await listEvalPrompts(sql, p.id)).map((r) => ({ ...r, created_at: r.created_at.toISOString() }));
}

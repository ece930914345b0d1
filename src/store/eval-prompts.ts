// Conversation eval prompts repository: rows of `eval_prompts`, per project.
import type { Sql } from './db.js';
import { newId } from './ids.js';

export interface EvalPromptRow {
  id: string;
  name: string;
  prompt: string;
  created_at: Date;
}

/** Inserts a prompt of the project; returns its new id. */
export async function insertEvalPrompt(
  sql: Sql,
  orgId: string,
  projectId: string,
  p: { name: string; prompt: string },
): Promise<string> {
  const id = newId('conv_eval_prompt');
  await sql`insert into eval_prompts (id, org_id, project_id, name, prompt)
            values (${id}, ${orgId}, ${projectId}, ${p.name}, ${p.prompt})`;
  return id;
}

/** The project's prompts, oldest first. */
export async function listEvalPrompts(sql: Sql, projectId: string): Promise<EvalPromptRow[]> {
  return sql<EvalPromptRow[]>`
    select id, name, prompt, created_at from eval_prompts where project_id = ${projectId} order by created_at, id`;
}

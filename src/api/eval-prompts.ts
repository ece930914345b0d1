// Conversation eval prompts: POST (spec endpoint 6, 201 {id}) and GET /v1/projects/{id}/conversation_eval_prompts.
import { newId } from '../store/ids.js';
import {
  createdEvalPromptBody,
  createEvalPromptBody,
  evalPromptParams,
  evalPromptsBody,
} from '../schemas/eval-prompts.js';
import { resolveProject } from './lookup.js';
import type { RoutePlugin } from './routes.js';

export const evalPromptRoutes: RoutePlugin = async (app, { sql }) => {
  app.post(
    '/v1/projects/:id/conversation_eval_prompts',
    {
      schema: {
        tags: ['eval prompts'],
        params: evalPromptParams,
        body: createEvalPromptBody,
        response: { 201: createdEvalPromptBody },
      },
    },
    async (req, reply) => {
      const project = await resolveProject(sql, req.auth.orgId, req.params.id);
      const id = newId('conv_eval_prompt');
      await sql`insert into eval_prompts (id, org_id, project_id, name, prompt)
                values (${id}, ${project.org_id}, ${project.id}, ${req.body.name}, ${req.body.prompt})`;
      return reply.status(201).send({ id });
    },
  );

  app.get(
    '/v1/projects/:id/conversation_eval_prompts',
    { schema: { tags: ['eval prompts'], params: evalPromptParams, response: { 200: evalPromptsBody } } },
    async (req) => {
      const project = await resolveProject(sql, req.auth.orgId, req.params.id);
      const rows = await sql<{ id: string; name: string; prompt: string; created_at: Date }[]>`
        select id, name, prompt, created_at from eval_prompts where project_id = ${project.id} order by created_at, id`;
      return { conversation_eval_prompts: rows.map((r) => ({ ...r, created_at: r.created_at.toISOString() })) };
    },
  );
};

// Conversation eval prompts of a project: POST (201 {id}) and GET /v1/projects/{id}/conversation_eval_prompts.
import { createEvalPrompt, listEvalPromptRecords } from '../domain/eval-prompts.js';
import {
  createdEvalPromptBody,
  createEvalPromptBody,
  evalPromptParams,
  evalPromptsBody,
} from '../schemas/eval-prompts.js';
import type { RoutePlugin } from './types.js';

export const evalPromptRoutes: RoutePlugin = async (app, { sql }) => {
  app.post(
    '/projects/:id/conversation_eval_prompts',
    {
      schema: {
        tags: ['eval prompts'],
        params: evalPromptParams,
        body: createEvalPromptBody,
        response: { 201: createdEvalPromptBody },
      },
    },
    async (req, reply) => {
      const id = await createEvalPrompt(sql, req.auth.orgId, req.params.id, req.body);
      return reply.status(201).send({ id });
    },
  );

  app.get(
    '/projects/:id/conversation_eval_prompts',
    { schema: { tags: ['eval prompts'], params: evalPromptParams, response: { 200: evalPromptsBody } } },
    async (req) => ({ conversation_eval_prompts: await listEvalPromptRecords(sql, req.auth.orgId, req.params.id) }),
  );
};

// Conversation eval prompts of a project: /v1/projects/{id}/conversation_eval_prompts.
import { z } from 'zod';

export const createEvalPromptBody = z
  .object({
    name: z.string().trim().min(1).max(200),
    prompt: z.string().min(1).max(100_000),
  })
  .strict();

export const evalPrompt = z.object({ id: z.string(), name: z.string(), prompt: z.string(), created_at: z.string() });
export const evalPromptsBody = z.object({ conversation_eval_prompts: z.array(evalPrompt) });
export const createdEvalPromptBody = z.object({ id: z.string() });
export const evalPromptParams = z.object({ id: z.string().min(1).max(200).describe('project id') });

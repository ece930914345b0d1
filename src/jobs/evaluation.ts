// The `evaluation` job: every eval prompt of the conversation's project and every task of its agent (as the
// conversation started with them) is judged on the transcript by the chat model, one question each, and the
// verdicts go into the record's `task_results`:
//
//   task_results[<name>] = { verdict: 'pass' | 'fail' | 'unknown', reason: string, kind: 'eval_prompt' | 'task' }
//
// keyed by the eval prompt's or the task's name; eval prompts come first (oldest first), then tasks (in the agent's
// order), and a name already taken gets ` (2)`, ` (3)`, ... appended. `unknown`: the transcript does not tell.
import { z } from 'zod';
import { chatClientFromSettings } from '../engines/chat-client.js';
import { JOB_KINDS } from '../store/jobs.js';
import { mergeTaskResults, postCallConversation, projectEvalPrompts } from '../store/post-call.js';
import { NO_CHAT_MODEL } from './extraction.js';
import type { JobContext, JobHandler, JobOutcome } from './handler.js';
import { conversationJobPayload, type ConversationJobPayload } from './payload.js';
import { completeStructured } from './structured-output.js';
import { conversationText, TRANSCRIPT_NOTE } from './transcript.js';

export const VERDICTS = ['pass', 'fail', 'unknown'] as const;

/** One entry of task_results. */
export const taskResult = z.strictObject({ verdict: z.enum(VERDICTS), reason: z.string() });
export type TaskResult = z.infer<typeof taskResult> & { kind: Criterion['kind'] };

const TASK_RESULT_JSON_SCHEMA = {
  type: 'object',
  properties: {
    verdict: { type: 'string', enum: [...VERDICTS] },
    reason: { type: 'string', description: 'why, in one or two sentences' },
  },
  required: ['verdict', 'reason'],
  additionalProperties: false,
};

const SYSTEM_PROMPT =
  'You judge the transcript of a finished conversation between a user and a voice assistant against one criterion. ' +
  'Answer with a JSON object: `verdict` is "pass" when the conversation meets the criterion, "fail" when it does not, ' +
  '"unknown" when the transcript does not let you tell; `reason` says why in one or two sentences. ' +
  TRANSCRIPT_NOTE;

interface Criterion {
  kind: 'eval_prompt' | 'task';
  name: string;
  text: string;
}

/** The task_results key of each criterion, in order: its name, made unique with ` (n)`. */
export function resultKeys(names: readonly string[]): string[] {
  const taken = new Set<string>();
  return names.map((name) => {
    let key = name;
    for (let n = 2; taken.has(key); n++) key = `${name} (${n})`;
    taken.add(key);
    return key;
  });
}

async function evaluate(payload: ConversationJobPayload, ctx: JobContext): Promise<JobOutcome> {
  const id = payload.conversation_id;
  const conv = await postCallConversation(ctx.sql, id);
  if (!conv) return { status: 'skipped', reason: 'the conversation no longer exists' };
  const criteria: Criterion[] = [
    ...(await projectEvalPrompts(ctx.sql, conv.projectId)).map((p) => ({
      kind: 'eval_prompt' as const,
      name: p.name,
      text: p.prompt,
    })),
    ...conv.tasks.map((t) => ({ kind: 'task' as const, name: t.name, text: t.description })),
  ];
  if (criteria.length === 0)
    return { status: 'skipped', reason: 'no eval prompts in the project and no tasks on the agent' };
  const chat = chatClientFromSettings(ctx.settings, ctx.log, ctx.modelFetch);
  if (!chat) return { status: 'skipped', reason: NO_CHAT_MODEL };
  const text = conversationText(conv);
  if ('missing' in text) return { status: 'skipped', reason: text.missing };
  const keys = resultKeys(criteria.map((c) => c.name));
  const results: Record<string, TaskResult> = {};
  for (const [i, c] of criteria.entries()) {
    const label = c.kind === 'task' ? 'Task the assistant was to carry out' : 'Evaluation';
    const judged = await completeStructured(chat, {
      messages: [
        { role: 'system', content: SYSTEM_PROMPT },
        { role: 'user', content: `${label} (${c.name}):\n${c.text}\n\nTranscript:\n${text.text}` },
      ],
      name: 'evaluation',
      jsonSchema: TASK_RESULT_JSON_SCHEMA,
      schema: taskResult,
      signal: ctx.signal,
    });
    results[keys[i]] = { ...judged, kind: c.kind };
  }
  if (!(await mergeTaskResults(ctx.sql, id, results)))
    return { status: 'skipped', reason: 'the conversation no longer exists' };
  return { status: 'done', detail: { criteria: criteria.length, transcript: text.source } };
}

export function evaluationHandler(): JobHandler<ConversationJobPayload> {
  return { kind: JOB_KINDS.evaluation, parse: (p) => conversationJobPayload.parse(p), run: evaluate };
}

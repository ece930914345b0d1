// The `extraction` job: every extraction schema of the conversation's project (those not deleted) is run on its
// transcript through the chat model, and each result stored as a conversation extraction (replacing that schema's
// earlier one: a rerun). Also run again on request (POST /v1/conversations/{id}/extractions: rerunExtraction).
import type { Sql } from '../store/db.js';
import { chatClientFromSettings } from '../engines/chat-client.js';
import { JOB_KINDS, plannedJob, rerunConversationJob } from '../store/jobs.js';
import { liveExtractionSchemas, postCallConversation, replaceExtraction } from '../store/post-call.js';
import { transaction } from '../store/transaction.js';
import type { ExtractionSchema } from '../schemas/extraction-schemas.js';
import type { JobContext, JobHandler, JobOutcome } from './handler.js';
import { extractionJsonSchema, extractionResultSchema } from './extraction-format.js';
import { conversationJobPayload, type ConversationJobPayload } from './payload.js';
import { wakeJobQueues } from './queue.js';
import { completeStructured, InvalidModelOutputError } from './structured-output.js';
import { conversationText, TRANSCRIPT_NOTE } from './transcript.js';

export const NO_CHAT_MODEL = 'no chat model is configured (PARLEY_LLM_BASE_URL and PARLEY_LLM_MODEL)';

const SYSTEM_PROMPT =
  'You extract structured data from the transcript of a finished conversation between a user and a voice assistant, ' +
  'following the instructions given. Answer with a JSON object holding exactly the fields asked for, each of its ' +
  'type; a field the transcript does not let you determine is null. ' +
  TRANSCRIPT_NOTE;

function question(schema: ExtractionSchema, transcript: string): string {
  const fields = schema.fields
    .map((f) => `- ${f.name} (${f.type})${f.description ? `: ${f.description}` : ''}`)
    .join('\n');
  return `Instructions:\n${schema.prompt}\n\nFields:\n${fields}\n\nTranscript:\n${transcript}`;
}

async function extract(payload: ConversationJobPayload, ctx: JobContext): Promise<JobOutcome> {
  const id = payload.conversation_id;
  const conv = await postCallConversation(ctx.sql, id);
  if (!conv) return { status: 'skipped', reason: 'the conversation no longer exists' };
  const schemas = await liveExtractionSchemas(ctx.sql, conv.projectId);
  if (schemas.length === 0) return { status: 'skipped', reason: 'the project has no extraction schemas' };
  const chat = chatClientFromSettings(ctx.settings, ctx.log, ctx.modelFetch);
  if (!chat) return { status: 'skipped', reason: NO_CHAT_MODEL };
  const text = conversationText(conv);
  if ('missing' in text) return { status: 'skipped', reason: text.missing };
  for (const schema of schemas) {
    let result: Record<string, unknown>;
    try {
      result = await completeStructured(chat, {
        messages: [
          { role: 'system', content: SYSTEM_PROMPT },
          { role: 'user', content: question(schema, text.text) },
        ],
        name: 'extraction',
        jsonSchema: extractionJsonSchema(schema.fields),
        schema: extractionResultSchema(schema.fields),
        signal: ctx.signal,
      });
    } catch (err) {
      if (err instanceof InvalidModelOutputError)
        throw new InvalidModelOutputError(`extraction schema ${schema.name}: ${err.message}`);
      throw err;
    }
    await replaceExtraction(ctx.sql, id, {
      schemaId: schema.id,
      schemaName: schema.name,
      result,
      createdAt: ctx.now(),
    });
  }
  return { status: 'done', detail: { schemas: schemas.length, transcript: text.source } };
}

export function extractionHandler(): JobHandler<ConversationJobPayload> {
  return { kind: JOB_KINDS.extraction, parse: (p) => conversationJobPayload.parse(p), run: extract };
}

/**
 * Runs the extraction of an ended conversation again, now (its job back to pending, this process's queue woken),
 * and the `conversation.analyzed` event after it (it waits for the extraction, src/store/jobs.ts POST_CALL_JOBS).
 */
export async function rerunExtraction(sql: Sql, conversationId: string): Promise<void> {
  await transaction(sql, async (tx) => {
    for (const kind of [JOB_KINDS.extraction, JOB_KINDS.conversationAnalyzed]) {
      await rerunConversationJob(tx, { kind, conversationId, afterKinds: plannedJob(kind).after });
    }
  });
  wakeJobQueues();
}

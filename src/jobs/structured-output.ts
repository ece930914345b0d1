// A JSON answer of the chat model, held to a schema: asked for with a JSON-schema response format (structured
// outputs), checked against its zod twin, and asked again with what was wrong when it does not hold, a bounded
// number of times.
import type { z } from 'zod';
import type { ChatClient, ChatMessage } from '../engines/chat-client.js';

/** Answers asked for per question: the first and the corrections after it. */
export const STRUCTURED_ATTEMPTS = 3;

/** The model answered, but never with what the schema asks (after STRUCTURED_ATTEMPTS answers). */
export class InvalidModelOutputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidModelOutputError';
  }
}

export interface StructuredRequest<T> {
  messages: ChatMessage[];
  /** The response format's name (letters, digits, `_` and `-`). */
  name: string;
  /** JSON Schema of the answer (strict: every property required, no others). */
  jsonSchema: Record<string, unknown>;
  /** The same rules, as what the answer is checked against. */
  schema: z.ZodType<T>;
  attempts?: number;
  signal?: AbortSignal;
}

/** What is wrong with an answer, or null with the value it holds. */
function check<T>(content: string, schema: z.ZodType<T>): { value: T } | { problem: string } {
  let json: unknown;
  try {
    json = JSON.parse(content);
  } catch {
    return { problem: 'it is not JSON' };
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) return { value: parsed.data };
  const issues = parsed.error.issues
    .slice(0, 5)
    .map((i) => `${i.path.length > 0 ? i.path.join('.') : '(answer)'}: ${i.message}`);
  return { problem: issues.join('; ') };
}

/**
 * Asks the chat model for an answer that holds to `schema`. A wrong answer is sent back with what is wrong and the
 * question asked again, up to `attempts` answers in all; then InvalidModelOutputError, which names what was wrong
 * but quotes none of the answer (it may repeat what was said, and job errors outlive transcripts). Errors of the
 * chat client (unreachable, refused) are thrown as they are.
 */
export async function completeStructured<T>(chat: ChatClient, r: StructuredRequest<T>): Promise<T> {
  const attempts = r.attempts ?? STRUCTURED_ATTEMPTS;
  const messages = [...r.messages];
  let problem = '';
  for (let i = 0; i < attempts; i++) {
    const completion = await chat.complete({
      messages,
      responseFormat: { type: 'json_schema', json_schema: { name: r.name, schema: r.jsonSchema, strict: true } },
      temperature: 0,
      signal: r.signal,
    });
    const checked = check(completion.content, r.schema);
    if ('value' in checked) return checked.value;
    problem = checked.problem;
    messages.push(
      { role: 'assistant', content: completion.content },
      {
        role: 'user',
        content: `That answer is not valid: ${checked.problem}. Answer again with only a JSON object that follows the schema.`,
      },
    );
  }
  throw new InvalidModelOutputError(
    `the model's answer did not follow the schema after ${attempts} attempts: ${problem}`,
  );
}

// Names and addresses by the chat model (src/engines/chat-client.ts), for what the offline rules cannot see: a name
// said without a cue, an address without a house number. The model is asked for the exact words; each is then
// found in the text, so a span is always text that is there (an answer naming words that are not is ignored).
import { z } from 'zod';
import type { ChatClient } from '../../engines/chat-client.js';
import type { Span } from './spans.js';

/** Characters of transcript per request: long conversations go in several. */
const BATCH_CHARS = 12_000;

const SYSTEM_PROMPT = [
  'You find personal data to redact in transcripts of phone calls.',
  'Report every personal name (first, last or full names of people, also spelled out letter by letter) and every',
  'postal address (street addresses with their house number, apartment, city, state and postal code when said, also',
  'with the numbers spoken as words).',
  'Do not report companies, products, cities or countries said alone, or the names of days and months.',
  'Copy each one exactly as it is written in the line, and give the line number.',
].join(' ');

const RESPONSE_SCHEMA = {
  type: 'object',
  properties: {
    entities: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          line: { type: 'integer' },
          text: { type: 'string' },
          type: { type: 'string', enum: ['NAME', 'ADDRESS'] },
        },
        required: ['line', 'text', 'type'],
        additionalProperties: false,
      },
    },
  },
  required: ['entities'],
  additionalProperties: false,
} as const;

const answerSchema = z.object({
  entities: z.array(z.object({ line: z.number().int(), text: z.string(), type: z.enum(['NAME', 'ADDRESS']) })),
});

/** The model answered, but not with the entities asked for. */
export class ModelAnswerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ModelAnswerError';
  }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Every occurrence of `needle` in `text` as a whole phrase (not inside a longer word), exact case first. */
function occurrences(text: string, needle: string): [number, number][] {
  const phrase = needle.trim();
  if (phrase.length < 2) return [];
  const find = (flags: string) => [
    ...text.matchAll(new RegExp(`(?<![\\p{L}\\p{N}])${escapeRegExp(phrase)}(?![\\p{L}\\p{N}])`, flags)),
  ];
  let found = find('gu');
  if (found.length === 0) found = find('giu');
  return found.map((m) => [m.index, m.index + m[0].length]);
}

export interface ModelResult {
  /** Spans per text, in the order given. */
  spans: Span[][];
  /** Entities the model named that are not in the text (ignored). */
  notFound: number;
}

/** Asks the model for names and addresses in `texts` (one transcript line each); null texts are skipped. */
export async function modelSpans(
  chat: ChatClient,
  texts: (string | null)[],
  signal?: AbortSignal,
): Promise<ModelResult> {
  const spans: Span[][] = texts.map(() => []);
  let notFound = 0;
  const batches: number[][] = [];
  let current: number[] = [];
  let size = 0;
  texts.forEach((t, i) => {
    if (!t) return;
    if (size + t.length > BATCH_CHARS && current.length > 0) {
      batches.push(current);
      current = [];
      size = 0;
    }
    current.push(i);
    size += t.length;
  });
  if (current.length > 0) batches.push(current);

  for (const batch of batches) {
    const lines = batch.map((i, n) => `${n + 1}: ${texts[i]}`).join('\n');
    const completion = await chat.complete({
      messages: [
        { role: 'system', content: SYSTEM_PROMPT },
        { role: 'user', content: lines },
      ],
      temperature: 0,
      responseFormat: {
        type: 'json_schema',
        json_schema: { name: 'personal_data', schema: RESPONSE_SCHEMA, strict: true },
      },
      signal,
    });
    let parsed: z.infer<typeof answerSchema>;
    try {
      parsed = answerSchema.parse(JSON.parse(completion.content));
    } catch (err) {
      throw new ModelAnswerError(
        `the chat model did not answer with the entities: ${(err as Error).message.slice(0, 200)}`,
      );
    }
    for (const e of parsed.entities) {
      // The line the model named, else any line of the batch that has the words.
      const named = batch[e.line - 1];
      const where =
        named !== undefined && occurrences(texts[named]!, e.text).length > 0
          ? [named]
          : batch.filter((i) => occurrences(texts[i]!, e.text).length > 0);
      if (where.length === 0) notFound++;
      for (const i of where) {
        for (const [start, end] of occurrences(texts[i]!, e.text))
          spans[i].push({ start, end, tag: e.type, source: 'model' });
      }
    }
  }
  return { spans, notFound };
}

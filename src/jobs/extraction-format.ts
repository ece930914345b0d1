// The answer an extraction schema asks of the chat model, from its fields: a JSON Schema for the response format
// (strict structured outputs: every field required, none other, each nullable for "the transcript does not say")
// and the zod schema the answer is checked against.
import { z } from 'zod';
import type { EXTRACTION_FIELD_TYPES, ExtractionSchema } from '../schemas/extraction-schemas.js';

type FieldType = (typeof EXTRACTION_FIELD_TYPES)[number];
type Field = ExtractionSchema['fields'][number];

/** JSON Schema type of a scalar field type. */
const JSON_TYPE: Record<'string' | 'int' | 'float' | 'bool', string> = {
  string: 'string',
  int: 'integer',
  float: 'number',
  bool: 'boolean',
};

function scalar(type: FieldType): keyof typeof JSON_TYPE {
  return type.replace('[]', '') as keyof typeof JSON_TYPE;
}

function fieldJsonSchema(f: Field): Record<string, unknown> {
  const description = f.description === null ? {} : { description: f.description };
  const item = JSON_TYPE[scalar(f.type)];
  if (f.type.endsWith('[]')) return { type: ['array', 'null'], items: { type: item }, ...description };
  return { type: [item, 'null'], ...description };
}

/** The response format's schema: an object of every field, each required and nullable. */
export function extractionJsonSchema(fields: readonly Field[]): Record<string, unknown> {
  return {
    type: 'object',
    properties: Object.fromEntries(fields.map((f) => [f.name, fieldJsonSchema(f)])),
    required: fields.map((f) => f.name),
    additionalProperties: false,
  };
}

function scalarZod(type: ReturnType<typeof scalar>): z.ZodType {
  switch (type) {
    case 'string':
      return z.string();
    case 'int':
      return z.number().int();
    case 'float':
      return z.number();
    case 'bool':
      return z.boolean();
  }
}

/** What an answer must be: exactly the fields, each of its type or null. */
export function extractionResultSchema(fields: readonly Field[]): z.ZodType<Record<string, unknown>> {
  const shape: Record<string, z.ZodType> = {};
  for (const f of fields) {
    const one = scalarZod(scalar(f.type));
    shape[f.name] = (f.type.endsWith('[]') ? z.array(one) : one).nullable();
  }
  return z.strictObject(shape);
}

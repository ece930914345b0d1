// Response bodies: each route's zod response schema is compiled once into a fast-json-stringify function through
// its JSON Schema (z.toJSONSchema, output side), so an answer is written in one pass instead of being parsed again
// by zod and then JSON.stringify-ed. The body is the same: the schema's properties in the schema's order, the
// properties it does not declare left out, records and unknown values written as JSON.stringify writes them.
// Answers are trusted (the domain builds them from validated input and the store); they are not validated again.
// A schema JSON Schema cannot state (a transform, a codec, a date, a cycle) keeps the type provider's serializer.
import fastJsonStringify from 'fast-json-stringify';
import { serializerCompiler as zodSerializerCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { $ZodType } from 'zod/v4/core';

type Serializer = (data: unknown) => string;
type RouteSchema = Parameters<typeof zodSerializerCompiler>[0];
type JsonSchema = { [keyword: string]: unknown };

const isSchema = (v: unknown): v is JsonSchema => typeof v === 'object' && v !== null && !Array.isArray(v);
const isNull = (v: unknown) => isSchema(v) && v.type === 'null' && Object.keys(v).length === 1;

/** A schema fast-json-stringify cannot write as zod writes it: the route keeps zod's serializer. */
class NotExpressible extends Error {}

/**
 * Rewrites a JSON Schema into one fast-json-stringify writes as zod's output is written:
 * - `anyOf: [X, null]` as X `nullable` (chosen by `=== null`; other unions are chosen by a validator);
 * - no `default` (zod's output side never fills one in; fast-json-stringify would write it for a missing value);
 * - no `additionalProperties: false` (undeclared properties are left out anyway; a union's branch must not be
 *   refused for a property zod would have dropped);
 * - `required` only where it is a prefix of the properties, since fast-json-stringify writes required properties
 *   first; inside a union's branch it decides the branch, so one that is not a prefix cannot be expressed.
 */
function forSerializer(schema: unknown, inUnion: boolean): unknown {
  if (Array.isArray(schema)) return schema.map((s) => forSerializer(s, inUnion));
  if (!isSchema(schema)) return schema;
  const anyOf = schema.anyOf;
  if (Array.isArray(anyOf) && anyOf.length === 2 && anyOf.some(isNull)) {
    const other: unknown = anyOf.find((s: unknown) => !isNull(s));
    if (
      isSchema(other) &&
      typeof other.type === 'string' &&
      !('nullable' in other || 'anyOf' in other || 'oneOf' in other || 'allOf' in other)
    ) {
      const { anyOf: _, ...siblings } = schema;
      return { ...(forSerializer({ ...siblings, ...other }, inUnion) as JsonSchema), nullable: true };
    }
  }
  const out: JsonSchema = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'default' || (k === 'additionalProperties' && v === false)) continue;
    if (k === 'properties' && isSchema(v)) {
      out[k] = Object.fromEntries(Object.entries(v).map(([name, s]) => [name, forSerializer(s, inUnion)]));
    } else if (k === 'const' || k === 'enum' || k === 'examples' || k === 'required') {
      out[k] = v;
    } else {
      out[k] = forSerializer(v, inUnion || k === 'anyOf' || k === 'oneOf');
    }
  }
  if (Array.isArray(out.required) && isSchema(out.properties)) {
    const required = new Set(out.required as string[]);
    const keys = Object.keys(out.properties);
    const firstOptional = keys.findIndex((key) => !required.has(key));
    if (firstOptional !== -1 && keys.slice(firstOptional).some((key) => required.has(key))) {
      if (inUnion) throw new NotExpressible('required properties after optional ones in a union branch');
      delete out.required;
    }
  }
  return out;
}

/** The JSON Schema of a response schema as fast-json-stringify takes it, or null when it cannot state it. */
export function responseJsonSchema(schema: $ZodType): object | null {
  try {
    const json = z.toJSONSchema(schema, {
      io: 'output',
      target: 'draft-7',
      unrepresentable: 'throw',
      cycles: 'throw',
      reused: 'inline',
    });
    return forSerializer(json, false) as object;
  } catch {
    return null;
  }
}

/** A serializer for one route's answer of one status, compiled on the route's first answer (start-up stays quick). */
export const serializerCompiler: typeof zodSerializerCompiler = (route: RouteSchema) => {
  const { schema } = route;
  let serialize: Serializer | undefined;
  return (data: unknown) => {
    if (!serialize) {
      const json = schema instanceof $ZodType ? responseJsonSchema(schema) : null;
      serialize = json ? (fastJsonStringify(json) as Serializer) : (zodSerializerCompiler(route) as Serializer);
    }
    return serialize(data);
  };
};

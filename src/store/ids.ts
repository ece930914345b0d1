// Identifiers in the API's shape: `<prefix>_<uuid>`, the prefix naming the kind of resource.
import { randomUUID } from 'node:crypto';

export type IdPrefix =
  | 'org'
  | 'proj'
  | 'agent'
  | 'tool'
  | 'conv'
  | 'conv_eval_prompt'
  | 'conv_extract_schema'
  | 'conv_extract'
  | 'api_key'
  | 'session_token'
  | 'ext_storage_policy'
  | (string & {});

/** A new identifier: `newId('agent')` -> `agent_3f1c...`. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomUUID()}`;
}

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const shapes = new Map<string, RegExp>();

/** Whether `value` has the shape of an identifier made by `newId(prefix)`. */
export function isId(prefix: IdPrefix, value: string): boolean {
  let re = shapes.get(prefix);
  if (!re) {
    re = new RegExp(`^${prefix}_${UUID}$`);
    shapes.set(prefix, re);
  }
  return re.test(value);
}

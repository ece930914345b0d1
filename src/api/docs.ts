// GET /docs: a readable API reference, rendered on the server from the generated OpenAPI document.
import type { RoutePlugin } from './types.js';

type Json = Record<string, unknown>;

/** A schema keyword's value as written in the reference: words and numbers as they are, the rest as JSON. */
const word = (v: unknown): string => (typeof v === 'string' || typeof v === 'number' ? String(v) : JSON.stringify(v));

const esc = (s: unknown) =>
  String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const STYLE = `body{font:15px/1.5 system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222}
h2{border-bottom:1px solid #ddd;margin-top:2em}h3{font-family:ui-monospace,monospace;font-size:15px;margin:1.5em 0 .3em}
.m{display:inline-block;min-width:4.5em;font-weight:bold}.get{color:#1769aa}.post{color:#2e7d32}.put{color:#8a6d00}
.patch{color:#6a1b9a}.delete{color:#c62828}table{border-collapse:collapse;margin:.3em 0 .8em;font-size:14px}
td,th{border:1px solid #ddd;padding:2px 8px;text-align:left;vertical-align:top}code,pre{font-family:ui-monospace,monospace}
pre{background:#f6f8fa;padding:.5em;overflow:auto;font-size:12px}nav a{margin-right:1em}`;

/** One line describing a JSON schema: type, enum, bounds, default. */
function describe(schema: Json | undefined): string {
  if (!schema) return '';
  const parts: string[] = [];
  const any = (schema.anyOf ?? schema.oneOf) as Json[] | undefined;
  if (any) parts.push(any.map((s) => describe(s)).join(' | '));
  if (schema.type) parts.push(Array.isArray(schema.type) ? schema.type.map(word).join(' | ') : word(schema.type));
  if (schema.type === 'array' && schema.items) parts[parts.length - 1] = `array of ${describe(schema.items as Json)}`;
  if (schema.enum) parts.push(`one of ${(schema.enum as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`);
  if (schema.pattern) parts.push(`pattern ${word(schema.pattern)}`);
  for (const k of ['minimum', 'maximum', 'minLength', 'maxLength', 'minItems', 'maxItems']) {
    if (schema[k] !== undefined) parts.push(`${k} ${word(schema[k])}`);
  }
  if (schema.default !== undefined) parts.push(`default ${JSON.stringify(schema.default)}`);
  return parts.join(', ');
}

function fieldsTable(schema: Json | undefined): string {
  // An optional body is `anyOf: [object, null]`: show the object's fields.
  const objectBranch = (schema?.anyOf as Json[] | undefined)?.find((s) => s.properties);
  if (objectBranch) return `<p>(optional)</p>${fieldsTable(objectBranch)}`;
  const props = schema?.properties as Record<string, Json> | undefined;
  if (!props) return schema ? `<p>${esc(describe(schema))}</p>` : '';
  const required = new Set((schema!.required as string[] | undefined) ?? []);
  const rows = Object.entries(props)
    .map(
      ([name, s]) =>
        `<tr><td><code>${esc(name)}</code></td><td>${required.has(name) ? 'yes' : ''}</td><td>${esc(describe(s))}${s.description ? `<br>${esc(s.description)}` : ''}</td></tr>`,
    )
    .join('');
  return `<table><tr><th>field</th><th>required</th><th>type and rules</th></tr>${rows}</table>`;
}

function operation(method: string, path: string, op: Json): string {
  const params = (op.parameters as Json[] | undefined) ?? [];
  const paramRows = params
    .map(
      (p) =>
        `<tr><td><code>${esc(p.name)}</code></td><td>${esc(p.in)}</td><td>${p.required ? 'yes' : ''}</td><td>${esc(describe(p.schema as Json))}${p.description ? `<br>${esc(p.description)}` : ''}</td></tr>`,
    )
    .join('');
  const body = ((op.requestBody as Json | undefined)?.content as Json | undefined)?.['application/json'] as
    Json | undefined;
  const responses = Object.entries((op.responses as Record<string, Json>) ?? {})
    .map(([status, r]) => {
      const schema = ((r.content as Json | undefined)?.['application/json'] as Json | undefined)?.schema as
        Json | undefined;
      const what = r.description && r.description !== 'Default Response' ? ` ${esc(r.description)}` : '';
      return `<p><b>${esc(status)}</b>${what}</p>${schema ? `<details><summary>body</summary><pre>${esc(JSON.stringify(schema, null, 2))}</pre></details>` : ''}`;
    })
    .join('');
  return `<h3><span class="m ${method}">${method.toUpperCase()}</span>${esc(path)}</h3>
${paramRows ? `<table><tr><th>parameter</th><th>in</th><th>required</th><th>type and rules</th></tr>${paramRows}</table>` : ''}
${body ? `<p>Request body</p>${fieldsTable(body.schema as Json)}` : ''}${responses}`;
}

/** The whole page from an OpenAPI 3.1 document. */
export function renderDocs(doc: Json): string {
  const info = doc.info as Json;
  const byTag = new Map<string, string[]>();
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Json>>)) {
    for (const [method, op] of Object.entries(item)) {
      const tag = (op.tags as string[] | undefined)?.[0] ?? 'other';
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag)!.push(operation(method, path, op));
    }
  }
  const tags = [...byTag.keys()].sort();
  const id = (tag: string) => tag.replace(/\W+/g, '-');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(info.title)}</title>
<style>${STYLE}</style></head><body><h1>${esc(info.title)}</h1><p>${esc(info.description ?? '')}</p>
<p>Every <code>/v1</code> endpoint needs <code>Authorization: Bearer &lt;API key&gt;</code>. Errors:
<code>{"error": {"message", "code"?}}</code>, and for invalid parameters
<code>{"error": {"message"}, "param_errors": {"a.b.0": "message"}}</code>. Machine-readable:
<a href="/v1/openapi.json">/v1/openapi.json</a>.</p>
<nav>${tags.map((t) => `<a href="#${id(t)}">${esc(t)}</a>`).join('')}</nav>
${tags.map((t) => `<h2 id="${id(t)}">${esc(t)}</h2>${byTag.get(t)!.join('\n')}`).join('\n')}
</body></html>`;
}

/** GET /docs, outside `/v1` (a page for people, not an API route). */
export const docsRoutes: RoutePlugin = async (app) => {
  let page: string | null = null; // the routes do not change once the server is up: render once
  app.get('/docs', { schema: { hide: true } }, async (_req, reply) => {
    page ??= renderDocs(app.swagger() as unknown as Json);
    return reply.header('content-type', 'text/html; charset=utf-8').send(page);
  });
};

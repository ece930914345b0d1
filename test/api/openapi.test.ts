// GET /v1/openapi.json (OpenAPI 3.1 from the zod schemas, no key needed) and the /docs reference page.
// The document does not depend on the database, so one database (PostgreSQL) serves.
import t from 'tap';
import { api, startTestServer } from '../helpers/server.js';

t.setTimeout(300_000);

t.test('openapi document and reference page', async (t) => {
  const server = await startTestServer({ db: 'postgres' });
  t.teardown(() => server.close());
  const client = api(server);

  const res = await client.get('/v1/openapi.json', undefined, { key: null });
  t.equal(res.status, 200);
  const doc = res.body;
  t.equal(doc.openapi, '3.1.0');
  t.same(doc.components.securitySchemes.bearer, {
    type: 'http',
    scheme: 'bearer',
    description: 'API key or session token',
  });
  const expected: [string, string][] = [
    ['/v1/auth/session_token', 'post'],
    ['/v1/api_keys/{id}/rotate', 'post'],
    ['/v1/external_storage_policies/{nameOrId}', 'patch'],
    ['/v1/projects/{id}/conversation_eval_prompts', 'post'],
    ['/v1/workspace', 'patch'],
    ['/v1/projects/{nameOrId}', 'get'],
    ['/v1/projects', 'get'],
    ['/v1/extraction_schemas/{nameOrId}', 'get'],
    ['/v1/voices/{id}', 'get'],
  ];
  for (const [path, method] of expected) t.ok(doc.paths[path]?.[method], `${method.toUpperCase()} ${path} documented`);
  t.notOk(doc.paths['/v1/openapi.json'], 'the document itself is hidden');
  t.notOk(
    Object.keys(doc.paths).some((p: string) => p.startsWith('/samples')),
    'signed sample links are hidden',
  );

  const patchEsp = doc.paths['/v1/external_storage_policies/{nameOrId}'].patch;
  const props = patchEsp.requestBody.content['application/json'].schema.properties;
  t.same(Object.keys(props).sort(), [
    'access_key_id',
    'addressing_style',
    'bucket',
    'endpoint_url',
    'key_prefix',
    'name',
    'region',
    'secret_access_key',
  ]);
  t.same(props.addressing_style.enum, ['auto', 'virtual', 'path']);
  t.ok(patchEsp.parameters.some((p: { name: string; in: string }) => p.name === 'project' && p.in === 'query'));
  const token = doc.paths['/v1/auth/session_token'].post.requestBody.content['application/json'].schema;
  t.match(JSON.stringify(token), /"ttl_seconds":\{"default":300/);

  const rotate = doc.paths['/v1/api_keys/{id}/rotate'].post.responses;
  t.ok(rotate['200'] && rotate['401'] && rotate['404'], 'error answers documented');
  t.same(rotate['400'].content['application/json'].schema.required, ['error', 'param_errors']);

  const page = await fetch(`${server.url}/docs`);
  t.equal(page.status, 200);
  t.match(page.headers.get('content-type'), /text\/html/);
  const html = await page.text();
  t.match(html, /<h3><span class="m patch">PATCH<\/span>\/v1\/workspace<\/h3>/);
  t.match(html, /<code>ip_allowlist<\/code>/);
  t.match(html, /default 300/);
  t.match(html, /<b>401<\/b> authentication missing/);
  t.notMatch(html, /<script/i, 'no script: rendered on the server');
});

// Resolving an outbound call (src/domain/outbound-call.ts resolveOutboundCall), on both databases: what a call
// needs (project, the named agent as a conversation needs it, the effective configuration, the config's tools),
// and each refusal as the domain error its adapters map (kind and code), in the order the checks run.
import t, { type Test } from 'tap';
import { DomainError } from '../../src/domain/errors.js';
import { resolveOutboundCall } from '../../src/domain/outbound-call.js';
import { admit } from '../../src/store/leases.js';
import { api, DB_KINDS, startTestServer } from '../helpers/server.js';

const transferTool = {
  name: 'to_desk',
  description: 'Transfer to the desk',
  type: 'built_in_transfer_to_phone_number',
  execution_mode: 'sync',
  phone_number: '+14155550100',
};

/** The domain error a promise rejects with (fails the test when it resolves). */
async function refusal(t: Test, p: Promise<unknown>): Promise<DomainError | undefined> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof DomainError, 'refused with a DomainError');
  return err instanceof DomainError ? err : undefined;
}

t.setTimeout(300_000);

for (const db of DB_KINDS) {
  t.test(`resolveOutboundCall on ${db}`, { timeout: 180_000 }, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const client = api(server);
    const { ctx, orgId } = server;
    t.equal(
      (await client.put('/v1/agents/upsert', { name: 'sales', voice_id: 'grant', welcome_message: 'Hello from sales' }))
        .status,
      200,
    );
    t.equal((await client.put('/v1/agents/upsert', { name: 'idle' })).status, 200);
    t.equal((await client.post('/v1/agents/idle/disable')).status, 200);
    t.equal((await client.post('/v1/tools', transferTool)).status, 201);

    t.test('a call with an agent: the agent, its settings under what the config sends, the tools', async (t) => {
      const call = await resolveOutboundCall(
        ctx,
        orgId,
        { agent: 'sales', welcome_message: 'Hi', tools: ['to_desk'] },
        { dryRun: true },
      );
      t.same(call.project, { id: server.projectId, name: 'main' });
      t.match(call.agent, { orgId, agent: { name: 'sales', enabled: true }, config: { voice_id: 'grant' } });
      t.equal(call.config.voice_id, 'grant', "the agent's voice");
      t.equal(call.config.welcome_message, 'Hi', 'the config overrides the agent');
      t.same(
        call.tools.map((x) => x.name),
        ['to_desk'],
      );
    });

    t.test('a call without an agent: the defaults, in main', async (t) => {
      const call = await resolveOutboundCall(ctx, orgId, undefined, { dryRun: true });
      t.equal(call.agent, null);
      t.equal(call.project.name, 'main');
      t.equal(call.config.voice_id, 'sabrina', 'the outbound default voice');
    });

    t.test('refusals: kind and code', async (t) => {
      const cases: [string, Parameters<typeof resolveOutboundCall>[2], { dryRun: boolean }, Partial<DomainError>][] = [
        ['unknown project', { agent: 'sales', project: 'nope' }, { dryRun: true }, { kind: 'not_found' }],
        ['unknown agent', { agent: 'ghost' }, { dryRun: true }, { kind: 'not_found' }],
        ['disabled agent', { agent: 'idle' }, { dryRun: true }, { kind: 'conflict', code: 'agent_disabled' }],
        [
          'unknown voice',
          { voice_id: 'nobody' },
          { dryRun: true },
          { kind: 'invalid', paramErrors: { 'config.voice_id': "no voice 'nobody' (see GET /v1/voices)" } },
        ],
        [
          'unknown tool',
          { tools: ['to_desk', 'nope'] },
          { dryRun: true },
          { kind: 'invalid', paramErrors: { 'config.tools.1': "no tool 'nope' in project 'main'" } },
        ],
        [
          'a real call without a trunk',
          { agent: 'sales' },
          { dryRun: false },
          { kind: 'invalid', code: 'outbound_trunk_not_configured' },
        ],
        ['an agent is checked before the trunk', { agent: 'ghost' }, { dryRun: false }, { kind: 'not_found' }],
      ];
      for (const [what, config, opts, expected] of cases) {
        const err = await refusal(t, resolveOutboundCall(ctx, orgId, config, opts));
        t.match(err, expected, what);
      }
    });

    t.test('limit_reached at the project cap', async (t) => {
      await server.sql`update projects set max_active_conversations = 1 where id = ${server.projectId}`;
      const policy = { nodeId: 'node-test', ttlSec: 60, workspaceCap: 100 };
      t.equal((await admit(server.sql, policy, server.projectId, 'conv_busy')).admitted, true);
      const err = await refusal(t, resolveOutboundCall(ctx, orgId, { agent: 'sales' }, { dryRun: true }));
      t.match(err, { kind: 'limit_reached', code: 'concurrency_limit_reached', message: /limit of 1 concurrent/ });
      await server.sql`delete from conversation_leases`;
      t.ok(
        await resolveOutboundCall(ctx, orgId, { agent: 'sales' }, { dryRun: true }),
        'admitted again once the lease is gone',
      );
    });
  });
}

// The agent of an inbound call (src/domain/conversation-agent.ts agentForPhoneNumber), on both databases: the owner
// of the dialled number with what its conversations need (config, custom tools), its enabled flag and the number's
// own configuration endpoint; null for a number no agent has.
import t from 'tap';
import { agentForPhoneNumber } from '../../src/domain/conversation-agent.js';
import { api, DB_KINDS, startTestServer } from '../helpers/server.js';

const NUMBER = '+14155553001';
const ENDPOINT = { url: 'https://config.example.com/inbound', headers: { 'x-token': 'abc' } };
const lookupTool = {
  name: 'lookup_order',
  description: 'Looks up an order',
  type: 'custom_webhook',
  execution_mode: 'sync',
  endpoint_method: 'POST',
  endpoint_url: 'https://hooks.example.com/orders',
  parameters: [
    { type: 'string', name: 'order', description: 'Order number', is_required: true, location: 'request_body' },
  ],
};

t.setTimeout(300_000);

for (const db of DB_KINDS) {
  t.test(`agentForPhoneNumber on ${db}`, { timeout: 180_000 }, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const client = api(server);
    t.equal((await client.post('/v1/tools', lookupTool)).status, 201, 'tool created');
    const upsert = await client.put('/v1/agents/upsert', {
      name: 'support',
      voice_id: 'grant',
      tools: ['lookup_order'],
    });
    t.equal(upsert.status, 200, 'agent created');
    const agentId = upsert.body.agent.id as string;
    const assign = await client.patch('/v1/agents/support/phone-numbers', {
      phone_number: NUMBER,
      configuration_endpoint: ENDPOINT,
    });
    t.equal(assign.status, 200, 'number assigned with its endpoint');

    const found = await agentForPhoneNumber(server.sql, NUMBER);
    t.ok(found, 'the number finds its agent');
    t.match(found!.agent, {
      orgId: server.orgId,
      project: { id: server.projectId, name: 'main' },
      agent: { id: agentId, name: 'support', enabled: true },
      config: { voice_id: 'grant', tools: ['lookup_order'] },
    });
    t.same(
      found!.agent.tools.map((x) => x.name),
      ['lookup_order'],
      "the agent's custom tools, defined",
    );
    t.equal(found!.agent.tools[0]?.definition.endpoint_url, lookupTool.endpoint_url);
    t.equal(found!.enabled, true);
    t.same(found!.configurationEndpoint, { ...ENDPOINT, timeout_ms: 3000 }, "the number's own endpoint");

    t.equal((await client.post('/v1/agents/support/disable')).status, 200);
    const disabled = await agentForPhoneNumber(server.sql, NUMBER);
    t.equal(disabled?.enabled, false, 'a disabled agent is found, flagged disabled');
    t.equal(disabled?.agent.agent.enabled, false);

    t.equal(await agentForPhoneNumber(server.sql, '+14155553999'), null, 'a number no agent has: null');
  });
}

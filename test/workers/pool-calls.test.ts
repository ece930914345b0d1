// The worker pool's side of telephony with two real media workers: the least loaded worker is picked, and a call
// assigned to one counts in its load at once (before its next load notice), so the next call goes to the other.
import t from 'tap';
import { startRealtimeServer } from '../helpers/realtime.js';
import type { ResolvedAgent } from '../../src/domain/conversation-agent.js';

t.setTimeout(240_000);

t.test('least loaded worker, and an assigned call counts at once', async (t) => {
  const server = await startRealtimeServer({ workers: 2 });
  t.teardown(() => server.close());
  const first = server.pool.leastLoaded();
  t.ok(first === 0 || first === 1, 'a running worker');
  const agent: ResolvedAgent = {
    orgId: server.orgId,
    project: { id: server.projectId, name: 'main' },
    agent: { id: 'agent_x', name: 'x', enabled: true },
    config: {},
    tools: [],
  };
  server.pool.sendCall(first!, {
    type: 'call_assigned',
    callId: 'call_pool_test',
    conversationId: 'conv_pool_test',
    rtpPort: 47_998,
    remote: null,
    media: {
      codec: 'PCMU',
      payloadType: 0,
      clockRate: 8000,
      channels: 1,
      telephoneEventPayloadType: 101,
      ptimeMs: 20,
      direction: 'sendrecv',
    },
    agent,
    origin: 'telephony-inbound',
    callInfo: { from_phone_number: 'anonymous', to_phone_number: '+14155550100' },
    configurationEndpoint: null,
    overrides: null,
    listenOnly: false,
  });
  t.equal(server.pool.leastLoaded(), first === 0 ? 1 : 0, 'the next call goes to the other worker');
  server.pool.sendCall(first!, { type: 'call_hangup', callId: 'call_pool_test', reason: 'failed' });
});

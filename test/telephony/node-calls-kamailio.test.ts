// Phone calls through Kamailio's dispatcher in front of a node as a user runs it (real media workers, the echo
// engine, PostgreSQL): the 200 carries Kamailio's Record-Route, so the dialog's later requests go through the proxy
// both ways. A caller's INFO digit, hold and BYE reach Parley through Kamailio; Parley's own BYE (the conversation
// canceled through the API) goes to Kamailio, which loose-routes it to the caller. Both calls are saved.
import t from 'tap';
import { startKamailio } from '../sip/peers/peers.js';
import { until } from '../helpers/wait.js';
import { agentWithNumber } from './sip-node.js';
import { freeUdpPort, headerOf, runSipp, sippCompleted } from './sipp-scenario.js';
import { startPhoneNode, userTranscripts } from './phone-node.js';

t.setTimeout(300_000);

const OWN = '+14155550100';
const CALLER = '+14155550199';

t.test('SIPp -> Kamailio dispatcher -> a node', async (t) => {
  const node = await startPhoneNode();
  t.teardown(() => node.stop());
  await agentWithNumber(node.client, 'phone', OWN);
  const kamPort = await freeUdpPort();
  const kamailio = await startKamailio(kamPort, [`sip:127.0.0.1:${node.sipPort}`]);
  t.teardown(() => kamailio.stop());
  const viaKamailio = new RegExp(`127\\.0\\.0\\.1:${kamPort}`);

  t.test('the caller hangs up: INFO digit, hold and BYE follow the route set; the record is saved', async (t) => {
    const before = await node.conversationIds();
    const run = await runSipp({
      scenario: 'uac_hangs_up.xml',
      target: `127.0.0.1:${kamPort}`,
      service: OWN,
      keys: { caller: CALLER },
      timeoutMs: 60_000,
    });
    sippCompleted(t, run, 'the call completed through the proxy');
    const ok = run.received.find((m) => m.startsWith('SIP/2.0 200 ') && /CSeq:\s*1 INVITE/i.test(m)) ?? '';
    t.match(headerOf(ok, 'Record-Route'), viaKamailio, "the 200 carries Kamailio's Record-Route");
    t.match(
      kamailio.log,
      new RegExp(`INVITE sip:\\${OWN}@127\\.0\\.0\\.1:${kamPort} -> sip:127\\.0\\.0\\.1:${node.sipPort}`),
      'Kamailio dispatched the INVITE to the node',
    );
    const [id] = (await node.conversationIds()).filter((c) => !before.includes(c));
    t.ok(id, 'one new conversation');
    const record = await node.endedConversation(id!);
    t.equal(record.ended_by, 'user', "ended by the caller's BYE, which came through Kamailio");
    t.match(record.call_info, { from_phone_number: CALLER, to_phone_number: OWN });
    t.same(userTranscripts(record), ['DTMF 5'], 'the INFO digit, pending at the hang-up, is on the record');
  });

  t.test('Parley hangs up: its BYE goes through Kamailio to the caller; the record is saved', async (t) => {
    const before = await node.conversationIds();
    const caller = runSipp({
      scenario: 'uac_wait_bye.xml',
      target: `127.0.0.1:${kamPort}`,
      service: OWN,
      timeoutMs: 60_000,
    });
    let id: string | undefined;
    await until(
      async () => {
        id = (await node.conversationIds()).find((c) => !before.includes(c));
        return id !== undefined;
      },
      { what: "the call's record", timeoutMs: 20_000 },
    );
    t.equal((await node.client.post(`/v1/conversations/${id}/cancel`)).status, 200);
    const run = await caller;
    sippCompleted(t, run, "the caller got Parley's BYE");
    const bye = run.received.find((m) => m.startsWith('BYE ')) ?? '';
    t.match(headerOf(bye, 'Via'), viaKamailio, 'the BYE came through Kamailio (its Via on top)');
    const record = await node.endedConversation(id!);
    t.equal(record.ended_by, 'user_canceled');
    t.equal(record.call_info.telephony_call_sid, headerOf(bye, 'Call-ID'), 'the record names the call');
  });
});

// SIPp calls answered by the test agent through a Kamailio dispatcher that record-routes INVITEs:
// SIPp's uac hangs up through the proxy, and the agent's own BYE follows the route set back.
import t from 'tap';
import { serializeUri } from '../../../sip/message/uri.js';
import { FIXTURES_DIR, runSipp, startKamailio } from './peers.js';
import { TestAgent } from './test-agent.js';

const AGENT_PORT = 15210;
const KAMAILIO_PORT = 15211;
const CALLS = 10;
const FIXTURES = `${FIXTURES_DIR}sipp/`;

t.setTimeout(120_000);

t.test('SIPp -> Kamailio dispatcher -> test agent', async (t) => {
  const agent = await TestAgent.start({ port: AGENT_PORT });
  t.teardown(() => agent.close());
  const kamailio = await startKamailio(KAMAILIO_PORT, [`sip:127.0.0.1:${AGENT_PORT}`]);
  t.teardown(() => kamailio.stop());

  const uac = await runSipp(
    [
      '-sn',
      'uac',
      '-i',
      '127.0.0.1',
      '-p',
      '15212',
      '-mp',
      '30840',
      `127.0.0.1:${KAMAILIO_PORT}`,
      '-r',
      '10',
      '-m',
      `${CALLS}`,
      '-d',
      '100',
      '-timeout',
      '30s',
    ],
    { timeoutMs: 40_000 },
  );
  if (uac.code !== 0) console.error(uac.stdout.slice(-1500), uac.errors.slice(-1000), kamailio.log.slice(-1500));
  t.equal(uac.code, 0, 'SIPp uac through Kamailio exited 0');
  t.equal(Number(uac.stats['SuccessfulCall(C)']), CALLS, `${CALLS} successful calls`);
  t.equal(Number(uac.stats['FailedCall(C)']), 0);
  await agent.waitFor(() => agent.record.ended === CALLS, 5000, 'BYEs through Kamailio');
  const routes = agent.dialogs.map((d) => d.data.routeSet.map((r) => serializeUri(r.uri)).join(','));
  t.ok(
    routes.every((r) => r.includes(`127.0.0.1:${KAMAILIO_PORT}`) && r.includes('lr')),
    `every dialog's route set is Kamailio's Record-Route: ${routes[0]}`,
  );

  // The agent hangs up: its BYE goes to Kamailio (first route) and is loose-routed to SIPp.
  const before = agent.dialogs.length;
  const hangups: Promise<void>[] = [];
  agent.ua.on('dialog', (d) => {
    hangups.push(new Promise<void>((resolve, reject) => setTimeout(() => d.bye().then(resolve, reject), 100)));
  });
  const waitBye = await runSipp(
    [
      '-sf',
      `${FIXTURES}uac_wait_bye.xml`,
      '-i',
      '127.0.0.1',
      '-p',
      '15213',
      '-mp',
      '30850',
      `127.0.0.1:${KAMAILIO_PORT}`,
      '-r',
      '10',
      '-m',
      '5',
      '-timeout',
      '30s',
    ],
    { timeoutMs: 40_000 },
  );
  await Promise.all(hangups);
  if (waitBye.code !== 0)
    console.error(waitBye.stdout.slice(-1500), waitBye.errors.slice(-1000), kamailio.log.slice(-1500));
  t.equal(waitBye.code, 0, "SIPp got the agent's BYE through Kamailio for every call");
  t.equal(Number(waitBye.stats['SuccessfulCall(C)']), 5);
  t.equal(agent.dialogs.length - before, 5);
  t.same(agent.record.endReasons.slice(-5), Array(5).fill('bye_sent'));
  t.match(
    kamailio.log,
    /INVITE sip:service@127\.0\.0\.1:15211 -> sip:127\.0\.0\.1:15210/,
    'Kamailio dispatched the INVITEs to the agent',
  );
});

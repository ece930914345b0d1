// baresip, a real user agent, against the test agent: it calls and hangs up; the agent calls it;
// it sends RFC 4733 DTMF (sndcode) and a REFER (transfer) that the agent accepts with 202 and a
// NOTIFY sipfrag; the agent REFERs it to a third baresip, which it then calls.
import t from 'tap';
import { startBaresip } from './peers.js';
import { TestAgent } from './test-agent.js';

const AGENT_PORT = 15220;
const AGENT_RTP = 30400;

t.setTimeout(120_000);

t.test('baresip and the test agent', async (t) => {
  const agent = await TestAgent.start({ port: AGENT_PORT, rtpPort: AGENT_RTP, listenRtp: true });
  t.teardown(() => agent.close());
  const b1 = await startBaresip({ sipPort: 15221, ctrlPort: 15400, rtpPorts: '30500-30599', user: 'b1' });
  t.teardown(() => {
    b1.ctl.close();
    return b1.peer.stop();
  });

  await t.test('baresip calls the agent and hangs up', async (t) => {
    const since = b1.ctl.events.length;
    await b1.ctl.command('dial', `sip:agent@127.0.0.1:${AGENT_PORT}`);
    await b1.ctl.waitEvent('CALL_ESTABLISHED', 10_000, since);
    await agent.waitFor(() => agent.record.answered === 1, 5000, 'the agent answered');
    t.equal(agent.dialogs[0].media?.codec.name, 'PCMU', 'baresip offered PCMU first');
    await b1.ctl.command('hangup');
    await agent.waitFor(() => agent.record.ended === 1, 5000, 'BYE from baresip');
    t.same(agent.record.endReasons, ['bye_received']);
  });

  await t.test('the agent calls baresip and hangs up', async (t) => {
    const since = b1.ctl.events.length;
    const dialog = await agent.call('sip:b1@127.0.0.1:15221');
    await b1.ctl.waitEvent('CALL_ESTABLISHED', 10_000, since);
    t.equal(
      dialog.media?.remotePort !== undefined && dialog.media.remotePort >= 30500 && dialog.media.remotePort <= 30599,
      true,
      'baresip answered with its RTP port',
    );
    await dialog.bye();
    await b1.ctl.waitEvent('CALL_CLOSED', 10_000, since);
    t.equal(dialog.state, 'terminated');
  });

  await t.test('baresip sends RFC 4733 DTMF and a REFER; the agent answers 202 and NOTIFYs', async (t) => {
    const since = b1.ctl.events.length;
    const answeredBefore = agent.record.answered;
    await b1.ctl.command('dial', `sip:agent@127.0.0.1:${AGENT_PORT}`);
    await b1.ctl.waitEvent('CALL_ESTABLISHED', 10_000, since);
    await agent.waitFor(() => agent.record.answered === answeredBefore + 1, 5000, 'the agent answered');
    await new Promise((r) => setTimeout(r, 300)); // baresip's audio stream under way before its first event
    await b1.ctl.command('sndcode', '5');
    await agent.waitFor(() => agent.record.dtmfRtp.length >= 1, 5000, 'the first RFC 4733 digit');
    await b1.ctl.command('sndcode', '#');
    await agent.waitFor(() => agent.record.dtmfRtp.length >= 2, 5000, 'two RFC 4733 digits');
    t.same(agent.record.dtmfRtp, ['5', '#'], 'digits received as RFC 4733 events');

    const notified: number[] = [];
    agent.onRefer = (_target, notify) => {
      notify(180, 'Ringing')
        .then(() => {
          notified.push(180);
          return notify(200, 'OK');
        })
        .then(
          () => notified.push(200),
          (err: Error) => t.fail(err.message),
        );
    };
    await b1.ctl.command('transfer', 'sip:someone@127.0.0.1:15299');
    await agent.waitFor(() => notified.length === 2, 5000, 'NOTIFYs accepted by baresip');
    t.same(agent.record.refers, ['sip:someone@127.0.0.1:15299'], 'REFER with the Refer-To target');
    t.same(notified, [180, 200], 'baresip answered 200 to every NOTIFY of the implicit subscription');
    await b1.ctl.command('hangup');
    await agent.waitFor(() => agent.dialogs.at(-1)!.state === 'terminated', 5000, 'call ended');
  });

  await t.test('the agent REFERs baresip to a third baresip, which it calls', async (t) => {
    const b3 = await startBaresip({ sipPort: 15223, ctrlPort: 15402, rtpPorts: '30700-30799', user: 'b3' });
    t.teardown(() => {
      b3.ctl.close();
      return b3.peer.stop();
    });
    const since1 = b1.ctl.events.length;
    const dialog = await agent.call('sip:b1@127.0.0.1:15221');
    await b1.ctl.waitEvent('CALL_ESTABLISHED', 10_000, since1);
    const notifies: Array<number | undefined> = [];
    dialog.on('notify', (e) => notifies.push(e.sipfrag?.status));
    const res = await dialog.refer('sip:b3@127.0.0.1:15223', { referredBy: '<sip:parley@127.0.0.1>' });
    t.equal(res.status, 202, 'baresip accepted the REFER');
    await b3.ctl.waitEvent('CALL_ESTABLISHED', 10_000, 0);
    await agent.waitFor(() => notifies.includes(200), 10_000, 'NOTIFY with SIP/2.0 200 OK');
    t.ok(notifies.length >= 1 && notifies.at(-1) === 200, `sipfrag progress ${notifies.join(', ')} ends in 200`);
    await b3.ctl.command('hangup');
    if (dialog.state !== 'terminated') await dialog.bye().catch(() => undefined);
  });
});

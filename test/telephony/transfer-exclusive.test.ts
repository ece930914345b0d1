// One transfer of a call at a time: the agent's phone transfer and a REFER from the peer exclude each other.
// - while the agent's bridged transfer runs, the caller (baresip) transfers the call by REFER: 491 Request Pending,
//   nothing is dialled for it, and the agent's bridge is what the record keeps;
// - while a REFER from the peer is carried out, the agent's transfer request fails at once, and the peer's transfer
//   is left in place.
import t from 'tap';
import { createLogger } from '../../src/log.js';
import { CallTransfers, type CallTransfersOptions } from '../../src/telephony/transfer.js';
import { SipCall } from '../../src/telephony/sip-call.js';
import type { CallControl } from '../../src/telephony/call-control.js';
import type { CallMedia, CallMessage } from '../../src/workers/worker-protocol.js';
import { until } from '../helpers/wait.js';
import { tempDir } from '../sip/peers/peers.js';
import {
  AGENT_NUMBER,
  CALLER_NUMBER,
  startBaresipPeer,
  startTransferNode,
  TARGET_NUMBER,
  toneWav,
  transferCall,
} from './transfer-node.js';

t.setTimeout(180_000);

t.test("a REFER from the caller while the agent's bridged transfer runs: 491", async (t) => {
  const dir = tempDir('transfer-exclusive');
  const silent = toneWav(dir, 'silence.wav', 0, 60);
  const b = await startBaresipPeer(TARGET_NUMBER, silent);
  t.teardown(() => b.stop());
  const a = await startBaresipPeer(CALLER_NUMBER, silent);
  t.teardown(() => a.stop());
  const n = await startTransferNode({ allowRefer: true, targetPort: b.sipPort, tool: { keep_listening: true } });
  t.teardown(() => n.close());

  await a.ctl.command('dial', `sip:${AGENT_NUMBER}@127.0.0.1:${n.sipPort}`);
  await b.ctl.waitEvent('CALL_ESTABLISHED', 30_000);
  await n.node.waitFor(/"msg":"transfer bridged"/);
  // RFC 3515: the caller asks Parley to transfer the call elsewhere, in the call's dialog.
  await a.ctl.command('transfer', `sip:+15550002222@127.0.0.1:${n.sipPort}`);
  await n.node.waitFor(/"status":491[^\n]*"msg":"REFER refused"/);
  t.pass('the REFER was refused with 491');
  t.notMatch(n.node.output(), /"msg":"REFER accepted: calling the target"/, 'nothing was dialled for it');
  // baresip ends its call when its transfer is refused: the agent's bridge is what the record shows.
  const conv = await n.endedConversation();
  t.equal(conv.metadata?.sip_refers, undefined, 'no peer transfer on the record');
  const body = transferCall(conv)?.response_body;
  t.match(
    body,
    { outcome: 'transferred', method: 'bridge', phone_number: TARGET_NUMBER, ended_by_party: 'caller' },
    JSON.stringify(body),
  );
});

t.test("the agent's transfer request while the peer's REFER is carried out: failed at once", async (t) => {
  const sent: CallMessage[] = [];
  const control = { transferListener: null, sendToWorker: (_call: SipCall, msg: CallMessage) => sent.push(msg) };
  const transfers = new CallTransfers({
    control: control as unknown as CallControl,
  } as unknown as CallTransfersOptions);
  const call = new SipCall({
    callId: 'call_1',
    conversationId: 'conv_1',
    orgId: 'org_1',
    projectId: 'proj_1',
    origin: 'telephony-inbound',
    log: createLogger('silent'),
  });
  call.transferring = 'peer';
  const request = {
    phoneNumber: TARGET_NUMBER,
    dtmf: null,
    keepListening: true,
    useAgentPhoneNumber: true,
    postTransferMessage: null,
    onNoAnswer: 'return_to_assistant' as const,
    detectVoicemail: false,
  };
  transfers.event(call, { kind: 'request', transferId: 7, request, callerId: null, agentNumber: null });
  t.same(
    sent,
    [
      {
        type: 'call_transfer',
        callId: 'call_1',
        command: {
          kind: 'result',
          transferId: 7,
          result: {
            outcome: 'failed',
            phone_number: TARGET_NUMBER,
            reason: 'the other party is transferring the call',
            attempts: 0,
          },
        },
      },
    ],
    'the worker is told the transfer failed, and nothing else happens',
  );
  t.equal(call.transferring, 'peer', "the peer's transfer is left in place");

  call.transferring = null;
  sent.length = 0;
  // With none under way the agent's request is taken and marks the call (a peer's REFER now gets 491) until it is over.
  const released: number[] = [];
  const bridging = new CallTransfers({
    control: control as unknown as CallControl,
    ports: { allocate: () => 40_000, release: (port: number) => released.push(port) },
    outboundTrunk: {
      name: 'carrier',
      inbound: null,
      outbound: { uri: 'sip:127.0.0.1:5999', transport: null, auth: null, caller_id: null },
    },
  } as unknown as CallTransfersOptions);
  call.media = { codec: 'PCMU' } as CallMedia;
  bridging.event(call, { kind: 'request', transferId: 8, request, callerId: null, agentNumber: null });
  t.equal(call.transferring, 'agent', "the agent's transfer marks the call");
  t.match(sent, [{ command: { kind: 'open_leg', transferId: 8, rtpPort: 40_000 } }], 'it asks for the new leg');
  bridging.event(call, { kind: 'leg_ready', transferId: 8, ok: false, error: 'no ports' });
  await until(() => sent.length === 2, { what: 'the failed result' });
  t.match(sent[1], { command: { kind: 'result', result: { outcome: 'failed' } } });
  t.equal(call.transferring, 'agent', 'still marked until the worker let the leg go');
  bridging.event(call, { kind: 'leg_closed', transferId: 8 });
  t.equal(call.transferring, null, 'over: the call may be transferred again');
  t.same(released, [40_000], "the leg's ports freed");
});

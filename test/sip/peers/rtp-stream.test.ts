// SIPp with media against the test agent: a call whose caller streams real A-law speech (rtp_stream) and then
// replays SIPp's own RFC 4733 capture of the digit 5 (test/fixtures/sipp/uac_rtpstream_dtmf.xml). The capture
// goes out from another source port than the SDP offered; the agent takes the digit all the same.
import t from 'tap';
import { FIXTURES_DIR, runSipp, sippMediaDir } from './peers.js';
import { TestAgent } from './test-agent.js';

const AGENT_PORT = 15240;
const AGENT_RTP = 30880;
const SIPP_PORT = 15241;
const SIPP_MEDIA = 30890;
/** The speech streamed is 1.4 s: 70 packets of 20 ms; some slack for a loaded machine's losses on loopback. */
const MIN_SPEECH_PACKETS = 50;

t.setTimeout(60_000);

t.test('SIPp streams speech and an RFC 4733 digit to the agent, then hangs up', async (t) => {
  const agent = await TestAgent.start({ port: AGENT_PORT, rtpPort: AGENT_RTP, listenRtp: true });
  t.teardown(() => agent.close());
  const r = await runSipp(
    [
      '-sf',
      `${FIXTURES_DIR}sipp/uac_rtpstream_dtmf.xml`,
      '-i',
      '127.0.0.1',
      '-p',
      `${SIPP_PORT}`,
      '-mp',
      `${SIPP_MEDIA}`,
      `127.0.0.1:${AGENT_PORT}`,
      '-m',
      '1',
      '-timeout',
      '30s',
    ],
    { cwd: sippMediaDir(), timeoutMs: 40_000 },
  );
  if (r.code !== 0) console.error(r.stdout.slice(-1500), r.errors.slice(-1500));
  t.equal(r.code, 0, 'SIPp completed the call');
  t.equal(Number(r.stats['SuccessfulCall(C)']), 1);
  await agent.waitFor(() => agent.record.ended === 1, 5000, 'the BYE');
  t.equal(agent.dialogs[0].media?.codec.name, 'PCMA', 'the agent answered the PCMA offer with PCMA');
  t.ok(
    agent.record.audioPackets >= MIN_SPEECH_PACKETS,
    `the speech arrived (${agent.record.audioPackets} G.711 packets)`,
  );
  t.same(agent.record.dtmfRtp, ['5'], 'the digit of the capture, once');
});

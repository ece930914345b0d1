// SIPp's built-in uac and uas scenarios against the test agent, both ways, over UDP and TCP:
// 10 calls each, all successful, no retransmission and no unexpected message.
import t from 'tap';
import { runSipp, startSipp, tempDir } from './peers.js';
import { TestAgent } from './test-agent.js';

const AGENT_PORT = 15200;
const CALLS = 10;

t.setTimeout(120_000);

function expectClean(
  t: { equal: (...args: any[]) => boolean },
  r: Awaited<ReturnType<typeof runSipp>>,
  calls: number,
): void {
  if (r.code !== 0) console.error(r.stdout.slice(-1500), r.errors.slice(-1500));
  t.equal(r.code, 0, 'sipp exit status 0');
  t.equal(Number(r.stats['SuccessfulCall(C)']), calls, `${calls} successful calls`);
  t.equal(Number(r.stats['FailedCall(C)']), 0, 'no failed call');
  t.equal(Number(r.stats['Retransmissions(C)']), 0, 'no retransmission');
  t.equal(Number(r.stats['FailedUnexpectedMessage(C)']), 0, 'no unexpected message');
  t.equal(Number(r.stats['OutOfCallMsgs(C)']), 0, 'no out-of-call message');
}

t.test('SIPp uac calls the agent', async (t) => {
  const agent = await TestAgent.start({ port: AGENT_PORT });
  t.teardown(() => agent.close());
  for (const [transport, flag, port, mediaPort] of [
    ['UDP', 'u1', 15201, 30800],
    ['TCP', 't1', 15202, 30810],
  ] as const) {
    const before = agent.record.ended;
    const r = await runSipp(
      [
        '-sn',
        'uac',
        '-i',
        '127.0.0.1',
        '-p',
        `${port}`,
        '-mp',
        `${mediaPort}`,
        `127.0.0.1:${AGENT_PORT}`,
        '-t',
        flag,
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
    t.test(`over ${transport}`, async (t) => expectClean(t, r, CALLS));
    await agent.waitFor(() => agent.record.ended - before === CALLS, 5000, `${CALLS} BYEs over ${transport}`);
    t.same(
      agent.record.endReasons.slice(before),
      Array(CALLS).fill('bye_received'),
      `SIPp hung up every call over ${transport}`,
    );
  }
});

t.test('the agent calls SIPp uas', async (t) => {
  const agent = await TestAgent.start({ port: AGENT_PORT + 3 });
  t.teardown(() => agent.close());
  for (const [transport, flag, port, uriParam, mediaPort] of [
    ['UDP', 'u1', 15204, '', 30820],
    ['TCP', 't1', 15205, ';transport=tcp', 30830],
  ] as const) {
    const cwd = tempDir('sipp-uas');
    const sipp = await startSipp(
      ['-sn', 'uas', '-i', '127.0.0.1', '-p', `${port}`, '-mp', `${mediaPort}`, '-t', flag, '-m', `${CALLS}`],
      cwd,
    );
    t.teardown(() => sipp.stop());
    for (let i = 0; i < CALLS; i++) {
      const dialog = await agent.call(`sip:service@127.0.0.1:${port}${uriParam}`);
      t.equal(dialog.media?.codec.name, 'PCMU', `call ${i + 1} over ${transport} negotiated PCMU`);
      await new Promise((r) => setTimeout(r, 20));
      await dialog.bye();
    }
    const code = await sipp.exitedWithin(10_000);
    if (code !== 0) console.error(sipp.log.slice(-1500), sipp.errors.slice(-1500));
    t.equal(code, 0, `SIPp uas over ${transport} saw ${CALLS} complete calls and exited 0`);
    const stats = sipp.stats();
    const stat = (n: string) => Number(stats[n]);
    t.equal(stat('SuccessfulCall(C)'), CALLS, `SIPp uas counted ${CALLS} successful calls over ${transport}`);
    t.equal(stat('Retransmissions(C)'), 0, 'SIPp uas retransmitted nothing');
    t.equal(stat('FailedCall(C)'), 0);
  }
});

// Digest through a challenging peer: a SIPp callee that answers each INVITE with 401 and checks the
// Authorization of the retried INVITE (RFC 3261 22.2) with its own digest code (verifyauth).
import t from 'tap';
import { DigestServer, SipError } from '../../../sip/index.js';
import { FIXTURES_DIR, runSipp, startSipp, tempDir } from './peers.js';
import { TestAgent } from './test-agent.js';

const AGENT_PORT = 15230;
const SIPP_PORT = 15231;
const FIXTURES = `${FIXTURES_DIR}sipp/`;

t.setTimeout(60_000);

t.test(
  'calls through a 401-challenging SIPp callee succeed with the right password, fail with a wrong one',
  async (t) => {
    const agent = await TestAgent.start({ port: AGENT_PORT });
    t.teardown(() => agent.close());
    const cwd = tempDir('sipp-digest');
    const sipp = await startSipp(
      [
        '-sf',
        `${FIXTURES}uas_digest_challenge.xml`,
        '-i',
        '127.0.0.1',
        '-p',
        `${SIPP_PORT}`,
        '-mp',
        '30860',
        '-m',
        '4',
      ],
      cwd,
    );
    t.teardown(() => sipp.stop());
    for (let i = 0; i < 3; i++) {
      const dialog = await agent.call(`sip:service@127.0.0.1:${SIPP_PORT}`, {
        auth: { username: 'parley', password: 's3cret' },
      });
      t.equal(dialog.state, 'confirmed', `call ${i + 1} answered after the challenge`);
      await dialog.bye();
    }
    const err = await agent
      .call(`sip:service@127.0.0.1:${SIPP_PORT}`, { auth: { username: 'parley', password: 'wrong' } })
      .then(
        () => null,
        (e: unknown) => e,
      );
    t.ok(err instanceof SipError, 'a wrong password is a SipError');
    t.equal((err as SipError).status, 403, 'SIPp refused the wrong digest with 403');
    const code = await sipp.exitedWithin(15_000);
    const stats = sipp.stats();
    t.equal(Number(stats['SuccessfulCall(C)']), 3, 'SIPp verified 3 digests');
    t.equal(Number(stats['FailedCall(C)']), 1, 'and failed the call with the wrong one');
    t.not(code, 'timeout', 'SIPp finished');
  },
);

t.test("the agent challenges SIPp callers (DigestServer) and accepts SIPp's own digest", async (t) => {
  const auth = new DigestServer({
    realm: 'parley.test',
    algorithms: ['MD5'],
    lookup: (u) => (u === 'parley' ? { password: 's3cret' } : null),
  });
  const agent = await TestAgent.start({ port: AGENT_PORT + 2, auth });
  t.teardown(() => agent.close());
  const r = await runSipp(
    [
      '-sf',
      `${FIXTURES}uac_digest.xml`,
      '-i',
      '127.0.0.1',
      '-p',
      `${SIPP_PORT + 2}`,
      '-mp',
      '30865',
      `127.0.0.1:${AGENT_PORT + 2}`,
      '-r',
      '10',
      '-m',
      '5',
      '-timeout',
      '30s',
    ],
    { timeoutMs: 40_000 },
  );
  if (r.code !== 0) console.error(r.stdout.slice(-1500), r.errors.slice(-1000));
  t.equal(r.code, 0, 'SIPp completed every authenticated call');
  t.equal(Number(r.stats['SuccessfulCall(C)']), 5);
  t.equal(agent.record.answered, 5, 'the agent answered only after verifying the digest');
  await agent.waitFor(() => agent.record.ended === 5, 5000, 'BYEs');
});

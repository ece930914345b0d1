// Inbound rollout: the edges 0 and 1 and the share of calls kept over many calls.
import t from 'tap';
import { decideRollout } from '../../src/telephony/rollout.js';

const FORWARD = '+14155550199';

t.test('rollout 1 keeps every call, rollout 0 forwards every call, whatever the draw', async (t) => {
  for (const draw of [0, 0.25, 0.5, 0.999999]) {
    t.same(
      decideRollout({ inbound_rollout: 1, inbound_rollout_forward_phone_number: null }, () => draw),
      { route: 'agent' },
    );
    t.same(
      decideRollout({ inbound_rollout: 0, inbound_rollout_forward_phone_number: FORWARD }, () => draw),
      { route: 'forward', phoneNumber: FORWARD },
    );
  }
});

t.test('the draw decides against the rollout share', async (t) => {
  const agent = { inbound_rollout: 0.3, inbound_rollout_forward_phone_number: FORWARD };
  t.same(
    decideRollout(agent, () => 0.29),
    { route: 'agent' },
  );
  t.same(
    decideRollout(agent, () => 0.3),
    { route: 'forward', phoneNumber: FORWARD },
  );
  t.same(
    decideRollout({ inbound_rollout: 0.3, inbound_rollout_forward_phone_number: null }, () => 0.9),
    { route: 'agent' },
    'no forward number: stays',
  );
});

t.test('over many calls the kept share is the rollout', async (t) => {
  const CALLS = 20_000;
  for (const share of [0.1, 0.5, 0.9]) {
    let kept = 0;
    for (let i = 0; i < CALLS; i++)
      if (decideRollout({ inbound_rollout: share, inbound_rollout_forward_phone_number: FORWARD }).route === 'agent')
        kept++;
    // Binomial standard deviation at most sqrt(20000 * 0.25) ~ 71 calls; 0.02 is over five of them.
    t.ok(Math.abs(kept / CALLS - share) < 0.02, `rollout ${share}: kept ${kept} of ${CALLS}`);
  }
});

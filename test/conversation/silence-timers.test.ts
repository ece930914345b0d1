// The inactivity timers as one group (src/conversation/silence-timers.ts): the idle timeout slides with client
// activity; poke and silence limit count from the moment nobody speaks and stop when the user starts; cancel clears
// all three; a disabled group never fires; retime (a transfer to another agent) restarts what counts from now with
// the new durations. Manual clock.
import t from 'tap';
import { SilenceTimers } from '../../src/conversation/silence-timers.js';
import { ManualTimers } from './harness.js';

function group(settings: {
  websocket_timeout_sec: number;
  no_input_poke_sec: number | null;
  no_input_end_conversation_sec: number;
}) {
  const timers = new ManualTimers();
  const fired: string[] = [];
  const at = (what: string) => () => void fired.push(`${what}@${timers.now() - start}`);
  const start = timers.now();
  const g = new SilenceTimers(timers, settings, {
    clientIdle: at('idle'),
    poke: at('poke'),
    silenceLimit: at('limit'),
  });
  return { timers, fired, g };
}

t.test('poke and limit count from silence and stop when the user speaks; idle slides with activity', async (t) => {
  const { timers, fired, g } = group({
    websocket_timeout_sec: 20,
    no_input_poke_sec: 3,
    no_input_end_conversation_sec: 5,
  });
  g.clientActive();
  g.nobodySpeaking();
  timers.advance(2000);
  g.userSpeaking();
  timers.advance(4000);
  t.same(fired, [], 'the user spoke before the poke: neither poke nor limit');
  g.clientActive();
  g.nobodySpeaking();
  timers.advance(5000);
  t.same(fired, ['poke@9000', 'limit@11000'], 'both count from the new silence (6 s)');
  g.clientActive();
  timers.advance(19_999);
  t.same(
    fired.filter((f) => f.startsWith('idle')),
    [],
    'idle slid to 20 s after the last activity (11 s)',
  );
  timers.advance(1);
  t.same(fired.at(-1), 'idle@31000');
});

t.test('cancel clears every timer; a disabled group never fires', async (t) => {
  const { timers, fired, g } = group({
    websocket_timeout_sec: 10,
    no_input_poke_sec: 3,
    no_input_end_conversation_sec: 5,
  });
  g.clientActive();
  g.nobodySpeaking();
  g.cancel();
  t.equal(timers.pending, 0, 'nothing pending');
  timers.advance(60_000);
  t.same(fired, []);

  const off = new ManualTimers();
  const disabled = SilenceTimers.disabled(off);
  disabled.clientActive();
  disabled.nobodySpeaking();
  t.equal(off.pending, 0, 'a disabled group arms nothing');

  const noPoke = group({ websocket_timeout_sec: 10, no_input_poke_sec: null, no_input_end_conversation_sec: 5 });
  noPoke.g.nobodySpeaking();
  noPoke.timers.advance(5000);
  t.same(noPoke.fired, ['limit@5000'], 'no_input_poke_sec null: no poke, the limit still ends it');
});

t.test(
  'retime: what is counting starts over from now with the new durations; what fired or was cancelled stays so',
  async (t) => {
    const { timers, fired, g } = group({
      websocket_timeout_sec: 20,
      no_input_poke_sec: 3,
      no_input_end_conversation_sec: 10,
    });
    g.clientActive();
    g.nobodySpeaking();
    timers.advance(4000);
    t.same(fired, ['poke@3000'], 'the old poke fired');
    g.retime({ websocket_timeout_sec: 6, no_input_poke_sec: 2, no_input_end_conversation_sec: 5 });
    timers.advance(4999);
    t.same(
      fired,
      ['poke@3000'],
      'no second poke in the same silence; the limit not yet 5 s after the retime (nor at the old 10 s)',
    );
    timers.advance(1);
    t.same(fired, ['poke@3000', 'limit@9000'], 'the limit 5 s after the retime (4 s), not 5 s after the silence began');
    timers.advance(1000);
    t.same(fired.at(-1), 'idle@10000', 'idle 6 s after the retime');

    const shorter = group({ websocket_timeout_sec: 60, no_input_poke_sec: null, no_input_end_conversation_sec: 10 });
    shorter.g.nobodySpeaking();
    shorter.timers.advance(8000);
    shorter.g.retime({ websocket_timeout_sec: 60, no_input_poke_sec: 3, no_input_end_conversation_sec: 4 });
    t.same(shorter.fired, [], 'a shorter limit already past since the silence began does not fire at the retime');
    shorter.timers.advance(4000);
    t.same(
      shorter.fired,
      ['poke@11000', 'limit@12000'],
      'a poke the old settings disabled counts from the retime, in the ongoing silence',
    );
    t.equal(
      shorter.timers.pending,
      0,
      'the idle timer was never started (no client activity): the retime did not start it',
    );

    const spoke = group({ websocket_timeout_sec: 60, no_input_poke_sec: 3, no_input_end_conversation_sec: 5 });
    spoke.g.nobodySpeaking();
    spoke.g.userSpeaking();
    spoke.g.retime({ websocket_timeout_sec: 60, no_input_poke_sec: 1, no_input_end_conversation_sec: 2 });
    t.equal(spoke.timers.pending, 0, 'the user speaks: poke and limit stay off');
    spoke.g.clientActive();
    spoke.g.cancel();
    spoke.g.retime({ websocket_timeout_sec: 1, no_input_poke_sec: 1, no_input_end_conversation_sec: 1 });
    t.equal(spoke.timers.pending, 0, 'after cancel (the conversation ends) nothing starts');

    const off = group({ websocket_timeout_sec: 60, no_input_poke_sec: 3, no_input_end_conversation_sec: 5 });
    off.g.clientActive();
    off.g.nobodySpeaking();
    off.g.retime({ websocket_timeout_sec: 60, no_input_poke_sec: null, no_input_end_conversation_sec: 5 });
    off.timers.advance(5000);
    t.same(off.fired, ['limit@5000'], 'a poke the new settings disable stops');
  },
);

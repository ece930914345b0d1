// The inactivity timers as one group (src/conversation/silence-timers.ts): the idle timeout slides with client
// activity; poke and silence limit count from the moment nobody speaks and stop when the user starts; cancel clears
// all three; a disabled group never fires. Manual clock.
import t from 'tap';
import { SilenceTimers } from '../../src/conversation/silence-timers.js';
import { ManualTimers } from './harness.js';

function group(settings: { websocket_timeout_sec: number; no_input_poke_sec: number | null; no_input_end_conversation_sec: number }) {
  const timers = new ManualTimers();
  const fired: string[] = [];
  const at = (what: string) => () => void fired.push(`${what}@${timers.now() - start}`);
  const start = timers.now();
  const g = new SilenceTimers(timers, settings, { clientIdle: at('idle'), poke: at('poke'), silenceLimit: at('limit') });
  return { timers, fired, g };
}

t.test('poke and limit count from silence and stop when the user speaks; idle slides with activity', async (t) => {
  const { timers, fired, g } = group({ websocket_timeout_sec: 20, no_input_poke_sec: 3, no_input_end_conversation_sec: 5 });
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
  t.same(fired.filter((f) => f.startsWith('idle')), [], 'idle slid to 20 s after the last activity (11 s)');
  timers.advance(1);
  t.same(fired.at(-1), 'idle@31000');
});

t.test('cancel clears every timer; a disabled group never fires', async (t) => {
  const { timers, fired, g } = group({ websocket_timeout_sec: 10, no_input_poke_sec: 3, no_input_end_conversation_sec: 5 });
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

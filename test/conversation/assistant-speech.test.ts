// AssistantSpeech keeps a bounded set of utterances: a long call's responses do not pile up (memory, and the
// per-frame speaking() scan), while late events for a response that just ended still find it.
import t from 'tap';
import { AssistantSpeech, MAX_TRACKED_UTTERANCES, type SpeechHost } from '../../src/conversation/assistant-speech.js';
import type { ConversationTimers } from '../../src/conversation/host.js';

function speech(): AssistantSpeech {
  const host: SpeechHost = {
    emit: () => {},
    session: () => null,
    audioSpeed: () => 1,
    voiceId: () => 'alloy',
    sendFrame: () => true,
    started: () => {},
    interrupted: () => {},
    stopped: () => {},
    finished: () => {},
  };
  const timers: ConversationTimers = { now: () => 0, set: () => 0, clear: () => {} };
  return new AssistantSpeech(host, timers);
}

t.test('ended utterances beyond the bound are forgotten, oldest first; recent ones are still found', async (t) => {
  const s = speech();
  const responses = 10 * MAX_TRACKED_UTTERANCES;
  for (let i = 0; i < responses; i++) {
    s.track(`r${i}`, 'reply', true);
    s.silence(`r${i}`); // ended, unheard
  }
  t.equal(s.trackedCount, MAX_TRACKED_UTTERANCES, `${responses} responses, ${MAX_TRACKED_UTTERANCES} tracked`);
  t.equal(s.find('r0'), undefined, 'the oldest is gone');
  const last = s.find(`r${responses - 1}`);
  t.ok(last && !last.isActive, 'the newest ended one is still found (its late events are dropped, not replayed)');
  t.equal(
    s.find(`r${responses - MAX_TRACKED_UTTERANCES}`)?.responseId,
    `r${responses - MAX_TRACKED_UTTERANCES}`,
    'the oldest kept',
  );
});

t.test('active utterances and ones with a tool call running are never forgotten', async (t) => {
  const s = speech();
  const playing = s.track('playing', 'reply', true);
  const withTool = s.track('tool', 'reply', true);
  s.silence('tool');
  let settle!: () => void;
  const running = new Promise<void>((r) => (settle = r));
  withTool.pendingTools.add(running);
  for (let i = 0; i < 3 * MAX_TRACKED_UTTERANCES; i++) {
    s.track(`r${i}`, 'reply', true);
    s.silence(`r${i}`);
  }
  t.equal(s.find('playing'), playing, 'a queued utterance stays');
  t.equal(s.speaking(), playing, 'and is still the one speaking');
  t.equal(s.find('tool'), withTool, 'an ended one with a tool call running stays');
  t.equal(s.trackedCount, MAX_TRACKED_UTTERANCES, 'the rest make way for them');
  settle();
  withTool.pendingTools.delete(running);
  s.track('next', 'reply', true);
  t.equal(s.find('tool'), undefined, 'once its tool call is done it is forgotten like the others');
});

// Assistant speech that arrives before the playout exists: the EngineHooks contract lets an engine call its hooks
// while open() is still under way (openai-realtime forwards a response the server starts in the same read as its
// session.updated), before the conversation attaches the playout. Such an utterance takes its audio_speed from the
// conversation (SpeechHost.audioSpeed), not from a playout's options, and its item records it.
import t from 'tap';
import type { EngineHooks, EngineSessionOptions, SpeechEngineSession } from '../../src/engines/engine.js';
import { config, setup } from './harness.js';
import { PROBE_FRAME, ProbeEngine } from './probe-engine.js';

/** Speaks one whole response through its hooks before open() returns. */
class EarlyEngine extends ProbeEngine {
  static readonly RESPONSE = 'early_1';
  override async open(options: EngineSessionOptions, hooks: EngineHooks): Promise<SpeechEngineSession> {
    const session = await super.open(options, hooks);
    hooks.onAssistantText(EarlyEngine.RESPONSE, 'Hello before the start.');
    hooks.onAssistantAudio(EarlyEngine.RESPONSE, new Int16Array(PROBE_FRAME).fill(1000));
    hooks.onResponseDone(EarlyEngine.RESPONSE);
    return session;
  }
}

t.test('a response the engine speaks during open() is recorded with the agent audio_speed and voice', async (t) => {
  const probe = new EarlyEngine();
  const s = setup({ engine: probe });
  await s.conv.start({ kind: 'config', config: config({ audio_speed: 1.3, voice_id: 'lisa', welcome_message: '' }) });
  t.equal(s.client.count('ready_to_start_conversation'), 1, 'the conversation still starts');
  await s.conv.end('user');
  const items = s.store.only().items.filter((i) => i.role === 'assistant');
  t.equal(items.length, 1, 'the early response is an item');
  t.equal(items[0].audio_speed, 1.3, "the conversation's audio_speed, as no playout was attached yet");
  t.equal(items[0].voice_id, 'lisa');
  t.equal(s.client.count('audio'), 0, 'its audio was never sent: nothing played before the playout');
});

// The tool settings that decide how a call fits with the assistant's speech, in scripted-engine conversations (and
// the probe engine where the engine must misbehave): allow_tool_chaining, wait_for_speech_before_tool_call,
// forbid_speech_after_tool_call, forbid_tool_call_after_speech, require_speech_before_tool_call, uninterruptible.
// Each test runs both values and asserts the order of speech, tool calls and outputs the client saw and the
// record's assistant items.
import t from 'tap';
import type { ResolvedAgent } from '../../src/domain/conversation-agent.js';
import { config, setup, speak, speechFrames, tickUntil, type Setup } from './harness.js';
import { PROBE_FRAME, ProbeEngine } from './probe-engine.js';

t.setTimeout(180_000);

type StoredTool = ResolvedAgent['tools'][number];

/** A stored tool of the project. */
const stored = (name: string, def: Record<string, unknown>): StoredTool => ({
  id: `tool_${name}`,
  name,
  definition: { name, description: `The ${name} tool`, execution_mode: 'sync', parameters: [], ...def },
});

/** An inline WebSocket tool of `config`. */
const inline = (name: string, extra: Record<string, unknown> = {}) => ({
  type: 'custom_websocket' as const,
  tool_schema: {
    type: 'function' as const,
    function: { name, description: `The ${name} tool`, parameters: { type: 'object' as const, properties: {} } },
  },
  ...extra,
});

const call = (name: string, args: Record<string, unknown> = {}) => ({ name, arguments: args });

/** The events of speech and tools the client got, in order (a run of audio frames as one 'audio'). */
const SHOWN = new Set([
  'assistant_started_speaking',
  'audio',
  'assistant_finished_speaking',
  'tool_call',
  'tool_call_output_processed',
  'tool_call_interrupted',
  'dtmf',
]);
const timeline = (s: Setup) => s.client.types.filter((ty) => SHOWN.has(ty));

/** The record's assistant items: [text, names of the calls recorded on it]. */
const assistantItems = (s: Setup) =>
  s.store
    .only()
    .items.filter((i) => i.role === 'assistant')
    .map((i) => [i.live_transcript, (i.tool_calls ?? []).map((c) => c.tool.name)]);

const calls = (s: Setup) => s.store.only().items.flatMap((i) => i.tool_calls ?? []);

/** A scripted conversation whose generate_reply answers follow `responses`; `tools` from `config`, stored ones in the store. */
async function start(fields: Record<string, unknown>, storedTools: StoredTool[] = []): Promise<Setup> {
  const s = setup();
  for (const tool of storedTools) s.store.tools.set(tool.name, tool);
  await s.conv.start({ kind: 'config', config: config(fields) });
  if (s.conv.state !== 'ready') throw new Error(`not ready: ${s.conv.state}`);
  return s;
}

/** The client answers the latest tool_call. */
function answer(s: Setup, output: unknown): void {
  const last = s.client.events('tool_call').at(-1)!;
  s.conv.handle({ type: 'tool_call_output', tool_call_id: last.tool_call_id, output });
}

/** Ticks `n` frames, a real millisecond each (engine events land between them), asserting nothing. */
async function idle(s: Setup, n: number): Promise<void> {
  await tickUntil(s, () => false, 'nothing', n).catch(() => undefined);
}

/** Six words of tone: 2.4 s, 120 frames; the scripted engine hands it out in 24 chunks, then its calls. */
const LINE = 'One moment please, let me look.';

t.test(
  'wait_for_speech_before_tool_call: the call waits until the speech before it has played; without it, the call comes at once',
  async (t) => {
    for (const wait of [true, false]) {
      const s = await start({
        tools: [inline('get_cart', { wait_for_speech_before_tool_call: wait })],
        scripted_engine: {
          responses: [{ say: LINE, tool_calls: [call('get_cart')], after_tool_output: { say: 'You have two items.' } }],
        },
      });
      s.conv.handle({ type: 'generate_reply' });
      await tickUntil(s, () => s.client.count('tool_call') === 1, 'the tool call');
      const finishedBeforeCall = s.client.count('assistant_finished_speaking');
      answer(s, { items: 2 });
      await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 2, 'the reply to the output');
      await s.conv.end('user');
      const order = timeline(s);
      if (wait) {
        t.equal(finishedBeforeCall, 1, 'wait: the speech had played out when the call was made');
        t.same(
          order,
          [
            'assistant_started_speaking',
            'audio',
            'assistant_finished_speaking',
            'tool_call',
            'tool_call_output_processed',
            'assistant_started_speaking',
            'audio',
            'assistant_finished_speaking',
          ],
          'wait: speech, then the call and its output, then the reply',
        );
        const frames = s.client.log.slice(0, s.client.index('tool_call')).filter((e) => e.type === 'audio').length;
        t.equal(frames, 120, 'every frame of the speech before the call went out first');
      } else {
        t.equal(finishedBeforeCall, 0, 'no wait: the call came while the speech was still playing');
        t.ok(
          order.indexOf('tool_call') < order.indexOf('assistant_finished_speaking'),
          'the tool call before the end of the speech',
        );
      }
      t.same(
        assistantItems(s),
        [
          [LINE, ['get_cart']],
          ['You have two items.', []],
        ],
        'the items: the speech with its call, then the reply',
      );
    }
  },
);

t.test(
  'forbid_speech_after_tool_call: no reply to the output, the conversation waits for the user; allowed, the engine replies',
  async (t) => {
    for (const forbid of [true, false]) {
      const s = await start(
        {
          tools: ['note'],
          scripted_engine: {
            responses: [
              {
                say: 'Let me note that.',
                tool_calls: [call('note')],
                after_tool_output: { say: 'Done. Anything else?' },
              },
            ],
          },
        },
        [stored('note', { type: 'custom_context', context: 'Noted.', forbid_speech_after_tool_call: forbid })],
      );
      s.conv.handle({ type: 'generate_reply' });
      await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 1, 'the speech with the call');
      if (forbid) await idle(s, 150);
      else await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 2, 'the reply to the output');
      t.equal(s.conv.state, 'active', 'still live');
      await s.conv.end('user');
      t.same(
        assistantItems(s),
        forbid
          ? [['Let me note that.', ['note']]]
          : [
              ['Let me note that.', ['note']],
              ['Done. Anything else?', []],
            ],
        forbid ? 'forbidden: the call ran, nothing was said after its output' : 'allowed: the reply followed',
      );
      t.same(calls(s)[0].response_body, { context: 'Noted.' }, 'the tool ran either way');
    }
  },
);

t.test(
  'forbid_tool_call_after_speech: a call after speech is not executed and the speech kept; a call before any speech runs',
  async (t) => {
    for (const forbid of [true, false]) {
      const s = await start(
        {
          tools: ['lookup'],
          scripted_engine: {
            responses: [
              {
                say: 'Let me check.',
                tool_calls: [call('lookup', { id: 1 })],
                after_tool_output: { say: 'Found it.' },
              },
              { tool_calls: [call('lookup', { id: 2 })], after_tool_output: { say: 'Found the second.' } },
            ],
          },
        },
        [stored('lookup', { type: 'custom_websocket', forbid_tool_call_after_speech: forbid })],
      );
      s.conv.handle({ type: 'generate_reply' });
      await tickUntil(
        s,
        () =>
          s.client.count('assistant_finished_speaking') === 1 && (!forbid ? s.client.count('tool_call') === 1 : true),
        'the first response',
      );
      if (!forbid) {
        answer(s, 'first');
        await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 2, 'the reply to the first output');
      } else await idle(s, 100);
      t.equal(
        s.client.count('tool_call'),
        forbid ? 0 : 1,
        forbid ? 'forbidden: the call after speech never reached the client' : 'allowed: the call ran',
      );

      s.conv.handle({ type: 'generate_reply' });
      await tickUntil(
        s,
        () => s.client.events('tool_call').some((e) => (e.parameters as { id?: number }).id === 2),
        'the call made before any speech',
      );
      answer(s, 'second');
      const replies = forbid ? 2 : 3;
      await tickUntil(
        s,
        () => s.client.count('assistant_finished_speaking') === replies,
        'the reply to the second output',
      );
      await s.conv.end('user');
      const order = timeline(s);
      if (forbid) {
        t.same(
          order,
          [
            'assistant_started_speaking',
            'audio',
            'assistant_finished_speaking',
            'tool_call',
            'tool_call_output_processed',
            'assistant_started_speaking',
            'audio',
            'assistant_finished_speaking',
          ],
          'forbidden: only the speech of the first response, then the second call and its reply',
        );
      } else {
        t.ok(
          order.indexOf('tool_call') < order.indexOf('assistant_finished_speaking'),
          'allowed: the first call while its speech played',
        );
      }
      const first = calls(s).find((c) => (c.request_body as { id: number }).id === 1)!;
      if (forbid) {
        t.match(
          first.error_message,
          /^not executed: called after the assistant spoke/,
          'the dropped call is recorded with why',
        );
        t.equal(first.response_body, null);
        t.same(
          assistantItems(s),
          [
            ['Let me check.', ['lookup']],
            [null, ['lookup']],
            ['Found the second.', []],
          ],
          'the speech kept, no reply to the dropped call',
        );
      } else {
        t.same(first.response_body, { output: 'first' });
        t.same(assistantItems(s), [
          ['Let me check.', ['lookup']],
          ['Found it.', []],
          [null, ['lookup']],
          ['Found the second.', []],
        ]);
      }
    }
  },
);

t.test(
  'require_speech_before_tool_call: a call made without speech waits for a line the engine is asked for; not required, it runs at once',
  async (t) => {
    for (const required of [true, false]) {
      const s = await start({
        tools: [inline('lookup', { require_speech_before_tool_call: required })],
        scripted_engine: {
          responses: [
            { tool_calls: [call('lookup')], after_tool_output: { say: 'Found it.' } },
            // What the engine says when asked for speech only: its call is not made.
            { say: 'Let me look that up.', tool_calls: [call('lookup')] },
          ],
        },
      });
      s.conv.handle({ type: 'generate_reply' });
      await tickUntil(s, () => s.client.count('tool_call') === 1, 'the tool call');
      answer(s, 'found');
      await tickUntil(
        s,
        () => s.client.count('assistant_finished_speaking') === (required ? 2 : 1),
        'the reply to the output',
      );
      await idle(s, 20);
      await s.conv.end('user');
      if (required) {
        t.same(
          timeline(s),
          [
            'assistant_started_speaking',
            'audio',
            'assistant_finished_speaking',
            'tool_call',
            'tool_call_output_processed',
            'assistant_started_speaking',
            'audio',
            'assistant_finished_speaking',
          ],
          'required: the line, then the call, then the reply',
        );
        t.same(
          assistantItems(s),
          [
            ['Let me look that up.', ['lookup']],
            ['Found it.', []],
          ],
          'the call recorded on the line said before it; the silent response leaves no item',
        );
      } else {
        t.same(
          timeline(s),
          [
            'tool_call',
            'tool_call_output_processed',
            'assistant_started_speaking',
            'audio',
            'assistant_finished_speaking',
          ],
          'not required: the call at once',
        );
        t.same(assistantItems(s), [
          [null, ['lookup']],
          ['Found it.', []],
        ]);
      }
      t.equal(s.client.count('tool_call'), 1, 'the speech-only line made no call');
    }
  },
);

t.test(
  'require_speech_before_tool_call: the engine is asked for a speech-only line once the silent response is done, and the call waits for it',
  async (t) => {
    const probe = new ProbeEngine();
    const s = setup({ engine: probe });
    await s.conv.start({
      kind: 'config',
      config: config({ tools: [inline('lookup', { require_speech_before_tool_call: true })] }),
    });
    s.conv.handle({ type: 'generate_reply' });
    const [reply] = probe.of('createResponse');
    probe.toolCall({ responseId: reply.id, callId: 'c1', name: 'lookup', arguments: {} });
    await new Promise((r) => setImmediate(r));
    t.equal(probe.of('createResponse').length, 1, 'nothing asked while the calling response is still under way');
    probe.hooks!.onResponseDone(reply.id);
    await new Promise((r) => setImmediate(r));
    const line = probe.of('createResponse')[1];
    t.match(
      line,
      { options: { speechOnly: true }, instructions: /about to call the tool "lookup"/ },
      'then a speech-only line is asked for',
    );
    t.equal(s.client.count('tool_call'), 0, 'the call waits for the line');
    probe.say(line.id, 'Let me look that up.', 5);
    for (let i = 0; i < 10 && s.client.count('tool_call') === 0; i++) {
      s.pacing.tick();
      await new Promise((r) => setImmediate(r));
    }
    t.equal(s.client.count('tool_call'), 1, 'the call once the line has played');
    t.ok(s.client.index('tool_call') > s.client.index('assistant_finished_speaking'), 'after the line');
    await s.conv.end('user');
  },
);

t.test('require_speech_before_tool_call: a line the user interrupts leaves the call not executed', async (t) => {
  const probe = new ProbeEngine();
  const s = setup({ engine: probe });
  await s.conv.start({
    kind: 'config',
    config: config({ tools: [inline('lookup', { require_speech_before_tool_call: true })] }),
  });
  s.conv.handle({ type: 'generate_reply' });
  const [reply] = probe.of('createResponse');
  probe.toolCall({ responseId: reply.id, callId: 'c1', name: 'lookup', arguments: {} });
  probe.hooks!.onResponseDone(reply.id);
  await new Promise((r) => setImmediate(r));
  const line = probe.of('createResponse')[1];
  probe.say(line.id, 'Let me look that up, it will take a moment.', 200);
  await speak(s, speechFrames('hello', 800));
  await new Promise((r) => setImmediate(r));
  t.equal(s.client.count('tool_call'), 0, 'never sent to the client');
  t.match(
    probe.of('submitToolOutput'),
    [{ callId: 'c1', respond: false, output: /not executed: the user interrupted/ }],
    'the engine told, without a reply',
  );
  await s.conv.end('user');
  t.match(s.store.only().finish, { interruptions_count: 1 });
});

t.test(
  'allow_tool_chaining: false makes the reply to the output speech only; true lets it call the next tool',
  async (t) => {
    for (const chaining of [false, true]) {
      const s = await start(
        {
          tools: ['hours', 'book'],
          scripted_engine: {
            responses: [
              {
                say: 'Checking.',
                tool_calls: [call('hours')],
                after_tool_output: { say: 'We open at nine. Booking you in.', tool_calls: [call('book')] },
              },
            ],
          },
        },
        [
          stored('hours', { type: 'custom_context', context: 'Nine to five.', allow_tool_chaining: chaining }),
          stored('book', { type: 'custom_context', context: 'Booked.' }),
        ],
      );
      s.conv.handle({ type: 'generate_reply' });
      await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 2, 'the reply to the output');
      await idle(s, 20);
      await s.conv.end('user');
      t.same(
        assistantItems(s),
        chaining
          ? [
              ['Checking.', ['hours']],
              ['We open at nine. Booking you in.', ['book']],
            ]
          : [
              ['Checking.', ['hours']],
              ['We open at nine. Booking you in.', []],
            ],
        chaining ? 'chaining: the reply called the next tool' : 'no chaining: the reply only spoke',
      );
    }
  },
);

t.test(
  'allow_tool_chaining false: a call the engine still makes in its reply is not executed, until the user takes a turn',
  async (t) => {
    const probe = new ProbeEngine();
    const s = setup({ engine: probe });
    s.store.tools.set(
      'hours',
      stored('hours', { type: 'custom_context', context: 'Nine to five.', allow_tool_chaining: false }),
    );
    await s.conv.start({ kind: 'config', config: config({ tools: ['hours', inline('book')] }) });
    s.conv.handle({ type: 'generate_reply' });
    probe.toolCall({ responseId: probe.of('createResponse')[0].id, callId: 'c1', name: 'hours', arguments: {} });
    await new Promise((r) => setImmediate(r));
    t.same(
      probe.of('submitToolOutput')[0],
      { kind: 'submitToolOutput', callId: 'c1', output: 'Nine to five.', respond: true, options: { speechOnly: true } },
      'the engine is asked for a speech-only reply',
    );

    // The engine replies on its own and calls a tool anyway.
    probe.toolCall({ responseId: 'engine_reply', callId: 'c2', name: 'book', arguments: {} });
    await new Promise((r) => setImmediate(r));
    t.equal(s.client.count('tool_call'), 0, 'the chained call is not executed');
    t.match(probe.of('submitToolOutput')[1], {
      callId: 'c2',
      respond: false,
      output: /not executed: a speech-only response/,
    });
    probe.say('engine_reply', 'We open at nine.');

    // A new user turn: the engine's answer to it may call tools again.
    await speak(s, speechFrames('hello', 1200));
    probe.toolCall({ responseId: 'answer_to_user', callId: 'c3', name: 'book', arguments: {} });
    await new Promise((r) => setImmediate(r));
    t.equal(s.client.count('tool_call'), 1, 'after the user spoke, the call runs');
    await s.conv.end('user');
    const entries = calls(s);
    t.same(
      entries.filter((c) => c.tool.name === 'hours').map((c) => c.error_message),
      [null],
      'the first tool ran',
    );
    t.match(
      entries
        .filter((c) => c.tool.name === 'book')
        .map((c) => c.error_message)
        .sort(),
      [/^not executed: a speech-only response/, null],
      'book: refused in the speech-only reply, run after the user spoke',
    );
  },
);

t.test(
  'uninterruptible: while the call runs the user cannot barge in; once it has settled they can again',
  async (t) => {
    const LONG = 'Please hold on while I put you through to the front desk.';
    for (const uninterruptible of [true, false]) {
      const s = await start(
        {
          tools: ['transfer_desk'],
          scripted_engine: { responses: [{ say: LONG, tool_calls: [call('transfer_desk')] }] },
        },
        [stored('transfer_desk', { type: 'custom_websocket', uninterruptible })],
      );
      s.conv.handle({ type: 'generate_reply' });
      await tickUntil(s, () => s.client.count('tool_call') === 1, 'the call running');
      t.equal(s.client.count('assistant_finished_speaking'), 0, 'the assistant is still speaking');
      await speak(s, speechFrames('hello', 1200));
      t.equal(s.client.count('user_finished_speaking'), 1, 'the user spoke over it');
      if (uninterruptible) {
        t.equal(s.client.count('tool_call_interrupted'), 0, 'the call is not interrupted');
        await tickUntil(s, () => s.client.count('assistant_finished_speaking') === 1, 'the speech played to its end');
        answer(s, 'connected');
        await new Promise((r) => setImmediate(r));
        // Settled: barge-in is back.
        s.conv.handle({ type: 'say', text: 'Is there anything else I can do for you today?' });
        await tickUntil(s, () => s.client.count('assistant_started_speaking') === 2, 'the next line');
        await speak(s, speechFrames('hello', 1200));
      } else {
        t.equal(s.client.count('tool_call_interrupted'), 1, 'barge-in interrupts the call');
      }
      await s.conv.end('user');
      const record = s.store.only();
      t.equal(
        record.finish?.interruptions_count,
        1,
        uninterruptible ? 'only the line after the call was interrupted' : 'the speech was interrupted',
      );
      t.same(assistantItems(s)[0], [LONG, ['transfer_desk']], 'the speech with its call');
      // Twelve words of tone, 400 ms each.
      const heardMs = record.items.find((i) => i.role === 'assistant')!.duration_ms;
      if (uninterruptible) t.equal(heardMs, 4800, 'the whole speech was heard');
      else t.ok(heardMs < 4000, `the speech was cut where the user came in (${heardMs} ms heard)`);
    }
  },
);

t.test(
  'speech_before_tool_call suppressed: speech the engine streams before the call is dropped where it has not played',
  async (t) => {
    const probe = new ProbeEngine();
    const s = setup({ engine: probe });
    await s.conv.start({
      kind: 'config',
      config: config({
        tools: ['keypad_input'],
        built_in_tool_configs: { keypad_input: { speech_before_tool_call: 'suppressed' } },
      }),
    });
    t.same(
      probe.options?.tools.map((x) => [x.name, x.speechSuppressed === true]),
      [['keypad_input', true]],
      'the engine is told the tool silences its response',
    );
    s.conv.handle({ type: 'generate_reply' });
    const [reply] = probe.of('createResponse');
    probe.hooks!.onAssistantText(reply.id, 'Pressing one.');
    probe.hooks!.onAssistantAudio(reply.id, new Int16Array(PROBE_FRAME * 50));
    for (let i = 0; i < 3; i++) s.pacing.tick();
    const heard = s.client.count('audio');
    probe.toolCall({ responseId: reply.id, callId: 'c1', name: 'keypad_input', arguments: { digits: '1' } });
    for (let i = 0; i < 60; i++) s.pacing.tick();
    await new Promise((r) => setImmediate(r));
    t.equal(s.client.count('audio'), heard, `nothing more played after the call (${heard} of 50 frames had)`);
    t.same(
      probe.of('cancelResponse'),
      [{ kind: 'cancelResponse', id: reply.id, playedMs: 0 }],
      'the engine stops the response',
    );
    t.same(
      s.client.types.filter((ty) => ty !== 'ready_to_start_conversation' && ty !== 'conversation_created'),
      ['assistant_started_speaking', 'audio', 'assistant_finished_speaking', 'dtmf'],
      'what had started ends, then the keys',
    );
    await s.conv.end('user');
  },
);

// The phone-transfer built-in in a live conversation: what its call asks of the call (the tool's fields with the
// API's defaults, the model's number and digits where the tool leaves them open), what the engine is offered, and
// how the conversation goes on: transferred ends it (`assistant`) with the outcome on the tool call; while a
// transfer runs the silence limit does not count; a transfer nobody answered returns the caller to the agent, which
// is told and speaks; a conversation that is no phone call says so.
import t, { type Test } from 'tap';
import type {
  PhoneTransferHooks,
  PhoneTransferRequest,
  PhoneTransferResult,
} from '../../src/conversation/tools/phone-transfer.js';
import { transferOutput, transferParameters, transferRequest } from '../../src/conversation/tools/phone-transfer.js';
import type { ToolDefinition } from '../../src/schemas/tools.js';
import { transferCallerId } from '../../src/telephony/worker-transfer.js';
import { config, setup, tickUntil, type Setup } from './harness.js';

t.setTimeout(60_000);

const def = (fields: Partial<ToolDefinition>): ToolDefinition =>
  ({
    type: 'built_in_transfer_to_phone_number',
    name: 'desk',
    description: 'Transfer',
    execution_mode: 'sync',
    ...fields,
  }) as ToolDefinition;

t.test(
  "a call's request: the tool's fields with the API's defaults, the model's where the tool leaves them open",
  async (t) => {
    t.same(
      transferRequest(def({ phone_number: '+15550001111' }), {}),
      {
        phoneNumber: '+15550001111',
        dtmf: null,
        keepListening: true,
        useAgentPhoneNumber: true,
        postTransferMessage: null,
        onNoAnswer: 'return_to_assistant',
        detectVoicemail: false,
      },
      'keep_listening defaults to use_agent_phone_number (true)',
    );
    const cold = transferRequest(def({ phone_number: '+15550001111', use_agent_phone_number: false }), {});
    t.equal(
      (cold as PhoneTransferRequest).keepListening,
      false,
      'use_agent_phone_number false: keep_listening false by default',
    );
    t.equal(
      (transferRequest(def({}), { phone_number: '+442071234567' }) as PhoneTransferRequest).phoneNumber,
      '+442071234567',
      "no phone_number: the model's",
    );
    t.same(transferRequest(def({}), { phone_number: '555-1234' }), { error: 'not an E.164 phone number: 555-1234' });
    t.equal(
      (transferRequest(def({ phone_number: '+15550001111', dtmf: '12#' }), { dtmf: '9' }) as PhoneTransferRequest).dtmf,
      '12#',
      'fixed digits',
    );
    t.equal(
      (
        transferRequest(def({ phone_number: '+15550001111', dtmf: '12#', dynamic_dtmf: true }), {
          dtmf: '9w1',
        }) as PhoneTransferRequest
      ).dtmf,
      '9w1',
      "dynamic: the model's",
    );
    t.same(transferRequest(def({ phone_number: '+15550001111', dynamic_dtmf: true }), { dtmf: 'x' }), {
      error: 'not DTMF digits: x',
    });
    t.equal(
      (transferRequest(def({ phone_number: '+15550001111', dynamic_dtmf: true }), {}) as PhoneTransferRequest).dtmf,
      null,
      'dynamic: none chosen',
    );
  },
);

t.test('what the engine is offered: the number when the tool has none, digits with dynamic_dtmf', async (t) => {
  t.same(transferParameters(def({ phone_number: '+15550001111' })), { type: 'object', properties: {}, required: [] });
  const open = transferParameters(def({ dynamic_dtmf: true })) as {
    properties: Record<string, unknown>;
    required: string[];
  };
  t.same(Object.keys(open.properties), ['phone_number', 'dtmf']);
  t.same(open.required, ['phone_number']);
  t.match(
    transferOutput({ outcome: 'no_answer', phone_number: '+1555', reason: 'busy', attempts: 1 }),
    /not answered \(busy\); the caller is still with you/,
  );
});

t.test("the new leg's caller ID: the agent's number, or the caller's", async (t) => {
  const inbound = {
    origin: 'telephony-inbound' as const,
    callInfo: { from_phone_number: '+14155550123', to_phone_number: '+14155550100' },
  };
  const outbound = {
    origin: 'telephony-outbound' as const,
    callInfo: { from_phone_number: '+14155550100', to_phone_number: '+14155550123' },
  };
  t.equal(transferCallerId(inbound, true), '+14155550100');
  t.equal(transferCallerId(inbound, false), '+14155550123');
  t.equal(transferCallerId(outbound, true), '+14155550100');
  t.equal(transferCallerId(outbound, false), '+14155550123');
  t.equal(
    transferCallerId({ ...inbound, callInfo: { ...inbound.callInfo, from_phone_number: 'anonymous' } }, false),
    null,
    'anonymous: none',
  );
});

/** A conversation whose welcome calls the transfer tool `desk`, its client a phone call answering with `answer`. */
async function transferring(
  t: Test,
  answer: (request: PhoneTransferRequest, hooks: PhoneTransferHooks) => Promise<PhoneTransferResult>,
): Promise<Setup> {
  const s = setup();
  s.store.tools.set('desk', {
    id: 'tool_desk',
    name: 'desk',
    definition: def({ phone_number: '+15550001111', use_agent_phone_number: false }) as unknown as Record<
      string,
      unknown
    >,
  });
  Object.assign(s.client, { transferCall: answer });
  await s.conv.start({
    kind: 'config',
    config: config({
      tools: ['desk'],
      generate_welcome_message: true,
      no_input_end_conversation_sec: 10,
      scripted_engine: {
        responses: [
          {
            say: 'One moment.',
            tool_calls: [{ name: 'desk', arguments: {} }],
            after_tool_output: { say: 'Nobody answered.' },
          },
        ],
      },
    }),
  });
  t.ok(s.conv.state === 'ready' || s.conv.state === 'active', `live (${s.conv.state})`);
  return s;
}

const deskCall = (s: Setup) =>
  s.store
    .only()
    .items.flatMap((i) => i.tool_calls ?? [])
    .find((c) => c.tool.name === 'desk');

t.test('transferred: the conversation ends `assistant`, the outcome on the tool call', async (t) => {
  let asked: PhoneTransferRequest | null = null;
  const s = await transferring(t, async (request) => {
    asked = request;
    return { outcome: 'transferred', method: 'refer', phone_number: request.phoneNumber };
  });
  await tickUntil(s, () => s.conv.state === 'ended', 'the end');
  t.equal(asked!.phoneNumber, '+15550001111');
  t.equal(asked!.keepListening, false);
  t.equal(s.store.only().finish?.ended_by, 'assistant');
  t.match(deskCall(s)?.response_body, { outcome: 'transferred', method: 'refer' });
});

t.test('no answer: the silence limit waits while the transfer runs; the agent is told and speaks again', async (t) => {
  let settle!: (r: PhoneTransferResult) => void;
  const s = await transferring(
    t,
    (request) => new Promise((resolve) => (settle = (r) => resolve({ ...r, phone_number: request.phoneNumber }))),
  );
  await tickUntil(
    s,
    () => settle !== undefined && s.client.count('assistant_finished_speaking') >= 1,
    'the transfer to start, its line played',
  );
  // Far past no_input_end_conversation_sec: nobody is silent on the agent while the call is being transferred.
  s.timers.advance(60_000);
  await tickUntil(s, () => false, 'nothing', 20).catch(() => undefined);
  t.equal(s.conv.state === 'ended' || s.conv.state === 'ending', false, 'still live');
  settle({ outcome: 'no_answer', phone_number: '', reason: 'not answered within 30 s', attempts: 1 });
  await tickUntil(
    s,
    () => s.store.only().items.some((i) => i.live_transcript === 'Nobody answered.'),
    "the agent's reply",
  );
  t.match(deskCall(s)?.response_body, { outcome: 'no_answer', attempts: 1 });
  // Back with the agent: the silence limit counts again.
  await tickUntil(s, () => false, 'nothing', 50).catch(() => undefined);
  s.timers.advance(11_000);
  await tickUntil(s, () => s.conv.state === 'ended', 'the silence limit');
  t.equal(s.store.only().finish?.ended_by, 'assistant_silence_limit_reached');
});

t.test('not a phone call: the tool says so and the conversation goes on', async (t) => {
  const s = setup();
  s.store.tools.set('desk', {
    id: 'tool_desk',
    name: 'desk',
    definition: def({ phone_number: '+15550001111' }) as unknown as Record<string, unknown>,
  });
  await s.conv.start({
    kind: 'config',
    config: config({
      tools: ['desk'],
      generate_welcome_message: true,
      scripted_engine: { responses: [{ say: '', tool_calls: [{ name: 'desk', arguments: {} }] }] },
    }),
  });
  await tickUntil(s, () => deskCall(s) !== undefined, 'the tool call on the record');
  t.equal(deskCall(s)?.error_message, 'phone transfers need a phone call');
  t.equal(s.conv.state === 'ended', false);
  await s.conv.end('user');
});

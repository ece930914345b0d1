// A conversation that becomes zero data retention mid-call: it starts on an agent that keeps its content (so it is
// recorded and its welcome's text is stored), then the built-in transfer tool moves it to an agent whose
// data_retention_policy is form A ("retains nothing"; spec, shared records). From then on nothing of it is kept:
// the recording stops at once and its file is removed while the call goes on (src/conversation/record.ts
// keepNothing, StereoRecorder.abort), the end stores no recording row, and the text stored before the transfer is
// dropped with the rest (src/store/conversations.ts finishConversation). Real server, real socket, scripted engine,
// PostgreSQL.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { RECORDINGS_DIR } from '../../src/media/recording.js';
import { api } from '../helpers/server.js';
import { startRealtimeServer } from '../helpers/realtime.js';
import { until } from '../helpers/wait.js';

t.setTimeout(120_000);

t.test('a transfer to a zero data retention agent keeps nothing of the conversation', async (t) => {
  const server = await startRealtimeServer({
    env: { PARLEY_RECONNECT_GRACE_SEC: '0', PARLEY_ENGINE_DEFAULT: 'scripted' },
  });
  t.teardown(() => server.close());
  const http = api(server);
  const recordingsDir = join(server.settings.PARLEY_DATA_DIR, RECORDINGS_DIR);
  const recordingFiles = (id: string) => readdirSync(recordingsDir).filter((f) => f.startsWith(`${id}.`));

  const vault = await http.put('/v1/agents/upsert', {
    name: 'vault',
    system_prompt: 'Vault.',
    data_retention_policy: { zero_data_retention: true },
  });
  t.equal(vault.status, 200, 'the zero data retention agent');
  const tool = await http.post('/v1/tools', {
    name: 'to_vault',
    description: 'Transfer',
    type: 'built_in_transfer_to_agent',
    execution_mode: 'sync',
    agents_to_transfer_to: ['vault'],
  });
  t.equal(tool.status, 201, 'the transfer tool');

  const c = await server.openSts();
  c.send({
    type: 'config',
    input_format: 'pcm_16000',
    output_format: 'pcm_16000',
    welcome_message: 'My account number is 1234.',
    tools: ['to_vault'],
    scripted_engine: {
      responses: [
        { say: 'Moving you to the vault.', tool_calls: [{ name: 'to_vault', arguments: { agent_name: 'vault' } }] },
        { say: 'Vault here.' },
      ],
    },
  });
  await c.untilEvent('assistant_finished_speaking');
  const id = String(c.events('conversation_created')[0]?.conversation_id);
  t.same(recordingFiles(id), [`${id}.wav`], 'before the transfer the call is recorded');

  c.send({ type: 'generate_reply' });
  await until(() => recordingFiles(id).length === 0, { what: 'the recording file removed', intervalMs: 50 });
  t.same(recordingFiles(id), [], 'after the transfer the recording file is removed while the call goes on');
  c.send({ type: 'generate_reply' });
  await until(() => c.events('assistant_finished_speaking').length === 3, {
    what: "the vault agent's reply",
    intervalMs: 50,
  });
  t.equal(c.events('assistant_finished_speaking').length, 3, "the vault agent's reply played");
  t.same(recordingFiles(id), [], 'no new recording file while the vault agent speaks');
  c.close();

  const conv = await server.endedConversation(id);
  t.equal(conv.ended_by, 'user');
  t.same(conv.data_retention_policy, { zero_data_retention: true }, 'the record says it retains nothing');
  t.equal(conv.audio_url, null, 'no recording link');
  const rows = await server.sql`select side, path from conversation_recordings where conversation_id = ${id}`;
  t.same(rows, [], 'no recording row');
  t.same(recordingFiles(id), [], 'no file in the recordings directory');
  // Content rule: none of the conversation's content is kept, also what was said before the transfer.
  t.equal(conv.live_transcript, null, 'no conversation transcript');
  const items = conv.items as {
    role: string;
    live_transcript: string | null;
    tool_calls?: { tool: { name: string }; request_body: unknown; response_body: unknown }[];
  }[];
  t.same(
    items.map((i) => [i.role, i.live_transcript]),
    [
      ['assistant', null],
      ['assistant', null],
      ['assistant', null],
    ],
    'the items remain, none with its text (the welcome before the transfer included)',
  );
  const calls = items.flatMap((i) => i.tool_calls ?? []);
  t.same(
    calls.map((x) => [x.tool.name, x.request_body, x.response_body]),
    [['to_vault', null, null]],
    'the transfer call without its bodies',
  );
});

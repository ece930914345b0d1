// End to end: a real STS conversation over the WebSocket (media worker, echo engine speaking the welcome message)
// ends, its finish enqueues the post-call jobs, the node's job queue runs them against the fake speech and chat
// servers, and the API shows the post-call transcript (record and item), the extraction and the task results, with
// the jobs' outcomes in `post_call`. PostgreSQL.
import t from 'tap';
import { createNodeJobQueue } from '../../src/jobs/handlers.js';
import { startFakeChatServer, type ChatStep } from '../fakes/chat-server.js';
import { startFakeSpeechServer } from '../fakes/speech-server.js';
import { api } from '../helpers/server.js';
import { startRealtimeServer, TestClient } from '../helpers/realtime.js';
import { eventually, quiet } from './helpers.js';

t.setTimeout(240_000);

t.test('a conversation ends; its post-call transcript, extraction and task results show through the API', async (t) => {
  const speech = await startFakeSpeechServer();
  const chat = await startFakeChatServer();
  const server = await startRealtimeServer({
    env: {
      PARLEY_RECONNECT_GRACE_SEC: '0',
      PARLEY_STT_BASE_URL: speech.baseUrl,
      PARLEY_LLM_BASE_URL: chat.baseUrl,
      PARLEY_LLM_MODEL: 'judge-1',
    },
  });
  const jobs = createNodeJobQueue({ sql: server.sql, settings: server.settings, log: quiet, pollMs: 50 });
  await jobs.start();
  t.teardown(async () => {
    await jobs.stop();
    await server.close();
    await speech.close();
    await chat.close();
  });
  const http = api(server);

  t.equal((await http.post('/v1/extraction_schemas', { name: 'greeting', prompt: 'What did the assistant say first?', fields: [{ name: 'first_words', type: 'string', description: null }, { name: 'polite', type: 'bool', description: null }] })).status, 201);
  t.equal((await http.post(`/v1/projects/${server.projectId}/conversation_eval_prompts`, { name: 'tone', prompt: 'Was the assistant friendly?' })).status, 201);
  speech.transcripts.push('Hello there');
  const answer: ChatStep = (req) => {
    const format = req.body.response_format as { json_schema?: { name?: string } } | undefined;
    if (format?.json_schema?.name === 'extraction') return { reply: { content: JSON.stringify({ first_words: 'Hello there', polite: true }) } };
    const question = String(req.body.messages[1]?.content);
    return { reply: { content: JSON.stringify({ verdict: question.includes('(greet)') ? 'pass' : 'fail', reason: 'judged' }) } };
  };
  chat.fallback = answer;

  const c = await TestClient.open(`${server.wsUrl}/v1/sts/ws`, { authorization: `Bearer ${server.apiKey}` });
  c.send({
    type: 'config',
    input_format: 'pcm_16000',
    output_format: 'pcm_16000',
    welcome_message: 'Hello there.',
    tasks: [{ name: 'greet', description: 'Greet the caller.' }],
    data_retention_policy: { zero_data_retention: false, transcripts: { delete_after_hours: 720 }, audio_recordings: { delete_after_hours: 1440 } },
  });
  await c.untilEvent('assistant_finished_speaking');
  const id = String(c.events('conversation_created')[0]?.conversation_id);
  c.close();
  await server.endedConversation(id);

  let conv: any;
  await eventually('the post-call jobs settled', async () => {
    conv = (await http.get(`/v1/conversations/${id}`)).body.conversation;
    return conv.post_call.jobs.length === 3 && conv.post_call.jobs.every((j: { status: string }) => j.status !== 'pending' && j.status !== 'running');
  });
  t.match(conv.post_call.jobs, [
    { kind: 'post_call_transcript', status: 'done', attempts: 1 },
    { kind: 'extraction', status: 'done', attempts: 1 },
    { kind: 'evaluation', status: 'done', attempts: 1 },
  ]);
  t.same(conv.data_retention_policy, { zero_data_retention: false, transcripts: { delete_after_hours: 720 }, audio_recordings: { delete_after_hours: 1440 } }, 'the policy the conversation ran with is recorded');

  t.equal(speech.transcriptions.length, 1, 'the assistant side only: the user never spoke');
  t.equal(speech.transcriptions[0].fields.response_format, 'verbose_json');
  t.equal(conv.live_transcript, 'assistant: Hello there.');
  t.equal(conv.post_call_transcript, 'assistant: Hello there');
  t.same(conv.items.map((i: { role: string; post_call_transcript: string | null }) => [i.role, i.post_call_transcript]), [['assistant', 'Hello there']]);

  const extractions = (await http.get(`/v1/conversations/${id}/extractions`)).body.extractions;
  t.match(extractions, [{ schema: { name: 'greeting', isDeleted: false }, result: { first_words: 'Hello there', polite: true } }]);
  const extractionQuestion = chat.requests.find((r) => (r.body.response_format as { json_schema?: { name?: string } }).json_schema?.name === 'extraction');
  t.match(extractionQuestion?.body.messages[1].content, /Transcript:\nassistant: Hello there$/, 'extraction read the post-call transcript');

  t.same(conv.task_results, {
    tone: { verdict: 'fail', reason: 'judged', kind: 'eval_prompt' },
    greet: { verdict: 'pass', reason: 'judged', kind: 'task' },
  });
});

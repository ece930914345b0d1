// The evaluation job against the fake chat server, on PGlite and PostgreSQL: every eval prompt of the project and
// every task the conversation started with judged by the model (one question each), the verdicts in the record's
// task_results keyed by name (made unique), a wrong verdict corrected; the skipped reasons.
import t from 'tap';
import { createJobQueue } from '../../src/jobs/queue.js';
import { jobHandlers } from '../../src/jobs/handlers.js';
import { resultKeys } from '../../src/jobs/evaluation.js';
import type { Settings } from '../../src/config.js';
import { listJobs } from '../../src/store/jobs.js';
import { startFakeChatServer, type ChatStep } from '../fakes/chat-server.js';
import { api, DB_KINDS, startTestServer } from '../helpers/server.js';
import { storeEndedConversation } from './conversations.js';
import { quiet } from './helpers.js';

t.setTimeout(240_000);

const T0 = new Date('2026-11-27T10:00:00.000Z');

t.test('result keys are the names, made unique in order', async (t) => {
  t.same(resultKeys(['a', 'b', 'a', 'a', 'a (2)']), ['a', 'b', 'a (2)', 'a (3)', 'a (2) (2)']);
});

for (const db of DB_KINDS) {
  t.test(`evaluation on ${db}`, async (t) => {
    const chat = await startFakeChatServer();
    t.teardown(() => chat.close());
    const server = await startTestServer({
      db,
      env: { PARLEY_LLM_BASE_URL: chat.baseUrl, PARLEY_LLM_MODEL: 'judge-1', PARLEY_LLM_MAX_RETRIES: '0' },
    });
    t.teardown(() => server.close());
    const http = api(server);
    const queue = (settings: Settings = server.settings) =>
      createJobQueue({ sql: server.sql, settings, log: quiet, handlers: jobHandlers(), pin: null, maxAttempts: 1 });
    const jobOf = async (id: string) =>
      (await listJobs(server.sql, 'evaluation')).find((j) => j.conversation_id === id)!;
    const tasks = [
      { name: 'greeting', description: 'Greet the caller by name.' },
      { name: 'booking', description: 'Book a table for two.' },
    ];
    const ended = (live: string | null, withTasks = tasks, policy?: { zero_data_retention: true }) =>
      storeEndedConversation(server, {
        startedAt: T0,
        endedAt: new Date(T0.getTime() + 60_000),
        liveTranscript: live,
        settings: { tasks: withTasks, ...(policy ? { data_retention_policy: policy } : {}) },
      });

    await t.test('skipped without eval prompts or tasks', async (t) => {
      const id = await ended('user: hi', []);
      await queue().drain();
      t.match(await jobOf(id), {
        status: 'skipped',
        reason: 'no eval prompts in the project and no tasks on the agent',
      });
    });

    const created = await http.post(`/v1/projects/${server.projectId}/conversation_eval_prompts`, {
      name: 'greeting',
      prompt: 'Was the assistant polite?',
    });
    t.equal(created.status, 201);

    await t.test('every eval prompt and task judged; verdicts in task_results', async (t) => {
      const id = await ended('user: Hi, I am Ann.\nassistant: Hello Ann! A table for two is booked.');
      const before = chat.requests.length;
      const judge: ChatStep = (req) => {
        const q = String(req.body.messages[1].content);
        // The eval prompt: a verdict out of the enum first, then (corrected) a pass.
        if (req.body.messages.length > 2)
          return { reply: { content: JSON.stringify({ verdict: 'pass', reason: 'The assistant was polite.' }) } };
        if (q.startsWith('Evaluation (greeting)'))
          return { reply: { content: JSON.stringify({ verdict: 'maybe', reason: 'unsure' }) } };
        if (q.includes('Greet the caller'))
          return { reply: { content: JSON.stringify({ verdict: 'pass', reason: 'Ann was greeted.' }) } };
        return { reply: { content: JSON.stringify({ verdict: 'unknown', reason: 'The transcript does not say.' }) } };
      };
      chat.script(judge, judge, judge, judge);
      await queue().drain();
      t.match(await jobOf(id), { status: 'done', detail: { criteria: 3, transcript: 'live' } });
      const sent = chat.requests.slice(before);
      t.equal(sent.length, 4, 'three questions and one correction');
      t.match(sent[0].body.response_format, {
        type: 'json_schema',
        json_schema: {
          name: 'evaluation',
          strict: true,
          schema: { required: ['verdict', 'reason'], properties: { verdict: { enum: ['pass', 'fail', 'unknown'] } } },
        },
      });
      t.match(
        sent[0].body.messages[1].content,
        /^Evaluation \(greeting\):\nWas the assistant polite\?\n\nTranscript:\nuser: Hi, I am Ann\./,
      );
      t.match(sent[1].body.messages[3].content, /not valid: verdict: /, 'the wrong verdict sent back');
      t.match(
        sent[2].body.messages[1].content,
        /^Task the assistant was to carry out \(greeting\):\nGreet the caller by name\./,
      );
      const conv = (await http.get(`/v1/conversations/${id}`)).body.conversation;
      t.same(conv.task_results, {
        greeting: { verdict: 'pass', reason: 'The assistant was polite.', kind: 'eval_prompt' },
        'greeting (2)': { verdict: 'pass', reason: 'Ann was greeted.', kind: 'task' },
        booking: { verdict: 'unknown', reason: 'The transcript does not say.', kind: 'task' },
      });
      t.match(conv.post_call.jobs, [
        { kind: 'post_call_transcript' },
        { kind: 'extraction' },
        { kind: 'evaluation', status: 'done' },
      ]);
    });

    await t.test('skipped without a model or a transcript', async (t) => {
      const noModel = await ended('user: hi');
      await queue({ ...server.settings, PARLEY_LLM_MODEL: undefined }).drain();
      t.match(await jobOf(noModel), {
        status: 'skipped',
        reason: 'no chat model is configured (PARLEY_LLM_BASE_URL and PARLEY_LLM_MODEL)',
      });
      const zdr = await ended('user: secret', tasks, { zero_data_retention: true });
      const before = chat.requests.length;
      await queue().drain();
      t.match(await jobOf(zdr), {
        status: 'skipped',
        reason: 'zero data retention: the conversation keeps no transcript',
      });
      t.equal(chat.requests.length, before, 'the model was not asked');
      t.same((await http.get(`/v1/conversations/${zdr}`)).body.conversation.task_results, {}, 'no results');
    });
  });
}

// System and template variables in a live conversation: the welcome message and the system prompt the
// engine gets are resolved in the agent's time zone at the conversation's start. The manual clock stands at
// 2026-11-22 17:00 UTC, a Sunday: in Pacific/Kiritimati (UTC+14) it is already Monday 23 November, 07:00, and in
// Pacific/Pago_Pago (UTC-11) 06:00 on the Sunday, so a conversation that ignored the time zone would say otherwise.
import t from 'tap';
import { config, setup } from './harness.js';
import { ProbeEngine } from './probe-engine.js';
import { systemVariables } from '../../src/conversation/variables.js';

const ALL = '{{system_weekday}} {{system_date}} {{system_year}} {{system_time}} {{system_conversation_timezone}}';

t.test('inline settings: welcome message and system prompt in the configured time zone', async (t) => {
  const probe = new ProbeEngine();
  const s = setup({ engine: probe });
  await s.conv.start({
    kind: 'config',
    config: config({
      timezone: 'Pacific/Kiritimati',
      welcome_message: `Hi {{name}}, ${ALL}.`,
      system_prompt: `Now: ${ALL}; user {{name}}.`,
      template_variables: { name: 'Ada' },
    }),
  });
  t.equal(probe.options?.systemPrompt, 'Now: Monday November 23 2026 07:00 Pacific/Kiritimati; user Ada.');
  t.same(
    probe.of('speak').map((c) => c.text),
    ['Hi Ada, Monday November 23 2026 07:00 Pacific/Kiritimati.'],
  );
  await s.conv.end('user');
});

t.test(
  "a stored agent's time zone and template defaults apply; the start time holds for the whole conversation",
  async (t) => {
    const probe = new ProbeEngine();
    const s = setup({ engine: probe });
    s.store.agents.set('night', {
      orgId: 'org_test',
      project: { id: 'proj_main', name: 'main' },
      agent: { id: 'agent_night', name: 'night', enabled: true },
      config: {
        timezone: 'Pacific/Pago_Pago',
        system_prompt: `{{shop}} at ${ALL}`,
        template_variables: { shop: { default_value: 'The shop' } },
      },
      tools: [],
    });
    await s.conv.start({
      kind: 'config',
      config: config({ agent: 'night', websocket_timeout_sec: 86_400, no_input_end_conversation_sec: 86_400 }),
    });
    t.equal(probe.options?.systemPrompt, 'The shop at Sunday November 22 2026 06:00 Pacific/Pago_Pago');
    s.timers.advance(2 * 60 * 60 * 1000 - 1);
    s.conv.handle({ type: 'update_system_prompt', system_prompt: `Later: {{system_time}}` });
    t.same(
      probe.of('updateSession').map((c) => c.update.systemPrompt),
      ['Later: 06:00'],
      'system variables are those of the start',
    );
    await s.conv.end('user');
  },
);

t.test(
  'systemVariables with cached formatters says what a formatter built per call says, for many zones and dates',
  async (t) => {
    const reference = (at: Date, timeZone: string) => {
      const part = (opts: Intl.DateTimeFormatOptions) =>
        new Intl.DateTimeFormat('en-US', { timeZone, ...opts }).format(at);
      return {
        system_date: part({ month: 'long', day: 'numeric' }),
        system_time: part({ hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }),
        system_weekday: part({ weekday: 'long' }),
        system_year: part({ year: 'numeric' }),
        system_conversation_timezone: timeZone,
      };
    };
    const dates = [
      Date.UTC(2026, 10, 22, 17, 0),
      Date.UTC(2024, 1, 29, 0, 5),
      Date.UTC(2025, 11, 31, 23, 59),
      Date.UTC(2026, 2, 29, 1, 30),
    ].map((ms) => new Date(ms));
    // Over the cache's bound (64 zones): evicted zones are rebuilt, and each zone asked again says the same.
    const zones = Intl.supportedValuesOf('timeZone')
      .filter((_, i) => i % 5 === 0)
      .slice(0, 80);
    t.ok(zones.length >= 70);
    for (let round = 0; round < 2; round++) {
      for (const z of ['Pacific/Kiritimati', 'Pacific/Pago_Pago', 'Europe/London', 'Asia/Kolkata', ...zones]) {
        for (const d of dates) {
          const got = systemVariables(d, z);
          const want = reference(d, z);
          if (JSON.stringify(got) !== JSON.stringify(want)) t.same(got, want, `${z} at ${d.toISOString()}`);
        }
      }
    }
    t.same(systemVariables(dates[0], 'Pacific/Kiritimati'), {
      system_date: 'November 23',
      system_time: '07:00',
      system_weekday: 'Monday',
      system_year: '2026',
      system_conversation_timezone: 'Pacific/Kiritimati',
    });
    t.same(
      systemVariables(dates[3], 'Europe/London').system_time,
      '02:30',
      'summer time in London (BST from 01:00 UTC)',
    );
    t.throws(() => systemVariables(dates[0], 'Not/AZone'), RangeError, 'an unknown zone throws, each time');
    t.throws(() => systemVariables(dates[0], 'Not/AZone'), RangeError);
  },
);

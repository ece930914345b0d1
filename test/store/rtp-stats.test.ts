// A phone call's RTP statistics (Finish.rtp) are stored with its finish and read back as the record's analysis.rtp;
// a later finish (after a cancel) fills them in only while none are stored; other conversations have none.
import t from 'tap';
import { DB_KINDS, startTestServer } from '../helpers/server.js';
import {
  cancelConversation,
  createConversation,
  finishConversation,
  getConversation,
} from '../../src/store/conversations.js';
import { conversation as conversationSchema, type RtpAnalysis } from '../../src/schemas/conversations.js';

t.setTimeout(300_000);

const RTP: RtpAnalysis = {
  inbound: { packets_expected: 500, packets_received: 495, packets_lost: 5, loss_fraction: 0.01, jitter_ms: 3.25 },
  outbound: { packets_expected: 498, packets_received: 498, packets_lost: 0, loss_fraction: 0, jitter_ms: 1.5 },
};

for (const db of DB_KINDS) {
  t.test(`analysis.rtp on ${db}`, async (t) => {
    const server = await startTestServer({ db });
    t.teardown(() => server.close());
    const { sql, orgId, projectId } = server;
    const call = () =>
      createConversation(sql, {
        orgId,
        projectId,
        origin: 'telephony-inbound',
        call_info: { from_phone_number: '+14155550100', to_phone_number: '+14155550199' },
      });

    const id = await call();
    await finishConversation(sql, id, { ended_by: 'user', ended_at: new Date(), rtp: RTP });
    const got = await getConversation(sql, id);
    t.same(got?.record.analysis.rtp, RTP, 'stored and read back');
    t.ok(conversationSchema.safeParse(got?.record).success, 'the record still matches the schema');

    const web = await createConversation(sql, { orgId, projectId, origin: 'web' });
    await finishConversation(sql, web, { ended_by: 'user', ended_at: new Date() });
    t.notOk('rtp' in (await getConversation(sql, web))!.record.analysis, 'not a call: no rtp');

    const canceled = await call();
    await cancelConversation(sql, canceled);
    await finishConversation(sql, canceled, { ended_by: 'user', ended_at: new Date(), rtp: RTP });
    t.same((await getConversation(sql, canceled))?.record.analysis.rtp, RTP, 'filled in after a cancel');
    await finishConversation(sql, canceled, {
      ended_by: 'user',
      ended_at: new Date(),
      rtp: { ...RTP, outbound: null },
    });
    t.same((await getConversation(sql, canceled))?.record.analysis.rtp, RTP, 'a later finish does not replace them');
  });
}

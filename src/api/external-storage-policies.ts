// External storage policies of a project: POST, GET /v1/external_storage_policies, GET, PATCH, DELETE
// /v1/external_storage_policies/{nameOrId}. A name conflict answers 409 in the validation shape.
import {
  createPolicy,
  deletePolicy,
  getPolicyRecord,
  listPolicyRecords,
  updatePolicy,
} from '../domain/external-storage-policies.js';
import { successBody } from '../schemas/common.js';
import {
  createdExternalStoragePolicyBody,
  externalStoragePoliciesBody,
  externalStoragePolicyBody,
  externalStoragePolicySchemas,
} from '../schemas/external-storage-policies.js';
import { nameOrIdParams, projectQuery } from './params.js';
import type { RoutePlugin } from './types.js';

export const externalStoragePolicyRoutes: RoutePlugin = async (app, ctx) => {
  const { sql } = ctx;
  const tags = ['external storage policies'];
  const schemas = externalStoragePolicySchemas(ctx.settings);

  app.post(
    '/external_storage_policies',
    {
      schema: {
        tags,
        querystring: projectQuery,
        body: schemas.create,
        response: { 201: createdExternalStoragePolicyBody },
      },
    },
    async (req, reply) => reply.status(201).send(await createPolicy(sql, req.auth.orgId, req.query.project, req.body)),
  );

  app.get(
    '/external_storage_policies',
    { schema: { tags, querystring: projectQuery, response: { 200: externalStoragePoliciesBody } } },
    async (req) => ({ external_storage_policies: await listPolicyRecords(sql, req.auth.orgId, req.query.project) }),
  );

  app.get(
    '/external_storage_policies/:nameOrId',
    {
      schema: { tags, params: nameOrIdParams, querystring: projectQuery, response: { 200: externalStoragePolicyBody } },
    },
    async (req) => ({
      external_storage_policy: await getPolicyRecord(sql, req.auth.orgId, req.params.nameOrId, req.query.project),
    }),
  );

  app.patch(
    '/external_storage_policies/:nameOrId',
    {
      schema: {
        tags,
        params: nameOrIdParams,
        querystring: projectQuery,
        body: schemas.update,
        response: { 200: successBody },
      },
    },
    async (req) => {
      await updatePolicy(ctx, req.auth.orgId, req.params.nameOrId, req.query.project, req.body);
      return { success: true };
    },
  );

  app.delete(
    '/external_storage_policies/:nameOrId',
    { schema: { tags, params: nameOrIdParams, querystring: projectQuery, response: { 200: successBody } } },
    async (req) => {
      await deletePolicy(sql, req.auth.orgId, req.params.nameOrId, req.query.project);
      return { success: true };
    },
  );
};

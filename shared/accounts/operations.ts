import * as z from '#shared/zod.ts';
import { auditView } from '#shared/accounts/audit.ts';
import { roles } from '#shared/accounts/model.ts';
import { callerOf } from '#shared/accounts/caller.ts';
import { forbidden, notFound } from '#shared/http/errors.ts';
import { defineOperation } from '#shared/http/operation.ts';
import { pageId, pageLimit } from '#shared/http/query.ts';

const orgIdParam = z.string().check(z.regex(/^org_[0-9a-f]{24}$/, 'must be an organization id (org_ and 24 hex)'));
const userIdParam = z.string().check(z.regex(/^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/, 'must be a user id'));
const roleSchema = z.enum(roles);
const orgSchema = z.object({
  id: z.string(),
  name: z.string(),
  plan: z.string(),
  status: z.string(),
  is_personal: z.boolean(),
  created_at: z.string(),
});
const memberSchema = z.object({
  user_id: z.string(),
  email: z.nullable(z.string()),
  role: z.string(),
  status: z.string(),
});
const invitationSchema = z.object({
  id: z.string(),
  email: z.string(),
  role: z.string(),
  created_at: z.string(),
  expires_at: z.string(),
  status: z.enum(['open', 'accepted', 'expired']),
});
const operatorResult = z.object({
  success: z.literal(true),
  status: z.string(),
  paused_sandbox_ids: z.array(z.string()),
});

/** `GET /api/organizations`: the shape Agent Canvas reads (a person is in one organization at a time). */
export const organizationsList = defineOperation(
  'organizationsList',
  () => ({
    response: z.object({
      items: z.array(z.object({ id: z.string(), name: z.string(), is_personal: z.boolean() })),
      current_org_id: z.nullable(z.string()),
    }),
  }),
  ({ userId, auth }, { organizations }) => organizations.listMine(callerOf(userId, auth)),
);

export const getOrg = defineOperation(
  'getOrg',
  () => ({
    params: z.object({ org_id: orgIdParam }),
    response: z.extend(orgSchema, { role: z.nullable(z.string()), members: z.array(memberSchema) }),
  }),
  ({ userId, auth, params }, { organizations }) => organizations.get(callerOf(userId, auth), params.org_id),
);

export const updateOrg = defineOperation(
  'updateOrg',
  () => ({
    params: z.object({ org_id: orgIdParam }),
    body: z.strictObject({
      name: z.optional(z.string().check(z.trim(), z.minLength(1, 'name must not be empty'), z.maxLength(100))),
      plan: z.optional(z.string().check(z.regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'plan must be a plan name'))),
    }),
    response: orgSchema,
  }),
  ({ userId, auth, params, body }, { organizations }) =>
    organizations.update(callerOf(userId, auth), params.org_id, body),
);

export const listInvitations = defineOperation(
  'listInvitations',
  () => ({ params: z.object({ org_id: orgIdParam }), response: z.array(invitationSchema) }),
  ({ userId, auth, params }, { organizations }) => organizations.listInvitations(callerOf(userId, auth), params.org_id),
);

export const createInvitation = defineOperation(
  'createInvitation',
  () => ({
    params: z.object({ org_id: orgIdParam }),
    body: z.strictObject({
      email: z
        .string()
        .check(
          z.trim(),
          z.toLowerCase(),
          z.maxLength(254),
          z.regex(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, 'email must be an email address'),
        ),
      role: z._default(roleSchema, 'member'),
    }),
    response: z.extend(invitationSchema, { token: z.string(), link: z.string() }),
  }),
  ({ userId, auth, params, body, baseUrl }, { organizations }) =>
    organizations.invite(callerOf(userId, auth), params.org_id, body, baseUrl),
);

export const updateMember = defineOperation(
  'updateMember',
  () => ({
    params: z.object({ org_id: orgIdParam, user_id: userIdParam }),
    body: z.strictObject({ role: roleSchema }),
    response: memberSchema,
  }),
  ({ userId, auth, params, body }, { organizations }) =>
    organizations.changeRole(callerOf(userId, auth), params.org_id, params.user_id, body.role),
);

export const removeMember = defineOperation(
  'removeMember',
  () => ({
    params: z.object({ org_id: orgIdParam, user_id: userIdParam }),
    response: z.object({ success: z.literal(true), user_id: z.string(), new_org_id: z.string() }),
  }),
  ({ userId, auth, params }, { organizations }) =>
    organizations.remove(callerOf(userId, auth), params.org_id, params.user_id),
);

export const acceptInvitation = defineOperation(
  'acceptInvitation',
  () => ({
    params: z.object({
      token: z.string().check(z.regex(/^acsi_[A-Za-z0-9_-]{43}$/, 'must be an invitation token (acsi_...)')),
    }),
    response: z.object({ success: z.literal(true), org_id: z.string(), role: z.string() }),
  }),
  ({ userId, auth, params }, { organizations }) => organizations.accept(callerOf(userId, auth), params.token),
);

export const suspendUser = defineOperation(
  'suspendUser',
  () => ({ params: z.object({ user_id: userIdParam }), response: z.extend(operatorResult, { user_id: z.string() }) }),
  ({ userId, auth, params }, { organizations }) =>
    organizations.setUserStatus(callerOf(userId, auth), params.user_id, true),
);

export const reactivateUser = defineOperation(
  'reactivateUser',
  () => ({ params: z.object({ user_id: userIdParam }), response: z.extend(operatorResult, { user_id: z.string() }) }),
  ({ userId, auth, params }, { organizations }) =>
    organizations.setUserStatus(callerOf(userId, auth), params.user_id, false),
);

export const suspendOrg = defineOperation(
  'suspendOrg',
  () => ({ params: z.object({ org_id: orgIdParam }), response: z.extend(operatorResult, { org_id: z.string() }) }),
  ({ userId, auth, params }, { organizations }) =>
    organizations.setOrgStatus(callerOf(userId, auth), params.org_id, true),
);

export const reactivateOrg = defineOperation(
  'reactivateOrg',
  () => ({ params: z.object({ org_id: orgIdParam }), response: z.extend(operatorResult, { org_id: z.string() }) }),
  ({ userId, auth, params }, { organizations }) =>
    organizations.setOrgStatus(callerOf(userId, auth), params.org_id, false),
);

export const setOrgPlan = defineOperation(
  'setOrgPlan',
  () => ({
    params: z.object({ org_id: orgIdParam }),
    body: z.strictObject({
      plan: z.string().check(z.regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'plan must be a plan name')),
    }),
    response: z.object({
      success: z.literal(true),
      org_id: z.string(),
      plan: z.string(),
      previous_plan: z.string(),
    }),
  }),
  ({ userId, auth, params, body }, { organizations }) =>
    organizations.setPlan(callerOf(userId, auth), params.org_id, body.plan),
);

/** `GET /api/v1/audit-log`: the caller's organization (owners, admins), or any (`org_id`, operators); newest first. */
export const listAuditLog = defineOperation(
  'listAuditLog',
  () => ({
    query: z.object({
      org_id: z.optional(orgIdParam),
      limit: pageLimit,
      page_id: pageId,
    }),
    response: z.object({
      items: z.array(
        z.object({
          id: z.string(),
          org_id: z.string(),
          at: z.string(),
          actor: z.string(),
          action: z.string(),
          target: z.nullable(z.string()),
          fields: z.array(z.string()),
          detail: z.nullable(z.string()),
        }),
      ),
      next_page_id: z.nullable(z.string()),
    }),
  }),
  async ({ userId, auth, query }, { auditLog, cursors }) => {
    const caller = callerOf(userId, auth);
    const orgId = query.org_id ?? caller.orgId;
    if (!caller.operator) {
      // Another organization's log is not found (a foreign id); one's own needs owner or admin.
      if (orgId !== caller.orgId) throw notFound('Organization not found');
      if (caller.role === 'member') throw forbidden('Only an owner or admin can read the audit log');
    }
    const scope = `audit:${orgId}`;
    const page = await auditLog.list(orgId, query.limit, await cursors.decode(query.page_id, scope));
    return { items: page.items.map(auditView), next_page_id: await cursors.encode(page.next, scope) };
  },
);

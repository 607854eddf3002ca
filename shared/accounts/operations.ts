import * as z from '#shared/zod.ts';
import { orgIdParam } from '#shared/accounts/org-id.ts';
import { auditView } from '#shared/accounts/audit.ts';
import type { ExportPosition } from '#shared/accounts/export.ts';
import { roles } from '#shared/accounts/model.ts';
import { callerOf } from '#shared/accounts/caller.ts';
import { forbidden, notFound } from '#shared/http/errors.ts';
import { defineOperation } from '#shared/http/operation.ts';
import { pageId, pageLimit } from '#shared/http/query.ts';
import { apiKeyView } from '#shared/auth/model.ts';
import { eventSchema } from '#shared/protocol.ts';
import { maskedSettingsSchema } from '#shared/settings/model.ts';

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

const invitationTokenParams = z.object({
  token: z.string().check(z.regex(/^acsi_[A-Za-z0-9_-]{43}$/, 'must be an invitation token (acsi_...)')),
});

export const getInvitation = defineOperation(
  'getInvitation',
  () => ({
    params: invitationTokenParams,
    response: z.object({
      org_id: z.string(),
      org_name: z.string(),
      role: z.string(),
      email: z.string(),
      expires_at: z.string(),
      already_member: z.boolean(),
    }),
  }),
  ({ userId, auth, params }, { organizations }) =>
    organizations.describeInvitation(callerOf(userId, auth), params.token),
);

export const acceptInvitation = defineOperation(
  'acceptInvitation',
  () => ({
    params: invitationTokenParams,
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

const adminUserSchema = z.object({
  user_id: z.string(),
  email: z.nullable(z.string()),
  email_verified: z.boolean(),
  issuer: z.nullable(z.string()),
  org_id: z.string(),
  role: z.string(),
  status: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});

/**
 * `GET /api/v1/admin/users` (operators): people newest first, or one organization's (`org_id`, by
 * user id), optionally only `status` active, suspended or deleted. A cursor is signed for its operator and
 * filters, so it cannot be replayed under others.
 */
export const adminListUsers = defineOperation(
  'adminListUsers',
  () => ({
    query: z.object({
      org_id: z.optional(orgIdParam),
      status: z.optional(z.enum(['active', 'suspended', 'deleted'], 'status must be active, suspended or deleted')),
      limit: pageLimit,
      page_id: pageId,
    }),
    response: z.object({ items: z.array(adminUserSchema), next_page_id: z.nullable(z.string()) }),
  }),
  async ({ userId, auth, query }, { organizations, cursors }) => {
    const caller = callerOf(userId, auth);
    organizations.requireOperator(caller);
    const scope = `admin-users:${caller.userId}:${query.org_id ?? ''}:${query.status ?? ''}`;
    const page = await organizations.listUsers(caller, {
      ...(query.org_id ? { orgId: query.org_id } : {}),
      ...(query.status ? { status: query.status } : {}),
      limit: query.limit,
      after: await cursors.decode(query.page_id, scope),
    });
    return { items: page.items, next_page_id: await cursors.encode(page.next, scope) };
  },
);

/** `GET /api/v1/admin/orgs` (operators): organizations newest first, optionally only one `status`. */
export const adminListOrgs = defineOperation(
  'adminListOrgs',
  () => ({
    query: z.object({
      status: z.optional(z.enum(['active', 'suspended', 'closed'], 'status must be active, suspended or closed')),
      limit: pageLimit,
      page_id: pageId,
    }),
    response: z.object({
      items: z.array(z.extend(orgSchema, { owners: z.number(), updated_at: z.string() })),
      next_page_id: z.nullable(z.string()),
    }),
  }),
  async ({ userId, auth, query }, { organizations, cursors }) => {
    const caller = callerOf(userId, auth);
    organizations.requireOperator(caller);
    const scope = `admin-orgs:${caller.userId}:${query.status ?? ''}`;
    const page = await organizations.listOrgs(caller, {
      ...(query.status ? { status: query.status } : {}),
      limit: query.limit,
      after: await cursors.decode(query.page_id, scope),
    });
    return { items: page.items, next_page_id: await cursors.encode(page.next, scope) };
  },
);

/**
 * `GET /api/v1/users/me/export`: the caller's own data, paged (docs/sign-in.md, "Export and
 * deletion"). The first page: the account (organization and role), settings masked (secret names and
 * `*_set` flags only), keys (no hashes); every page: conversations newest first with their events in
 * order, at most 500 events (about 4 MB) and 100 conversations a page. The cursor is signed for the
 * caller alone.
 */
export const exportMyData = defineOperation(
  'exportMyData',
  () => ({
    query: z.object({ page_id: pageId }),
    response: z.object({
      account: z.nullable(
        z.object({
          user_id: z.string(),
          email: z.nullable(z.string()),
          org_id: z.nullable(z.string()),
          role: z.nullable(z.string()),
        }),
      ),
      settings: z.nullable(maskedSettingsSchema),
      api_keys: z.nullable(z.array(apiKeyView)),
      conversations: z.array(
        z.object({
          id: z.string(),
          title: z.nullable(z.string()),
          created_at: z.string(),
          updated_at: z.string(),
          sandbox_id: z.nullable(z.string()),
          selected_repository: z.nullable(z.string()),
          selected_branch: z.nullable(z.string()),
          git_provider: z.nullable(z.string()),
          trigger: z.nullable(z.string()),
          pr_number: z.array(z.number()),
          llm_model: z.nullable(z.string()),
          parent_conversation_id: z.nullable(z.string()),
          agent_type: z.string(),
          execution_status: z.nullable(z.string()),
          metrics: z.unknown(),
          events: z.array(eventSchema),
          events_continue: z.boolean(),
        }),
      ),
      next_page_id: z.nullable(z.string()),
    }),
  }),
  async ({ userId, auth, query }, { accountExport, cursors }) => {
    const scope = `export:${userId}`;
    // Signed for this caller: a position this service wrote.
    const at = (await cursors.decode(query.page_id, scope)) as ExportPosition | undefined;
    const page = await accountExport.page(userId, at);
    return {
      account: at
        ? null
        : { user_id: userId, email: auth.email ?? null, org_id: auth.orgId ?? null, role: auth.role ?? null },
      settings: page.settings,
      api_keys: page.api_keys,
      conversations: page.conversations,
      next_page_id: await cursors.encode(page.next, scope),
    };
  },
);

/**
 * `DELETE /api/v1/users/me`: the caller deletes their account, confirming with their own user id
 * (`{"confirm": "<user id>"}`). 409 for the last owner of an organization with other members. The
 * account is refused at once; its stored data goes over the next sweeps (docs/sign-in.md).
 */
export const deleteMyAccount = defineOperation(
  'deleteMyAccount',
  () => ({
    body: z.strictObject({ confirm: z.string().check(z.minLength(1), z.maxLength(200)) }),
    response: z.object({
      success: z.literal(true),
      user_id: z.string(),
      status: z.literal('deleting'),
      deleted_sandbox_ids: z.array(z.string()),
    }),
    errors: [409],
  }),
  ({ userId, auth, body }, { accountDeletion }) => accountDeletion.request(callerOf(userId, auth), body.confirm),
);

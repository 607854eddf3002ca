import type { Role } from '#shared/accounts/model.ts';
import type { Caller } from '#shared/accounts/organizations.ts';
import type { AuthorizerContext } from '#shared/auth/authorizer.ts';
import { forbidden } from '#shared/http/errors.ts';

/** The caller as the organization routes see them (the authorizer's context). */
export function callerOf(userId: string, auth: AuthorizerContext): Caller {
  if (!auth.orgId) throw forbidden('No organization for this caller');
  return {
    userId,
    orgId: auth.orgId,
    role: (auth.role ?? 'member') as Role,
    ...(auth.email ? { email: auth.email } : {}),
    operator: auth.operator === true,
  };
}

import type { AccountStore } from '#shared/accounts/account-store.ts';
import type { Audit } from '#shared/accounts/audit.ts';
import type { Caller } from '#shared/accounts/organizations.ts';
import type { StripeStore } from '#shared/billing/stripe.ts';
import { ApiError, notFound } from '#shared/http/errors.ts';

/** `PUT /api/v1/admin/orgs/{org_id}/billing`: which Stripe customer an organization's usage is reported to. */
export class BillingCustomers {
  constructor(
    private readonly accounts: AccountStore,
    private readonly store: StripeStore,
    private readonly audit: Audit,
  ) {}

  async set(caller: Caller, orgId: string, customerId: string) {
    if (!caller.operator) throw new ApiError(403, { detail: 'Only an operator can do this' });
    const org = await this.accounts.getOrg(orgId);
    if (!org || org.status === 'closed') throw notFound('Organization not found');
    const previous = await this.store.setCustomer(orgId, customerId);
    if (previous !== customerId)
      await this.audit.record(orgId, `operator:${caller.userId}`, 'billing_customer_set', {
        target: orgId,
        fields: ['stripe_customer_id'],
      });
    return { success: true as const, org_id: orgId, stripe_customer_id: customerId, previous: previous ?? null };
  }
}

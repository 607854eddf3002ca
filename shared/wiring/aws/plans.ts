import { envPlans } from '#shared/plans/load.ts';
import type { Builder } from '#shared/wiring/adapters.ts';

/** The deployment's plans from PLANS (the CDK context `plans`), checked when first built. */
export const plans: Builder<'plans'> = () => envPlans(process.env.PLANS);

import type { ServiceFactory, Services } from '#shared/services.ts';

export const oidcSignIn: ServiceFactory<Services['oidcSignIn']> = (c) => ({
  verifier: c.adapters.oidc,
  limiter: c.adapter('signInLimiter'),
});

import { defineService } from '#shared/services.ts';

export const oidcSignIn = defineService({ adapters: ['signInLimiter', 'oidc'] }, (c) => ({
  verifier: c.adapters.oidc,
  limiter: c.adapter('signInLimiter'),
}));

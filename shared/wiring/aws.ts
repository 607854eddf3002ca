/*
 * The AWS wiring of one function. Its entry names its operation (or event handler) and the factories
 * of the services its code reads (shared/services/, so its bundle carries only those classes); its
 * adapters are derived from those services' declarations and its route's grants
 * (shared/wiring/function-adapters.ts), built from the AWS builders in shared/wiring/aws/builders.ts,
 * which a Lambda bundle replaces with that function's builders alone (infra/function-adapters.ts).
 * shared/wiring/adapters.ts holds each build and call to the declaration outside Lambda.
 */
import type { EventFunctionDef } from '#shared/functions.ts';
import type { Operation } from '#shared/http/operation.ts';
import { lambdaHandler, type ApiHandler } from '#shared/http/wrapper.ts';
import { servicesOf, type ServiceFactories, type Services } from '#shared/services.ts';
import { WiringError, wire, type AdapterName, type Adapters, type Builders } from '#shared/wiring/adapters.ts';
import * as awsBuilders from '#shared/wiring/aws/builders.ts';
import { functionAdapters } from '#shared/wiring/function-adapters.ts';
import type { Declaration } from '#shared/wiring/needs.ts';

/** How a function is wired: read by the local gateway (which gives it the local adapters of the same names), the bundler and the wiring test. */
export interface FunctionWiring {
  id: string;
  declaration: Declaration;
  /** Its adapters, derived from its services and its declaration. */
  adapters: AdapterName[];
  /** Their AWS builders. */
  builders: Builders;
  /** Adapters whose builder the entry gives itself instead of the shared one (a bundle then carries only the entry's). */
  replaced: AdapterName[];
  /** The adapters the entry names itself (its handler's own, and those it replaces): each must be granted (the wiring test). */
  named: AdapterName[];
  /** The services its code reads (the local gateway builds the same ones). */
  services: ServiceFactories;
  /** The route's operation (routes only). */
  operation?: Operation;
}

/** What an entry may add to its services: adapters its own handler reads, and builders it gives in place of the shared ones. */
export interface EntryWiring {
  /** Adapters an event function's handler reads itself (the stream's WebSocket side, the authorizer's sign-in checks), beside its services'. */
  adapters?: readonly AdapterName[];
  /** A builder in place of the shared one: the bridge routes that sign snapshot transfers (shared/wiring/aws/s3-signing.ts). */
  replace?: Builders;
}

function wiringOf(id: string, declaration: Declaration, services: ServiceFactories, own: EntryWiring): FunctionWiring {
  const replace = own.replace ?? {};
  // A Lambda bundle's registry holds exactly this function's builders but those the entry replaces
  // (infra/function-adapters.ts), and its route table no grants.
  const adapters =
    process.env.ACS_LAMBDA_BUNDLE === 'true'
      ? ([...new Set([...Object.keys(awsBuilders), ...Object.keys(replace)])].sort() as AdapterName[])
      : functionAdapters(declaration, services, own.adapters);
  const all = awsBuilders as Builders;
  const builders = Object.fromEntries(adapters.map((n) => [n, replace[n] ?? all[n]])) as Builders;
  const replaced = (Object.keys(replace) as AdapterName[]).filter((n) => adapters.includes(n));
  const named = [...new Set([...(own.adapters ?? []), ...(Object.keys(replace) as AdapterName[])])];
  return { id, declaration, adapters, builders, replaced, named, services };
}

/** The adapters and services of one function on AWS, built on first use, held to its declaration. */
function built(wiring: FunctionWiring): () => { adapters: Adapters; services: Services } {
  let done: { adapters: Adapters; services: Services } | undefined;
  return () => {
    if (done) return done;
    const adapters = wire(wiring.id, wiring.declaration, wiring.builders);
    done = { adapters, services: servicesOf(wiring.id, adapters, wiring.services) };
    return done;
  };
}

/** A route's Lambda handler: the wrapper around its operation, over the services its entry names. */
export function awsRoute(
  operation: Operation,
  services: ServiceFactories = {},
  own: EntryWiring = {},
): ApiHandler & { wiring: FunctionWiring } {
  const { route } = operation;
  // The wrapper answers repeats of an idempotent create through this: an entry that forgot it fails at load.
  if (route.idempotent && !services.idempotency)
    throw new WiringError(
      `${route.id}: an idempotent route's entry names the idempotency service (shared/services/idempotency.ts)`,
    );
  const wiring = { ...wiringOf(route.id, route, services, own), operation };
  const get = built(wiring);
  const handler = lambdaHandler(operation, () => get().services);
  return Object.assign(handler, { wiring });
}

/** The part of Lambda's invocation context a function reads: the time left before its timeout. */
export interface LambdaContext {
  getRemainingTimeInMillis(): number;
}

/**
 * An event function's handler (authorizer, ECS events, sweeper, the stream's): `run` gets the
 * services its entry names and its adapters (for what its own handler reads: the stream's WebSocket side, the authorizer's sign-in checks),
 * both held to its declaration, and Lambda's context (absent when a test calls the handler with an event alone).
 */
export function awsFunction<E, R>(
  fn: EventFunctionDef,
  services: ServiceFactories,
  run: (event: E, services: Services, adapters: Adapters, context: LambdaContext | undefined) => Promise<R>,
  own: EntryWiring = {},
): ((event: E, context?: LambdaContext) => Promise<R>) & { wiring: FunctionWiring } {
  const wiring = wiringOf(fn.id, fn, services, own);
  const get = built(wiring);
  const handler = (event: E, context?: LambdaContext) => run(event, get().services, get().adapters, context);
  return Object.assign(handler, { wiring });
}

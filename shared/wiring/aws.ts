/*
 * The AWS wiring of one function. Its entry imports the AWS builders of the adapters it may use
 * from shared/wiring/aws/<resource>.ts (one module per SDK client, so a bundle carries only those)
 * and the factories of the services its code reads from shared/services.ts (so it carries only
 * those classes), and passes them here; shared/wiring/adapters.ts holds each build and call to the
 * declaration.
 */
import type { EventFunctionDef } from '#shared/functions.ts';
import type { Operation } from '#shared/http/operation.ts';
import { lambdaHandler, type ApiHandler } from '#shared/http/wrapper.ts';
import { servicesOf, type ServiceFactories, type Services } from '#shared/services.ts';
import { WiringError, wire, type AdapterName, type Adapters, type Builders } from '#shared/wiring/adapters.ts';
import type { Declaration } from '#shared/wiring/needs.ts';

/** How a function is wired: read by the local gateway (which gives it the local adapters of the same names) and the wiring test. */
export interface FunctionWiring {
  id: string;
  declaration: Declaration;
  /** The adapters its entry lets it build. */
  adapters: AdapterName[];
  /** Their AWS builders. */
  builders: Builders;
  /** The services its code reads (the local gateway builds the same ones). */
  services: ServiceFactories;
  /** The route's operation (routes only). */
  operation?: Operation;
}

/** The adapters and services of one function on AWS, built on first use from the adapters it names, held to its declaration. */
function awsWiring(
  id: string,
  declaration: Declaration,
  builders: Builders,
  services: ServiceFactories,
): () => { adapters: Adapters; services: Services } {
  let built: { adapters: Adapters; services: Services } | undefined;
  return () => {
    if (built) return built;
    const adapters = wire(id, declaration, builders);
    built = { adapters, services: servicesOf(id, adapters, services) };
    return built;
  };
}

const wiringOf = (
  id: string,
  declaration: Declaration,
  builders: Builders,
  services: ServiceFactories,
): FunctionWiring => ({
  id,
  declaration,
  adapters: Object.keys(builders) as AdapterName[],
  builders,
  services,
});

/** A route's Lambda handler: the wrapper around its operation, over the AWS adapters and the services its entry names. */
export function awsRoute(
  operation: Operation,
  builders: Builders,
  services: ServiceFactories = {},
): ApiHandler & { wiring: FunctionWiring } {
  const { route } = operation;
  // The wrapper answers repeats of an idempotent create through these: an entry that forgot them fails at load.
  if (route.idempotent && !(builders.idempotencyStore && services.idempotency))
    throw new WiringError(
      `${route.id}: an idempotent route's entry wires the idempotencyStore adapter and the idempotency service (shared/wiring/aws/idempotency.ts, shared/services/idempotency.ts)`,
    );
  const wiring = awsWiring(route.id, route, builders, services);
  const handler = lambdaHandler(operation, () => wiring().services);
  return Object.assign(handler, { wiring: { ...wiringOf(route.id, route, builders, services), operation } });
}

/** The part of Lambda's invocation context a function reads: the time left before its timeout. */
export interface LambdaContext {
  getRemainingTimeInMillis(): number;
}

/**
 * An event function's handler (authorizer, ECS events, sweeper, the stream's): `run` gets the
 * services its entry names and its adapters (for what only AWS functions build: the stream's WebSocket side),
 * both held to its declaration, and Lambda's context (absent when a test calls the handler with an event alone).
 */
export function awsFunction<E, R>(
  fn: EventFunctionDef,
  builders: Builders,
  services: ServiceFactories,
  run: (event: E, services: Services, adapters: Adapters, context: LambdaContext | undefined) => Promise<R>,
): ((event: E, context?: LambdaContext) => Promise<R>) & { wiring: FunctionWiring } {
  const wiring = awsWiring(fn.id, fn, builders, services);
  const handler = (event: E, context?: LambdaContext) => run(event, wiring().services, wiring().adapters, context);
  return Object.assign(handler, { wiring: wiringOf(fn.id, fn, builders, services) });
}

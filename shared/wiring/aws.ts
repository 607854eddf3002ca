/*
 * The AWS wiring of one function. Its entry imports the AWS builders of the adapters it may use
 * from shared/wiring/aws/<resource>.ts (one module per SDK client, so a bundle carries only those)
 * and passes them here; shared/wiring/adapters.ts holds each build and call to the declaration.
 */
import type { EventFunctionDef } from '#shared/functions.ts';
import type { Operation } from '#shared/http/operation.ts';
import { lambdaHandler, type ApiHandler } from '#shared/http/wrapper.ts';
import { servicesOf, type Services } from '#shared/services.ts';
import { wire, type AdapterName, type Builders } from '#shared/wiring/adapters.ts';
import type { Declaration } from '#shared/wiring/needs.ts';

/** How a function is wired: read by the local gateway (which gives it the local adapters of the same names) and the wiring test. */
export interface FunctionWiring {
  id: string;
  declaration: Declaration;
  /** The adapters its entry lets it build. */
  adapters: AdapterName[];
  /** Their AWS builders. */
  builders: Builders;
  /** The route's operation (routes only). */
  operation?: Operation;
}

/** The services of one function on AWS, built on first use from the adapters it names, held to its declaration. */
function awsServices(id: string, declaration: Declaration, builders: Builders): () => Services {
  let services: Services | undefined;
  return () => (services ??= servicesOf(wire(id, declaration, builders)));
}

/** A route's Lambda handler: the wrapper around its operation, over the AWS adapters its entry names. */
export function awsRoute(operation: Operation, builders: Builders): ApiHandler & { wiring: FunctionWiring } {
  const { route } = operation;
  const handler = lambdaHandler(operation, awsServices(route.id, route, builders));
  return Object.assign(handler, { wiring: { id: route.id, declaration: route, adapters: Object.keys(builders) as AdapterName[], builders, operation } });
}

/** An event function's handler (authorizer, ECS events, sweeper): `run` gets its services, held to its declaration. */
export function awsFunction<E, R>(
  fn: EventFunctionDef,
  builders: Builders,
  run: (event: E, services: Services) => Promise<R>,
): ((event: E) => Promise<R>) & { wiring: FunctionWiring } {
  const services = awsServices(fn.id, fn, builders);
  const handler = (event: E) => run(event, services());
  return Object.assign(handler, { wiring: { id: fn.id, declaration: fn, adapters: Object.keys(builders) as AdapterName[], builders } });
}

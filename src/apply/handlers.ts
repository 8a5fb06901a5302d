import { BASE_HANDLERS, type HandlerTable } from '../resources/converge.js';
import type { ServiceResource } from '../declaration/schema.js';
import type { ResourceHandler } from '../resources/types.js';

/** The service handler (and XState with it) is loaded only by an apply that has services. */
const service = () => import('../services/service.js').then((m) => m.serviceHandler);
const lazyService: ResourceHandler<ServiceResource> = {
  converge: async (resource, ctx, apply) => (await service()).converge(resource, ctx, apply),
  remove: async (record, ctx, apply) => (await service()).remove(record, ctx, apply),
  prepare: async (resources, removing, ctx) => (ctx.services ? (await service()).prepare!(resources, removing, ctx) : undefined),
  verify: async (ctx) => (ctx.services ? (await service()).verify!(ctx) : []),
};

/** Every resource type the host applies. */
export const HANDLERS: HandlerTable = { ...BASE_HANDLERS, service: lazyService };

import { BASE_HANDLERS, type HandlerTable } from '../resources/converge.js';
import type { ArchiveResource, ServiceResource } from '../declaration/schema.js';
import type { ResourceHandler } from '../resources/types.js';

/** The service handler (and XState with it) is loaded only by an apply that has services. */
const service = () => import('../resources/service.js').then((m) => m.serviceHandler);
const lazyService: ResourceHandler<ServiceResource> = {
  converge: async (resource, ctx, apply) => (await service()).converge(resource, ctx, apply),
  remove: async (record, ctx, apply) => (await service()).remove(record, ctx, apply),
  prepare: async (resources, removing, ctx) => (ctx.services ? (await service()).prepare!(resources, removing, ctx) : undefined),
  verify: async (ctx) => (ctx.services ? (await service()).verify!(ctx) : []),
};

/** The archive handler (and node-tar with it) is loaded only by an apply that has archives. */
const archive = () => import('../resources/archive.js').then((m) => m.archiveHandler);
const lazyArchive: ResourceHandler<ArchiveResource> = {
  converge: async (resource, ctx, apply) => (await archive()).converge(resource, ctx, apply),
  remove: async (record, ctx, apply) => (await archive()).remove(record, ctx, apply),
};

/** Every resource type the host applies. */
export const HANDLERS: HandlerTable = { ...BASE_HANDLERS, service: lazyService, archive: lazyArchive };

import type { HandlerTable } from '../../engine/converge/converge.js';

// A test build's deliberate fault (`scripts/release.mjs --fault start|apply`), to try the rollback on a
// real release. A product build defines it empty and the bundler drops what it guards.
declare const __MESH_HOST_FAULT__: string | undefined;

export type BuildFault = '' | 'start' | 'apply';

export function buildFault(): BuildFault {
  return typeof __MESH_HOST_FAULT__ === 'undefined' ? '' : (__MESH_HOST_FAULT__ as BuildFault);
}

/** The handlers, or for a build made to fail its applies, ones whose every apply ends failed. */
export function withBuildFault(handlers: HandlerTable): HandlerTable {
  if (buildFault() !== 'apply') return handlers;
  const failing = { ...handlers.directory!, verify: async () => ({ failures: [{ resource: 'build-fault', message: 'this test build fails every apply (built with --fault apply)' }] }) };
  return { ...handlers, directory: failing };
}

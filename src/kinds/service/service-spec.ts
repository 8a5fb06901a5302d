import { kindSpec } from '../../core/vocabulary/kind-spec.js';
import { inhibitProblems } from '../../core/vocabulary/inhibit-rules.js';
import type { ServiceResource } from './service-schema.js';

export type { ServiceResource } from './service-schema.js';

export const serviceSpec = kindSpec<ServiceResource>({
  type: 'service',
  place: { field: 'unit', what: 'unit', space: 'unit' },
  rules: (service, at) => inhibitProblems(service, at),
  refers: [{ field: 'restartOn', to: ['file', 'archive'] }],
});

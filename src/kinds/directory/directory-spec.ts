import { kindSpec } from '../../core/vocabulary/kind-spec.js';
import type { DirectoryResource } from './directory-schema.js';

export type { DirectoryResource } from './directory-schema.js';

export const directorySpec = kindSpec<DirectoryResource>({
  type: 'directory',
  place: { field: 'path', what: 'path', space: 'path' },
  atPath: {},
});

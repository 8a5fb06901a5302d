import { ArchiveResource } from './archive/archive-schema.js';
import { ContainerResource } from './container/container-schema.js';
import { DirectoryResource } from './directory/directory-schema.js';
import { FileResource } from './file/file-schema.js';
import { GroupResource } from './group/group-schema.js';
import { PackageResource } from './package/package-schema.js';
import { ServiceResource } from './service/service-schema.js';
import { UserResource } from './user/user-schema.js';

/**
 * The registry of kinds, its schema half: each kind's schema (its KIND-schema.ts), by type. Only the
 * schema's users import it: the build of the generated checks (scripts/gen-checks.ts) and the
 * explanation of an invalid declaration, which loads it when it first needs it. Every apply and the
 * daemon read the specs alone (kind-specs.ts) and run the generated checks, so they never load TypeBox.
 * In the order of kind-specs.ts; each schema's Static type is the type its spec is said with
 * (`kindSpec<FileResource>`), and src/core/declaration/schema.ts, which reads both halves, does not
 * compile when a kind is missing here or its schema says another resource than its spec.
 */
export const KIND_SCHEMAS = {
  directory: DirectoryResource,
  file: FileResource,
  archive: ArchiveResource,
  service: ServiceResource,
  container: ContainerResource,
  group: GroupResource,
  user: UserResource,
  package: PackageResource,
};

// The house's floors, as import rules: a folder of src/ imports its own floor and the floors below it,
// never one above. docs/design.md says the same floors in words; `npm run graph` draws them.

/** src/'s folders from the ground up; folders on one floor may import each other, but never in a loop. */
export const FLOORS = [
  ['system'],
  ['config'],
  ['declaration'],
  ['store', 'link', 'setup', 'inventory', 'inhibit'],
  ['archive', 'services', 'containers', 'firewall', 'watch', 'resources'],
  ['report'],
  ['apply', 'metrics', 'fleet'],
  ['page', 'serve'],
  ['release'],
  ['host'],
  ['genesis'],
  ['daemon'],
  ['cli'],
];

/**
 * The resource kinds' handlers in resources/, and the folders that are a kind's library. The engine is
 * the rest of resources/: it plans, orders and applies through the handler table it is given and never
 * imports a kind, so a new kind is its own file, the schema and the table (resources/handlers.ts and
 * host/environment.ts).
 */
export const KINDS = ['file', 'directory', 'archive', 'service'];
export const KIND_LIBRARIES = ['archive', 'services', 'containers', 'firewall', 'watch'];
const KIND_FILES = `^src/resources/(${KINDS.join('|')})\\.ts$`;
const TABLE = '^src/resources/handlers\\.ts$';

const PALETTE = ['#8dd3c7', '#ffffb3', '#bebada', '#fb8072', '#80b1d3', '#fdb462', '#b3de69', '#fccde5', '#d9d9d9', '#bc80bd', '#ccebc5', '#ffed6f'];

const folders = (floors) => `^src/(${floors.flat().join('|')})/`;

const upward = FLOORS.slice(0, -1).map((floor, i) => ({
  name: `floor-${floor.join('-')}`,
  comment: `${floor.join(', ')} may import only what is on its floor or below`,
  severity: 'error',
  from: { path: folders([floor]) },
  to: { path: folders(FLOORS.slice(i + 1)) },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    ...upward,
    {
      name: 'no-folder-cycles',
      comment: 'two folders that import each other are one room, or one of them is on the wrong floor',
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'every-folder-on-a-floor',
      comment: 'a new folder of src/ is given its floor in FLOORS (and docs/design.md) before anything imports it',
      severity: 'error',
      from: {},
      to: { path: '^src/[^/]+/', pathNot: folders(FLOORS) },
    },
    {
      name: 'the-engine-imports-no-kind',
      comment: 'the resource engine reaches the kinds only through the handler table it is given',
      severity: 'error',
      from: { path: '^src/resources/', pathNot: [KIND_FILES, TABLE] },
      to: { path: [KIND_FILES, folders([KIND_LIBRARIES])] },
    },
    {
      name: 'machines-import-xstate-alone',
      comment: 'machines/ are pure definitions: xstate, one another, and the order of declarations (a pure leaf) alone',
      severity: 'error',
      from: { path: '^machines/' },
      to: { pathNot: ['^machines/', '(^|/)node_modules/xstate/', '^src/declaration/order\\.ts$'] },
    },
    {
      name: 'the-order-is-a-leaf',
      comment: 'the machines decide with the order of declarations, so it imports nothing',
      severity: 'error',
      from: { path: '^src/declaration/order\\.ts$' },
      to: {},
    },
    {
      name: 'src-never-imports-outside-src',
      comment: 'src/ imports src/, machines/ and packages: never tests, benchmarks or scripts',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench|scripts|bin)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^dist/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
    reporterOptions: {
      dot: {
        collapsePattern: '^(src/[^/]+|machines)/',
        // One colour a floor (ColorBrewer's Set3, which has twelve), so the picture shows the floors.
        theme: {
          modules: [
            ...FLOORS.map((floor, i) => ({ criteria: { source: folders([floor]) }, attributes: { fillcolor: PALETTE[i % PALETTE.length] } })),
            // machines/ stand on the ground beside system/: they import xstate and the order alone.
            { criteria: { source: '^machines/' }, attributes: { fillcolor: PALETTE[0] } },
          ],
        },
      },
    },
  },
};

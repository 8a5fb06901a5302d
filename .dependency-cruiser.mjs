// The house's floors, as import rules: a folder of src/ imports its own floor and the floors below it,
// never one above. docs/design.md says the same floors in words; `npm run graph` draws them.

/**
 * What a declaration may say of each kind (its spec: schema, rules, words, what the store keeps) and the
 * registry listing them: pure vocabulary, on a floor below the declaration, which reads them. A kind's
 * folder holds its spec and its code (handler, watcher), which stands with the engine: the folder spans
 * two floors, and each file keeps to its own.
 */
const KIND_SPECS = ['kinds/kind-specs\\.ts', 'kinds/[^/]+/[^/]+-spec\\.ts'];
/**
 * Each kind's schema (TypeBox's objects, KIND-schema.ts in the kind's folder) and the registry listing
 * them: below the specs, which import the schema's type alone, and read only by the schema's users (see
 * the rule typebox-only-for-the-schema's-users).
 */
const KIND_SCHEMAS = ['kinds/kind-schemas\\.ts', 'kinds/[^/]+/[^/]+-schema\\.ts'];
/** The kinds' code: everything under kinds/ but the specs and the schemas. */
const KIND_CODE = 'kinds(?!/kind-specs\\.ts$)(?!/[^/]+/[^/]+-spec\\.ts$)(?!/kind-schemas\\.ts$)(?!/[^/]+/[^/]+-schema\\.ts$)';
/**
 * What builds TypeBox's schema objects: the kinds' schemas, the fields they share and the declaration's
 * schema (its head, the kinds' schemas by type). A valid declaration is checked by the generated checks;
 * only the explanation of an invalid one (and the build of those checks) needs these, so nothing else
 * imports them but as types or by a dynamic import(): an apply and the daemon never load TypeBox.
 */
const SCHEMA_MODULES = ['^src/core/vocabulary/fields\\.ts$', '^src/kinds/kind-schemas\\.ts$', '^src/kinds/[^/]+/[^/]+-schema\\.ts$', '^src/core/declaration/schema\\.ts$'];

/**
 * src/'s folders (and the kinds' specs) from the ground up; what stands on one floor may import what
 * stands beside it, never in a circle. Each path says which program it serves: core/ and link/ serve
 * both, machine/ speaks to the machine's own managers (its service manager, its firewall, its
 * inventory), engine/ and kinds/ are the host's converging, host/ is the rest of the host (mesh-host),
 * control/ the control side (meshctl and its page), cli/ the command line both share, programs/ the two
 * programs' entry points.
 */
export const FLOORS = [
  ['core/system'],
  ['core/config'],
  ['core/vocabulary'],
  KIND_SCHEMAS,
  KIND_SPECS,
  ['core/declaration'],
  ['core/store', 'link', 'control/setup', 'machine/inventory', 'engine/inhibit'],
  ['machine/services'],
  ['machine/filters'],
  ['engine/converge', KIND_CODE],
  ['engine/report'],
  ['engine/apply', 'host/watch', 'host/metrics', 'control/fleet'],
  ['control/page', 'control/serve'],
  ['host/release'],
  ['host/env'],
  ['host/genesis'],
  ['host/daemon'],
  ['cli'],
  ['host/commands', 'control/commands'],
  ['programs'],
];

const PALETTE = ['#8dd3c7', '#ffffb3', '#bebada', '#fb8072', '#80b1d3', '#fdb462', '#b3de69', '#fccde5', '#d9d9d9', '#bc80bd', '#ccebc5', '#ffed6f'];

/** What stands on these floors: a folder (and what is below it), or a file. */
const folders = (floors) => `^src/(?:${floors.flat().join('|')})(?:/|$)`;
/** A floor's places as a person reads them: `kinds/*-spec.ts`, not the pattern. */
const said = (place) => place.replace(/\(\?!.*$/, '').replaceAll('\\.', '.').replaceAll('[^/]+', '*');

const upward = FLOORS.slice(0, -1).map((floor, i) => ({
  name: `floor-${floor.map(said).join('-')}`,
  comment: `${floor.map(said).join(', ')} may import only what is on its floor or below`,
  severity: 'error',
  from: { path: folders([floor]) },
  to: { path: folders(FLOORS.slice(i + 1)) },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    ...upward,
    {
      name: 'no-circular',
      comment: 'no module reaches itself through its imports, inside a folder or across folders: a circle is one piece of code cut in two, or a file on the wrong floor',
      severity: 'error',
      from: { path: '^(src|machines)/' },
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
      comment: 'the resource engine reaches the kinds\' code only through the handler table it is given (it may read their vocabulary, the specs)',
      severity: 'error',
      from: { path: '^src/engine/' },
      to: { path: folders([[KIND_CODE]]) },
    },
    {
      name: "typebox-only-for-the-schema's-users",
      comment:
        "TypeBox and the schema objects are imported only by the schema's own modules, or by a dynamic import() where an invalid declaration is explained: an apply of a valid one and the daemon's start never load them (types alone may be imported anywhere)",
      severity: 'error',
      from: { path: '^src/', pathNot: SCHEMA_MODULES },
      to: { path: ['(^|/)node_modules/typebox/', ...SCHEMA_MODULES], dependencyTypesNot: ['type-only', 'dynamic-import'] },
    },
    {
      name: 'machines-import-xstate-alone',
      comment: 'machines/ are pure definitions: xstate, one another, and the order of declarations (a pure leaf) alone',
      severity: 'error',
      from: { path: '^machines/' },
      to: { pathNot: ['^machines/', '(^|/)node_modules/xstate/', '^src/core/declaration/order\\.ts$'] },
    },
    {
      name: 'the-order-is-a-leaf',
      comment: 'the machines decide with the order of declarations, so it imports nothing',
      severity: 'error',
      from: { path: '^src/core/declaration/order\\.ts$' },
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
        collapsePattern: '^(src/(core|machine|engine|kinds|host|control)/[^/]+|src/[^/]+|machines)/',
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

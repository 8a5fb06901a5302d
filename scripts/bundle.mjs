// How a program becomes one CommonJS script: the same for the checkout's dist/bin (run by bin/NAME) and
// for a release's single executable (scripts/release.mjs), so what the tests run is what ships.
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * Packages a command needs only now and then (the link, an archive, a service's watch, metrics, an
 * invalid declaration's explanation, the installer's copies), kept out of dist/bin's program scripts:
 * each group is a script of its own (dist/bin/apart/GROUP.cjs), read at the first use of one of its
 * packages. Every start reads and keeps its program's script whole, and these are two thirds of it. A
 * group holds packages that share modules (the NATS clients share their core), so that each module
 * still exists once in a process. A single executable has no files beside it and carries them all.
 */
export const APART = {
  nats: ['@nats-io/transport-node', '@nats-io/jetstream', '@nats-io/kv', '@nats-io/obj', '@nats-io/nkeys'],
  typebox: ['typebox', 'typebox/compile'],
  tar: ['tar'],
  xstate: ['xstate'],
  'prom-client': ['prom-client'],
  diff: ['diff'],
  'fs-extra': ['fs-extra/esm'],
  dockerode: ['dockerode'],
};

/**
 * Native addons that dockerode's SSH transport tries to load and does without (it is never used: the
 * engine is reached over its socket); npm does not build them here either. Each becomes a module that
 * fails as a missing file does. Left to a require at run time, it would be the single executable's,
 * which loads only Node's own modules and prints a warning to every apply that declares a container.
 */
const absentAddons = {
  name: 'absent-addons',
  setup(b) {
    b.onResolve({ filter: /\.node$/ }, (args) => ({ path: args.path, namespace: 'absent-addon' }));
    b.onLoad({ filter: /.*/, namespace: 'absent-addon' }, (args) => ({
      contents: `throw Object.assign(new Error(${JSON.stringify(`Cannot find module '${args.path}'`)}), { code: 'MODULE_NOT_FOUND' });`,
      loader: 'js',
    }));
  },
};

const common = {
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  packages: 'bundle',
  // Smaller scripts parse faster; names are kept so stack traces still read.
  minify: true,
  keepNames: true,
  legalComments: 'none',
  plugins: [absentAddons],
};

/**
 * esbuild's options for a program (mesh-host or meshctl): `entry`, the source module whose exports
 * the script's are, or `stdin`, a script that runs it (a single executable has no caller to call its
 * main). Every import(), builtins included, becomes a require(): a command's modules are still
 * evaluated when first needed. `apart`: the packages of APART are required from their groups' scripts.
 */
export function programBundle({ stdin, entry, outfile, info, fault = '', apart = false }) {
  return {
    ...common,
    ...(stdin ? { stdin: { contents: stdin, resolveDir: resolve('.'), loader: 'js' } } : { entryPoints: [entry] }),
    outfile,
    supported: { 'dynamic-import': false },
    plugins: [...common.plugins, ...(apart ? [requireApart] : [])],
    // esbuild warns that import.meta is empty in CommonJS: its one use is for the unbundled run, which
    // the build's version (the define below) replaces.
    logLevel: 'error',
    // `--version` prints the version and the commit this was built from; a test release may carry a fault.
    define: { __MESH_HOST_BUILD__: JSON.stringify(info), __MESH_HOST_FAULT__: JSON.stringify(fault) },
  };
}

/** esbuild's options for one group of APART: its packages, each evaluated at its first use. */
export function apartBundle(group, outfile) {
  const members = APART[group].map((name) => `  get ${JSON.stringify(name)}() { return require(${JSON.stringify(name)}); },`);
  return { ...common, stdin: { contents: `module.exports = {\n${members.join('\n')}\n};\n`, resolveDir: resolve('.'), loader: 'js' }, outfile, logLevel: 'warning' };
}

const groupOf = new Map(Object.entries(APART).flatMap(([group, names]) => names.map((name) => [name, group])));
const exactly = new RegExp(`^(${[...groupOf.keys()].map((n) => n.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|')})$`);

/** An import of an APART package becomes a require of its group's script, found beside the program's. */
const requireApart = {
  name: 'require-apart',
  setup(b) {
    b.onResolve({ filter: exactly }, (args) => ({ path: args.path, namespace: 'apart' }));
    b.onResolve({ filter: /^\.\/apart\//, namespace: 'apart' }, (args) => ({ path: args.path, external: true }));
    b.onLoad({ filter: /.*/, namespace: 'apart' }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(`./apart/${groupOf.get(args.path)}.cjs`)})[${JSON.stringify(args.path)}];`,
      loader: 'js',
    }));
  },
};

/**
 * esbuild escapes what is not ASCII in strings but not in regular expressions (a package's duration
 * parser has a µ): one such character makes Node read the whole script as two-byte text, 25 ms of
 * decoding at every start here, and doubles what V8 keeps of the source. Escaped, it means the same
 * in a regular expression, a string or an identifier.
 */
export function asciiOnly(file) {
  const text = readFileSync(file, 'utf8');
  const escaped = text.replace(/[^\t\n\r\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  if (escaped !== text) writeFileSync(file, escaped);
}

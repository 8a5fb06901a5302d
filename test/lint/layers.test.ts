import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const project = resolve(import.meta.dirname, '../..');

/** The dependency-cruiser command `npm run lint` runs, as package.json says it. */
function lintLayersCommand(): string[] {
  const lint = (JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.lint!;
  const step = lint.split('&&').map((s) => s.trim()).find((s) => s.startsWith('depcruise '));
  if (!step) throw new Error(`npm run lint (${lint}) runs no depcruise`);
  return step.split(/\s+/).slice(1);
}

/** Every tree has both folders the command names: a clock on the ground floor and a machine. */
const ground = { 'src/core/system/clock.ts': 'export const now = (): number => Date.now();\n' };
const machine = { 'machines/m.ts': "import { setup } from 'xstate';\nexport const m = setup({}).createMachine({});\n" };

let dirs: string[] = [];
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

/**
 * A tree of the given files beside the project's own rules and tsconfig, checked by the lint's own
 * depcruise command: what it would say of that code in src/.
 */
async function lintTree(files: Record<string, string>): Promise<{ failed: boolean; output: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-layers-'));
  dirs.push(dir);
  for (const name of ['.dependency-cruiser.mjs', 'tsconfig.json']) copyFileSync(join(project, name), join(dir, name));
  // The packages resolve as they do in the project (xstate is a package in node_modules, not a name).
  symlinkSync(join(project, 'node_modules'), join(dir, 'node_modules'));
  for (const [path, text] of Object.entries({ ...ground, ...machine, ...files })) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  const bin = join(project, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, ...lintLayersCommand()], { cwd: dir });
    return { failed: false, output: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    if (typeof e.code !== 'number') throw err;
    return { failed: true, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}


describe('the lint keeps the floors', () => {
  it('passes code whose imports go down the floors', async () => {
    const { failed, output } = await lintTree({
      'src/cli/run-program.ts': "import { now } from '../core/system/clock.js';\nimport { m } from '../../machines/m.js';\nexport const started = [now(), m];\n",
    });
    expect(output).toContain('no dependency violations');
    expect(failed).toBe(false);
  });

  it('fails a new upward import, naming the floor and the import', async () => {
    const { failed, output } = await lintTree({
      'src/cli/run-program.ts': 'export const version = 1;\n',
      'src/core/system/clock.ts': "import { version } from '../../cli/run-program.js';\nexport const now = (): number => Date.now() + version;\n",
    });
    expect(failed).toBe(true);
    expect(output).toMatch(/error floor-core\/system: src\/core\/system\/clock\.ts → src\/cli\/run-program\.ts/);
  });

  it('fails an upward import that is a type alone', async () => {
    const { failed, output } = await lintTree({
      'src/core/store/store.ts': 'export interface Store { n: number }\n',
      'src/core/config/config.ts': "import type { Store } from '../store/store.js';\nexport const empty = (s: Store): number => s.n;\n",
    });
    expect(failed).toBe(true);
    expect(output).toContain('error floor-core/config: src/core/config/config.ts → src/core/store/store.ts');
  });

  it('fails two folders of one floor that import each other', async () => {
    const { failed, output } = await lintTree({
      'src/kinds/archive/a.ts': "import { b } from '../service/b.js';\nexport const a = (): number => b() + 1;\n",
      'src/kinds/service/b.ts': "import { a } from '../archive/a.js';\nexport const b = (): number => 2;\nexport const c = a;\n",
    });
    expect(failed).toBe(true);
    expect(output).toMatch(/error no-circular: src\/kinds\/(archive\/a|service\/b)\.ts/);
  });

  it("keeps a kind's spec below the declaration: it may not reach its kind's code, and the engine may read it", async () => {
    const { failed, output } = await lintTree({
      'src/kinds/file/file-handler.ts': 'export const write = 1;\n',
      'src/kinds/file/file-spec.ts': "import { write } from './file-handler.js';\nexport const fileSpec = { type: 'file', write };\n",
      'src/kinds/kind-specs.ts': "import { fileSpec } from './file/file-spec.js';\nexport const KIND_SPECS = [fileSpec];\n",
      'src/core/declaration/schema.ts': "import { KIND_SPECS } from '../../kinds/kind-specs.js';\nexport const kinds = KIND_SPECS;\n",
      'src/engine/report/words.ts': "import { KIND_SPECS } from '../../kinds/kind-specs.js';\nexport const words = KIND_SPECS;\n",
    });
    expect(failed).toBe(true);
    expect(output).toContain('error floor-kinds/kind-specs.ts-kinds/*/*-spec.ts: src/kinds/file/file-spec.ts → src/kinds/file/file-handler.ts');
    expect(output).not.toContain('src/core/declaration/schema.ts →');
    expect(output).not.toContain('src/engine/report/words.ts →');
  });

  it("keeps TypeBox with the schema's users: a kind's spec and the engine import a schema's type alone, the explanation by import()", async () => {
    const schema = "import Type, { type Static } from 'typebox';\nexport const FileResource = Type.Object({ type: Type.Literal('file') });\nexport type FileResource = Static<typeof FileResource>;\n";
    const registry = "import { FileResource } from './file/file-schema.js';\nexport const KIND_SCHEMAS = { file: FileResource };\n";
    const allowed = {
      'src/kinds/file/file-schema.ts': schema,
      'src/kinds/kind-schemas.ts': registry,
      'src/kinds/file/file-spec.ts': "import type { FileResource } from './file-schema.js';\nexport const fileSpec = { type: 'file', rules: (r: FileResource) => [r.type] };\n",
      'src/core/declaration/schema.ts': "import { KIND_SCHEMAS } from '../../kinds/kind-schemas.js';\nexport const RESOURCE_SCHEMAS = KIND_SCHEMAS;\n",
      'src/core/declaration/validate.ts':
        "export async function explain(): Promise<unknown> {\n  const [{ Compile }, { RESOURCE_SCHEMAS }] = await Promise.all([import('typebox/compile'), import('./schema.js')]);\n  return Compile(RESOURCE_SCHEMAS.file);\n}\n",
    };
    const passed = await lintTree(allowed);
    expect(passed.output).not.toContain('typebox-only');
    expect(passed.failed, passed.output).toBe(false);

    const { failed, output } = await lintTree({
      ...allowed,
      'src/kinds/file/file-spec.ts': "import { FileResource } from './file-schema.js';\nexport const fileSpec = { type: 'file', schema: FileResource };\n",
      'src/kinds/archive/archive-spec.ts': "import Type from 'typebox';\nexport const archiveSpec = { type: 'archive', schema: Type.String() };\n",
      'src/engine/report/words.ts': "import { KIND_SCHEMAS } from '../../kinds/kind-schemas.js';\nexport const words = Object.keys(KIND_SCHEMAS);\n",
    });
    expect(failed).toBe(true);
    expect(output).toContain("error typebox-only-for-the-schema's-users: src/kinds/file/file-spec.ts → src/kinds/file/file-schema.ts");
    expect(output).toMatch(/error typebox-only-for-the-schema's-users: src\/kinds\/archive\/archive-spec\.ts → \S*node_modules\/typebox\//);
    expect(output).toContain("error typebox-only-for-the-schema's-users: src/engine/report/words.ts → src/kinds/kind-schemas.ts");
    expect(output).not.toContain('src/core/declaration/validate.ts →');
    expect(output).not.toContain('src/core/declaration/schema.ts →');
  });

  it('fails two files of one folder that import each other', async () => {
    const { failed, output } = await lintTree({
      'src/engine/apply/a.ts': "import type { B } from './b.js';\nexport interface A { b?: B }\n",
      'src/engine/apply/b.ts': "import type { A } from './a.js';\nexport interface B { a?: A }\n",
    });
    expect(failed).toBe(true);
    expect(output).toMatch(/error no-circular: src\/engine\/apply\/[ab]\.ts/);
  });

  it('fails the resource engine importing a kind, and passes the kinds\' table that does', async () => {
    const { failed, output } = await lintTree({
      'src/kinds/file/file-handler.ts': 'export const fileHandler = { type: 1 };\n',
      'src/kinds/kind-handlers.ts': "import { fileHandler } from './file/file-handler.js';\nexport const BASE_HANDLERS = { file: fileHandler };\n",
      'src/engine/converge/converge.ts': "import { fileHandler } from '../../kinds/file/file-handler.js';\nexport const plan = () => fileHandler.type;\n",
      'src/kinds/archive/archive-read.ts': 'export const read = 1;\n',
      'src/engine/apply/apply.ts': "import { read } from '../../kinds/archive/archive-read.js';\nexport const t = read;\n",
    });
    expect(failed).toBe(true);
    expect(output).toContain('error the-engine-imports-no-kind: src/engine/converge/converge.ts → src/kinds/file/file-handler.ts');
    expect(output).toContain('error the-engine-imports-no-kind: src/engine/apply/apply.ts → src/kinds/archive/archive-read.ts');
    expect(output).not.toContain('src/kinds/kind-handlers.ts →');
  });

  it('fails a machine that imports more than xstate, and a folder given no floor', async () => {
    const { failed, output } = await lintTree({
      'machines/m.ts': "import { setup } from 'xstate';\nimport { now } from '../src/core/system/clock.js';\nexport const m = setup({}).createMachine({ context: { at: now() } });\n",
      'src/attic/old.ts': 'export const old = 1;\n',
      'src/cli/run-program.ts': "import { old } from '../attic/old.js';\nexport const x = old;\n",
    });
    expect(failed).toBe(true);
    expect(output).toContain('error machines-import-xstate-alone: machines/m.ts → src/core/system/clock.ts');
    expect(output).toContain('error every-folder-on-a-floor: src/cli/run-program.ts → src/attic/old.ts');
  });
});

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
const ground = { 'src/system/clock.ts': 'export const now = (): number => Date.now();\n' };
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
      'src/cli/main.ts': "import { now } from '../system/clock.js';\nimport { m } from '../../machines/m.js';\nexport const started = [now(), m];\n",
    });
    expect(output).toContain('no dependency violations');
    expect(failed).toBe(false);
  });

  it('fails a new upward import, naming the floor and the import', async () => {
    const { failed, output } = await lintTree({
      'src/cli/main.ts': 'export const version = 1;\n',
      'src/system/clock.ts': "import { version } from '../cli/main.js';\nexport const now = (): number => Date.now() + version;\n",
    });
    expect(failed).toBe(true);
    expect(output).toMatch(/error floor-system: src\/system\/clock\.ts → src\/cli\/main\.ts/);
  });

  it('fails an upward import that is a type alone', async () => {
    const { failed, output } = await lintTree({
      'src/store/store.ts': 'export interface Store { n: number }\n',
      'src/config/config.ts': "import type { Store } from '../store/store.js';\nexport const empty = (s: Store): number => s.n;\n",
    });
    expect(failed).toBe(true);
    expect(output).toContain('error floor-config: src/config/config.ts → src/store/store.ts');
  });

  it('fails two folders of one floor that import each other', async () => {
    const { failed, output } = await lintTree({
      'src/archive/a.ts': "import { b } from '../services/b.js';\nexport const a = (): number => b() + 1;\n",
      'src/services/b.ts': "import { a } from '../archive/a.js';\nexport const b = (): number => 2;\nexport const c = a;\n",
    });
    expect(failed).toBe(true);
    expect(output).toContain('no-folder-cycles');
  });

  it('fails the resource engine importing a kind, and passes the handler table that does', async () => {
    const { failed, output } = await lintTree({
      'src/resources/file.ts': 'export const fileHandler = { type: 1 };\n',
      'src/resources/handlers.ts': "import { fileHandler } from './file.js';\nexport const BASE_HANDLERS = { file: fileHandler };\n",
      'src/resources/converge.ts': "import { fileHandler } from './file.js';\nexport const plan = () => fileHandler.type;\n",
      'src/archive/read.ts': 'export const read = 1;\n',
      'src/resources/types.ts': "import { read } from '../archive/read.js';\nexport const t = read;\n",
    });
    expect(failed).toBe(true);
    expect(output).toContain('error the-engine-imports-no-kind: src/resources/converge.ts → src/resources/file.ts');
    expect(output).toContain('error the-engine-imports-no-kind: src/resources/types.ts → src/archive/read.ts');
    expect(output).not.toContain('src/resources/handlers.ts →');
  });

  it('fails a machine that imports more than xstate, and a folder given no floor', async () => {
    const { failed, output } = await lintTree({
      'machines/m.ts': "import { setup } from 'xstate';\nimport { now } from '../src/system/clock.js';\nexport const m = setup({}).createMachine({ context: { at: now() } });\n",
      'src/attic/old.ts': 'export const old = 1;\n',
      'src/cli/main.ts': "import { old } from '../attic/old.js';\nexport const x = old;\n",
    });
    expect(failed).toBe(true);
    expect(output).toContain('error machines-import-xstate-alone: machines/m.ts → src/system/clock.ts');
    expect(output).toContain('error every-folder-on-a-floor: src/cli/main.ts → src/attic/old.ts');
  });
});

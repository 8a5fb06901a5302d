import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jsonSyntaxMessage } from '../../src/core/declaration/json-syntax.js';
import { validateDeclaration } from '../../src/core/declaration/validate.js';
import { runCli } from '../support/cli.js';
import { scratch } from '../support/tree.js';

/**
 * What a refused declaration says, read by the person who wrote it: the values a choice allows, the type
 * wanted and the one found, a JSON syntax error by line and column.
 */
const problems = async (value: unknown) => {
  const checked = await validateDeclaration(value);
  if (checked.ok) throw new Error('expected a refusal');
  return checked.problems.map((p) => `${p.path}: ${p.message}`);
};
const head = { node: 'web-1', mode: 'converged', sequence: 1 };

describe('validation messages', () => {
  it('a version given as a string says the number wanted and what was found', async () => {
    expect(await problems({ ...head, version: '1', resources: [] })).toEqual(['/version: must be the number 1, not the string "1"']);
    expect(await problems({ ...head, version: 2, resources: [] })).toEqual(['/version: unknown version 2 (this host speaks version 1)']);
  });

  it('a choice of values is said once, with every value it allows and the one found', async () => {
    expect(await problems({ ...head, version: 1, resources: [{ type: 'service', id: 's', unit: 'a.service', state: 'runing' }] })).toEqual([
      '/resources/0/state: must be one of "running", "stopped", not the string "runing"',
    ]);
  });

  it('a wrong type names the type wanted and the value found', async () => {
    expect(await problems({ ...head, version: 1, resources: [{ type: 'file', id: 'f', path: '/srv/f', content: 'x', mode: 644 }] })).toEqual([
      '/resources/0/mode: must be string, not the number 644',
    ]);
  });

  it('a JSON syntax error is said by line and column', () => {
    const text = '{\n  "version": 1,\n  node: "web-1"\n}';
    let err: unknown;
    try {
      JSON.parse(text);
    } catch (e) {
      err = e;
    }
    expect(jsonSyntaxMessage(text, err)).toMatch(/at line 3, column 3$/);
  });

  it('mesh-host apply of a file with a syntax error names the line and column, exit 3', async () => {
    const work = scratch();
    try {
      const file = join(work.dir, 'd.json');
      writeFileSync(file, '{\n  "version": 1,\n  "node": "web-1",\n  "mode": "converged",\n  "resources": [\n    { "type": "file", }\n  ]\n}\n');
      const run = await runCli('mesh-host', ['apply', file, '--dry-run', '--root', join(work.dir, 'root'), '--state-dir', join(work.dir, 'state'), '--config', join(work.dir, 'host.json'), '--log-level', 'warn']);
      expect(run.code).toBe(3);
      expect(run.stderr).toMatch(/is not JSON: .* at line 6, column 23/);
      expect(run.stderr).not.toMatch(/position \d+/);
    } finally {
      work.cleanup();
    }
  });
});

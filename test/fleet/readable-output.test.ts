import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { natsUnavailable } from '../support/nats.js';
import { initMesh, untilFile, type InitHost, type InitMesh } from '../support/mesh-init.js';
import { projectDir } from '../support/cli.js';
import { systemRunner } from '../../src/core/system/runner.js';

const unavailable = natsUnavailable();

const TIME = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z';

describe.skipIf(unavailable !== undefined && !process.env.CI)(`meshctl reports, history and status NODE as lines a person reads, with filters, against a real daemon${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  let mesh: InitMesh;
  let web1: InitHost;
  let between: string;
  const meshctl = async (args: string[], code = 0) => {
    const r = await mesh.meshctl([...args, '--log-level', 'warn']);
    expect(r.code, `meshctl ${args.join(' ')}\n${r.stderr}\n${r.stdout}`).toBe(code);
    return r;
  };
  const send = (name: string, resources: object[]) => {
    const path = join(mesh.dir, '..', `${name}.json`);
    writeFileSync(path, JSON.stringify({ version: 1, mode: 'converged', resources }));
    return meshctl(['send', path, '--nodes', 'web-1']);
  };
  const reportCount = async () => (await meshctl(['reports', '--node', 'web-1'])).stdout.trim().split('\n').length;
  const untilReports = async (n: number) => {
    const started = Date.now();
    while ((await reportCount()) < n) {
      if (Date.now() - started > 30_000) throw new Error(`fewer than ${n} reports:\n${web1.log().slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  beforeAll(async () => {
    mesh = await initMesh();
    web1 = await mesh.enrol('web-1', { labels: ['role=web'] });
    await untilReports(1);
    await send('a', [{ type: 'file', id: 'conf', path: '/srv/app.conf', content: 'a\n' }, { type: 'file', id: 'motd', path: '/srv/motd', content: 'hi\n' }]);
    await untilFile(web1, 'srv/app.conf', 'a\n');
    await untilReports(2);
    between = new Date().toISOString();
    // A failure: the second file's parent is a file.
    await send('b', [{ type: 'file', id: 'conf', path: '/srv/app.conf', content: 'b\n' }, { type: 'file', id: 'under', path: '/srv/motd/x', content: 'x' }]);
    await untilReports(3);
  }, 180_000);
  afterAll(async () => {
    await mesh?.close();
  });

  it('into a pipe, reports stay JSON lines as before; --text (and a terminal) gives one line a report and a line a step that did something', async () => {
    const piped = (await meshctl(['reports', '--node', 'web-1'])).stdout.trim().split('\n');
    expect(piped.map((l) => (JSON.parse(l) as { sequence: number }).sequence)).toEqual([1, 2, 3]);
    const text = (await meshctl(['reports', '--node', 'web-1', '--text'])).stdout;
    expect(text).toMatch(new RegExp(`^${TIME}  web-1  report 1: genesis converged \\(no steps\\), declaration sequence 1$`, 'm'));
    expect(text).toMatch(new RegExp(`^${TIME}  web-1  report 2: delivery converged \\(2 done\\), declaration sequence 2\\n  done     create /srv/app.conf \\[file conf\\]\\n  done     create /srv/motd \\[file motd\\]$`, 'm'));
    expect(text).toMatch(new RegExp(`^${TIME}  web-1  report 3: delivery refused \\(no steps\\), declaration sequence 3\\n  error: .*under \\(/srv/motd/x\\): /srv/motd is not a directory$`, 'm'));
    // A terminal gets the lines without asking (the program sees a tty).
    const tty = await systemRunner().run('script', ['-qec', `${process.execPath} ${join(projectDir, 'bin/meshctl')} reports --node web-1 --mesh ${mesh.dir} --log-level warn`, '/dev/null'], { timeoutMs: 30_000 });
    expect(tty.stdout.replace(/\r/g, '')).toMatch(/^.*web-1 {2}report 2: delivery converged \(2 done\), declaration sequence 2$/m);
  }, 60_000);

  it('--since, --until, --outcome and --resource choose the reports (and, for a resource, its steps alone), in both forms', async () => {
    const seqs = async (args: string[]) =>
      (await meshctl(['reports', '--node', 'web-1', '--json', ...args])).stdout
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { sequence: number }).sequence);
    expect(await seqs(['--since', between])).toEqual([3]);
    expect(await seqs(['--until', between])).toEqual([1, 2]);
    expect(await seqs(['--outcome', 'converged'])).toEqual([1, 2]);
    expect(await seqs(['--resource', 'motd'])).toEqual([2]);
    expect(await seqs(['--resource', '/srv/app.conf'])).toEqual([2]);
    expect(await seqs(['--outcome', 'refused,failed'])).toEqual([3]);
    expect(await seqs(['--since', '1h', '--outcome', 'converged'])).toEqual([1, 2]);
    expect(await seqs(['--since', '2026-01-01', '--until', '2020-01-01'])).toEqual([]);
    const one = (await meshctl(['reports', '--node', 'web-1', '--text', '--resource', 'motd'])).stdout.trim().split('\n');
    expect(one).toHaveLength(2);
    expect(one[1]).toBe('  done     create /srv/motd [file motd]');
    const wrong = await meshctl(['reports', '--outcome', 'fine'], 2);
    expect(wrong.stderr).toMatch(/--outcome fine: 'fine' is not one of converged, failed, refused/);
    const when = await meshctl(['reports', '--since', 'last week'], 2);
    expect(when.stderr).toMatch(/--since last week: a time ago \(30m, 12h, 7d, 2w\), a day \(2026-12-01\) or a time/);
  }, 60_000);

  it('status NODE says the host in lines with --text (a pipe keeps its indented JSON); history filters by outcome', async () => {
    const text = (await meshctl(['status', 'web-1', '--text'])).stdout;
    expect(text).toMatch(/^node: {12}web-1$/m);
    expect(text).toMatch(/^state: {11}serving \(mode converged, link up, .*\)$/m);
    expect(text).toMatch(/^last applied: {4}sequence 2, at /m);
    expect(text).toMatch(/^report sequence: 3$/m);
    const piped = JSON.parse((await meshctl(['status', 'web-1'])).stdout) as { node: string; reportSequence: number };
    expect(piped).toMatchObject({ node: 'web-1', reportSequence: 3 });
    const converged = (await meshctl(['history', 'web-1', '--outcome', 'converged', '--text'])).stdout;
    expect(converged).toMatch(/^web-1: 2 of 3 declarations kept/m);
    expect(converged).toMatch(/^sequence 1 /m);
    expect(converged).toMatch(/^sequence 2 /m);
    expect(converged).not.toMatch(/^sequence 3 /m);
  }, 60_000);
});

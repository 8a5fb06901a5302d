import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectDir } from '../support/cli.js';

describe('output read by a pipe whose reader stopped', () => {
  it.each(['meshctl', 'mesh-host'] as const)('%s ends quietly with its status, no stack trace', async (program) => {
    const child = spawn(process.execPath, [join(projectDir, 'bin', program), '--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
    // The reader goes away before the program has written anything: its write meets a closed pipe.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });
});

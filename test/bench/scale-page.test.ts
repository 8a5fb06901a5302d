import { describe, expect, it } from 'vitest';
import { scaleAnalysis, type Figures } from '../../bench/scale-page.js';

const pinned = (cpu: Figures['reportCpu'], allReportedS: number): Figures => ({
  hosts: 10_000,
  servers: 1,
  perProcess: 2500,
  pinned: true,
  files: '20,000 open files allowed',
  loadBefore: '1 1 1',
  loadAfter: '1 1 1',
  connectS: 50,
  putS: 2.7,
  allReportedS,
  connectCpu: { server: 1, hosts: 1, control: 1 },
  reportCpu: cpu,
  serverRssMb: 900,
  hostsRssMb: 1000,
  status: [{ s: 2, cpuS: 1, rssMb: 200, serverCpuS: 1 }],
});

const pinnedLine = (f: Figures) => scaleAnalysis([f]).find((line) => line.startsWith('- Pinned'));

describe("the scale page's pinned run", () => {
  it('names the simulated hosts as the limit when their core is the busier, and halves their CPU for one more core', () => {
    const line = pinnedLine(pinned({ server: 5, hosts: 17, control: 1.6 }, 17.6));
    expect(line).toContain("the hosts' core was 97% busy");
    expect(line).toContain('so the simulated hosts are the limit, measured');
    expect(line).toContain('about 8.5 s to all reported');
    expect(line).toContain('target 10 s: inside it');
  });

  it('names the servers as the limit when theirs is the busier, and says when one more core still misses', () => {
    const line = pinnedLine(pinned({ server: 22, hosts: 8, control: 2 }, 24.5));
    expect(line).toContain('so the servers and the control side are the limit, measured');
    expect(line).toContain('One more core for the servers would spread their 24.0 s over two');
    expect(line).toContain('about 12.0 s to all reported');
    expect(line).toContain('still outside it');
  });

  it('says nothing of cores for a run that was not pinned', () => {
    expect(pinnedLine({ ...pinned({ server: 5, hosts: 17, control: 1.6 }, 17.6), pinned: false })).toBeUndefined();
  });
});

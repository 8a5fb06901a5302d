import { describe, expect, it } from 'vitest';
import { parseShow } from '../../src/machine/services/systemd.js';

// As systemctl show -p … prints it for two units (its own property order, a blank line between).
const output = `Id=dies.service
Result=exit-code
NRestarts=0
MainPID=0
LoadState=loaded
ActiveState=failed
SubState=failed
UnitFileState=disabled
InvocationID=a5872dc5f8374581b399c71acb182ca3
Job=

Id=nothere.service
Result=success
NRestarts=0
MainPID=0
LoadState=not-found
ActiveState=inactive
SubState=dead
UnitFileState=
InvocationID=
Job=
`;

describe('systemctl show, batched', () => {
  it('parses each unit of one call', () => {
    const states = parseShow(output, ['dies.service', 'nothere.service']);
    expect(states.get('dies.service')).toEqual({
      unit: 'dies.service', loadState: 'loaded', activeState: 'failed', subState: 'failed', result: 'exit-code',
      unitFileState: 'disabled', invocationId: 'a5872dc5f8374581b399c71acb182ca3', nRestarts: 0, mainPid: 0, job: '',
    });
    expect(states.get('nothere.service')).toMatchObject({ loadState: 'not-found', activeState: 'inactive' });
  });

  it('refuses an answer that does not match the units asked', () => {
    expect(() => parseShow(output, ['a.service'])).toThrow(/answered 2 units for 1 asked/);
  });
});

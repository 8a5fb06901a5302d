import { describe, expect, it } from 'vitest';
import { problemsBeside } from '../support/declaration-problems.js';

const service = (extra: object = {}) => ({ type: 'service', id: 'app', unit: 'app.service', state: 'running', restartOn: ['conf'], ...extra });
const container = (extra: object = {}) => ({ type: 'container', id: 'web', name: 'web', image: { ref: `registry.example/app@sha256:${'a'.repeat(64)}` }, state: 'running', ...extra });

describe('a lock that holds off a restart (inhibitWhile, inhibitMaxMs)', () => {
  it('is accepted on a service and on a container, with or without its bound', async () => {
    expect(await problemsBeside(service({ inhibitWhile: '/run/app/busy.lock' }), container({ inhibitWhile: '/run/web/busy.lock', inhibitMaxMs: 30_000 }))).toEqual([]);
  });

  const cases: Array<[string, object, string, RegExp]> = [
    ['a relative lock path', { inhibitWhile: 'run/app.lock' }, '/resources/1/inhibitWhile', /pattern|not absolute/],
    ['a lock path not normal', { inhibitWhile: '/run/../etc/shadow' }, '/resources/1/inhibitWhile', /not a normal path/],
    ['the root as a lock', { inhibitWhile: '/' }, '/resources/1/inhibitWhile', /./],
    ['a lock path that is not a string', { inhibitWhile: 7 }, '/resources/1/inhibitWhile', /./],
    ['a negative bound', { inhibitWhile: '/run/a.lock', inhibitMaxMs: -1 }, '/resources/1/inhibitMaxMs', /./],
    ['a bound that is not a whole number', { inhibitWhile: '/run/a.lock', inhibitMaxMs: 1.5 }, '/resources/1/inhibitMaxMs', /./],
    ['a bound of more than a week', { inhibitWhile: '/run/a.lock', inhibitMaxMs: 8 * 24 * 3_600_000 }, '/resources/1/inhibitMaxMs', /./],
    ['a bound without a lock', { inhibitMaxMs: 1000 }, '/resources/1/inhibitMaxMs', /no inhibitWhile names one/],
    ['a misspelt field', { inhibitWhen: '/run/a.lock' }, '/resources/1/inhibitWhen', /unknown field/],
  ];
  for (const [kind, make] of [['service', service], ['container', container]] as const) {
    it.each(cases)(`${kind}: %s refuses the whole declaration, naming its JSON path`, async (_what, extra, path, message) => {
      const problems = await problemsBeside(make(extra));
      expect(problems.map((p) => p.path), JSON.stringify(problems)).toContain(path);
      expect(problems.find((p) => p.path === path)!.message).toMatch(message);
    });
  }
});

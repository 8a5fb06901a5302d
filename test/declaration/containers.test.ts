import { describe, expect, it } from 'vitest';
import { problemsBeside } from '../support/declaration-problems.js';

const DIGEST = `sha256:${'a'.repeat(64)}`;
const web = (extra: object = {}) => ({
  type: 'container',
  id: 'web',
  name: 'web',
  image: { ref: `registry.example:5000/app@${DIGEST}` },
  command: ['httpd', '-f', '-p', '8080'],
  env: { MODE: 'prod', TOKEN: 't' },
  sensitiveEnv: ['TOKEN'],
  ports: ['127.0.0.1:18080:8080/tcp', '9090:90'],
  volumes: ['/srv/data:/data:ro'],
  restart: 'on-failure',
  state: 'running',
  restartOn: ['conf'],
  ...extra,
});

describe('a container in the declaration', () => {
  it('is accepted with every field, by reference or by an object of the mesh', async () => {
    expect(await problemsBeside(web())).toEqual([]);
    expect(await problemsBeside(web({ image: { object: 'app-1.tar', sha256: 'b'.repeat(64) }, id: 'two', name: 'two' }))).toEqual([]);
  });

  const cases: Array<[string, object, string, RegExp]> = [
    ['an image by tag', { image: { ref: 'registry.example/app:1.2' } }, '/resources/1/image/ref', /carries no digest.*a tag is not a version/],
    ['a short digest', { image: { ref: 'registry.example/app@sha256:abc' } }, '/resources/1/image/ref', /not NAME@sha256:DIGEST/],
    ['an unknown field', { privileged: true }, '/resources/1/privileged', /unknown field/],
    ['an unknown field of the image', { image: { ref: `app@${DIGEST}`, pull: 'always' } }, '/resources/1/image', /./],
    ['a relative volume', { volumes: ['data:/data'] }, '/resources/1/volumes/0', /./],
    ['a volume not normal', { volumes: ['/srv/../etc:/data'] }, '/resources/1/volumes/0', /not a normal path/],
    ['a sensitive name not in env', { sensitiveEnv: ['PASSWORD'] }, '/resources/1/sensitiveEnv/0', /names no variable of env/],
    ['a port not of the form', { ports: ['localhost:80:80'] }, '/resources/1/ports/0', /./],
    ['a restart policy unknown', { restart: 'sometimes' }, '/resources/1/restart', /./],
    ['a name kept for originals', { name: 'web.mesh-original' }, '/resources/1/name', /kept for taken originals/],
    ['a name kept for replacements being made', { name: 'web.mesh-next' }, '/resources/1/name', /kept for replacements being made/],
    ['a restartOn naming nothing', { restartOn: ['nothing'] }, '/resources/1/restartOn/0', /names no declared file or archive/],
  ];
  it.each(cases)('%s refuses the whole declaration, naming its JSON path', async (_what, extra, path, message) => {
    const problems = await problemsBeside(web(extra));
    expect(problems.map((p) => p.path)).toContain(path);
    expect(problems.find((p) => p.path === path)!.message).toMatch(message);
  });

  it('a container name declared twice is refused at the second', async () => {
    const problems = await problemsBeside(web(), web({ id: 'web2' }));
    expect(problems).toEqual([{ path: '/resources/2/name', message: "container name 'web' is declared twice (first at /resources/1)" }]);
  });
});

import { validateDeclaration } from '../../src/core/declaration/validate.js';

/**
 * What the gate says of a converged declaration for web-1 holding a file `conf` (the file a restartOn can
 * name) and the given resources: their problems, or none. The resources are at /resources/1 onwards.
 */
export async function problemsBeside(...resources: object[]) {
  const declaration = {
    version: 1,
    node: 'web-1',
    mode: 'converged',
    sequence: 1,
    resources: [{ type: 'file', id: 'conf', path: '/etc/app.conf', content: 'x' }, ...resources],
  };
  const result = await validateDeclaration(declaration);
  return result.ok ? [] : result.problems;
}

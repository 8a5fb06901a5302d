/**
 * The exports of a CommonJS package loaded by a dynamic import: bundled by esbuild, they sit on
 * `default`; under Node or Vite they sit on the namespace itself. One helper, so every lazy import of
 * such a package reads the same.
 */
export async function lazy<T>(load: Promise<T>): Promise<T> {
  const m = (await load) as T & { default?: T };
  return m.default && typeof m.default === 'object' ? m.default : m;
}

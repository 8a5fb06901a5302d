import { describe, expect, it } from 'vitest';
import { countedByPackage as byPackage, lineChanges } from '../../src/engine/converge/line-changes.js';

/** A small seeded generator, so that a failure is the same failure again. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('line changes', () => {
  it('count as the diff package counts, on texts that share starts, ends and lines in between', async () => {
    const next = random(42);
    const words = ['a\n', 'b\n', 'c\n', 'key = value\n', 'x\r\n', 'x\n', '\n', 'tail'];
    const text = (n: number) => Array.from({ length: n }, () => words[Math.floor(next() * words.length)]!).join('').replace(/tail(?!$)/g, 'tail\n');
    for (let round = 0; round < 2000; round++) {
      const shared = text(Math.floor(next() * 4));
      const before = shared + text(Math.floor(next() * 12)) + (next() < 0.5 ? shared : '');
      const after = shared + text(Math.floor(next() * 12)) + (next() < 0.5 ? shared : '');
      expect(await lineChanges(before, after), JSON.stringify([before, after])).toEqual(await byPackage(before, after));
    }
  });

  it('counts a whole rewrite, an empty side and a large change on both sides', async () => {
    const file = Array.from({ length: 60 }, (_, i) => `key${i} = value\n`).join('');
    await expect(lineChanges('drifted\n', file)).resolves.toEqual(await byPackage('drifted\n', file));
    await expect(lineChanges('', file)).resolves.toEqual({ added: 60, removed: 0 });
    await expect(lineChanges(file, '')).resolves.toEqual({ added: 0, removed: 60 });
    await expect(lineChanges(file, file)).resolves.toEqual({ added: 0, removed: 0 });
    const big = (k: number) => Array.from({ length: 1500 }, (_, i) => `${(i * k) % 997}\n`).join('');
    await expect(lineChanges(big(3), big(7))).resolves.toEqual(await byPackage(big(3), big(7)));
  });
});

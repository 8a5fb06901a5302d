import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 90_000,
    // Two cores: containers and servers started by tests share them.
    maxWorkers: 2,
  },
});

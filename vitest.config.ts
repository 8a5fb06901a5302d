import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Bounds that only end a run that hangs: the tests wait on events, and a loaded CI machine (two busy
    // loops beside the suite) makes a real daemon's apply or a container's start several times slower.
    testTimeout: 180_000,
    hookTimeout: 240_000,
    // Two cores: containers and servers started by tests share them.
    maxWorkers: 2,
  },
});

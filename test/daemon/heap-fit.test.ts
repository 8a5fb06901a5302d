import { describe, expect, it } from 'vitest';
import { SMALL_HEAP_BOUNDS, isSmallHeap } from '../../src/core/system/memory.js';

describe('the daemon fits its full collections to each apply', () => {
  it('treats a small heap about to apply a small declaration as small', () => {
    expect(isSmallHeap(12 << 20, 101)).toBe(true);
  });

  it('leaves a large heap to V8, whatever the apply', () => {
    expect(isSmallHeap(SMALL_HEAP_BOUNDS.heapBytes, 101)).toBe(false);
  });

  it('leaves an apply about to build a large heap to V8, even from a small one', () => {
    expect(isSmallHeap(12 << 20, 10_011)).toBe(false);
    expect(isSmallHeap(12 << 20, SMALL_HEAP_BOUNDS.resources)).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';
import { jsonNestingDepth } from './request-body.js';

describe('jsonNestingDepth', () => {
  it.each([
    ['1', 0],
    ['"[[[{"', 0],
    ['{}', 1],
    ['[{}]', 2],
    ['{"a":[1,{"b":[[]]}],"c":{}}', 5],
    ['{"text":"a \\" [[[ quote"}', 1],
    ['{"text":"ends with a backslash \\\\","x":[[]]}', 3],
  ])('%s is %i deep', (text, depth) => {
    expect(jsonNestingDepth(text)).toBe(depth);
  });

  it('measures 3000 levels without recursion', () => {
    expect(jsonNestingDepth(`${'['.repeat(3000)}${']'.repeat(3000)}`)).toBe(3000);
  });
});

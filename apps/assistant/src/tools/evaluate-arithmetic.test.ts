import { LunationError } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { evaluateArithmetic } from './evaluate-arithmetic.js';

describe('evaluateArithmetic', () => {
  it.each([
    ['1 + 2 * 3', 7],
    ['(1 + 2) * 3', 9],
    ['10 - 4 - 3', 3],
    ['2 ^ 3 ^ 2', 512],
    ['2 ** 10', 1024],
    ['-2 ^ 2', -4],
    ['2 ^ -1', 0.5],
    ['--3', 3],
    ['7 % 4', 3],
    ['12 × 3 ÷ 4', 9],
    ['.5 + 1.25e2', 125.5],
    ['sqrt(16) + abs(-2)', 6],
    ['round(pi * 100) / 100', 3.14],
    ['ln(e)', 1],
    ['log(1000)', 3],
    ['  42  ', 42],
  ])('%s = %d', (expression, expected) => {
    expect(evaluateArithmetic(expression)).toBeCloseTo(expected, 12);
  });

  it.each([
    ['', 'the expression is empty'],
    ['1 +', 'expected a number, found the end of the expression'],
    ['(1 + 2', 'expected ")", found the end of the expression'],
    ['1 2', 'unexpected "2" at position 3'],
    ['4 / (2 - 2)', 'division by zero'],
    ['10 ^ 400', 'the result is not a finite number'],
    ['sqrt 4', '"sqrt" needs parentheses'],
    ['process.exit(1)', 'unexpected character "." at position 8'],
    [
      'exit(1)',
      'unknown name "exit" (functions: abs, ceil, cos, floor, ln, log, round, sin, sqrt, tan; constants: pi, e)',
    ],
    [
      'constructor(1)',
      'unknown name "constructor" (functions: abs, ceil, cos, floor, ln, log, round, sin, sqrt, tan; constants: pi, e)',
    ],
    ['1; 2', 'unexpected character ";" at position 2'],
    ['"a" + 1', 'unexpected character """ at position 1'],
    [`${'('.repeat(60)}1${')'.repeat(60)}`, 'nesting deeper than 50 levels'],
    [`${'-'.repeat(60)}1`, 'nesting deeper than 50 levels'],
  ])('refuses %j: %s', (expression, reason) => {
    let caught: unknown;
    try {
      evaluateArithmetic(expression);
    } catch (error) {
      caught = error;
    }
    expect(LunationError.hasCode(caught, 'invalid-argument')).toBe(true);
    expect((caught as Error).message).toBe(`Cannot evaluate "${expression}": ${reason}`);
  });

  it('refuses expressions longer than 500 characters', () => {
    expect(() => evaluateArithmetic('1+'.repeat(300))).toThrow(/limited to 500 characters/);
  });
});

import { defineTool } from '@lunation/runtime';
import { z } from 'zod';
import { evaluateArithmetic } from './evaluate-arithmetic.js';

/** Evaluates arithmetic safely (a small parser, never `eval`). */
export const calculatorTool = defineTool({
  name: 'calculator',
  description:
    'Evaluates an arithmetic expression exactly. Supports + - * / % ^, parentheses, pi, e and ' +
    'sqrt, abs, round, floor, ceil, ln, log, sin, cos, tan. Use it for any arithmetic.',
  input: z.object({
    expression: z.string().min(1).max(500).describe('The expression, e.g. "(2 + 3) * 7" or "sqrt(2) / 2"'),
  }),
  execute: ({ expression }) => {
    const value = evaluateArithmetic(expression);
    // 12 significant digits hide binary noise such as 0.1 + 0.2 = 0.30000000000000004.
    return { expression, result: Number(value.toPrecision(12)) };
  },
});

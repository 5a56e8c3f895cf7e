import { LunationError } from '@lunation/contract';

const FUNCTIONS = new Map<string, (value: number) => number>([
  ['abs', Math.abs],
  ['ceil', Math.ceil],
  ['cos', Math.cos],
  ['floor', Math.floor],
  ['ln', Math.log],
  ['log', Math.log10],
  ['round', Math.round],
  ['sin', Math.sin],
  ['sqrt', Math.sqrt],
  ['tan', Math.tan],
]);

const CONSTANTS = new Map([
  ['e', Math.E],
  ['pi', Math.PI],
]);

const OPERATOR_ALIASES = new Map([
  ['**', '^'],
  ['×', '*'],
  ['÷', '/'],
]);

const MAX_LENGTH = 500;
const MAX_DEPTH = 50;

type Token =
  | { type: 'number'; value: number; position: number }
  | { type: 'name'; value: string; position: number }
  | { type: 'operator'; value: string; position: number };

function invalid(expression: string, message: string): LunationError {
  return new LunationError('invalid-argument', `Cannot evaluate "${expression}": ${message}`);
}

function tokenize(expression: string): Token[] {
  const tokens: Token[] = [];
  const pattern = /(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[a-zA-Z]+|\*\*|[-+*/%^()×÷]/y;
  let position = 0;
  while (position < expression.length) {
    if (/\s/.test(expression[position] as string)) {
      position++;
      continue;
    }
    pattern.lastIndex = position;
    const text = pattern.exec(expression)?.[0];
    if (text === undefined) {
      throw invalid(expression, `unexpected character "${expression[position]}" at position ${position + 1}`);
    }
    if (/^[\d.]/.test(text)) tokens.push({ type: 'number', value: Number(text), position });
    else if (/^[a-zA-Z]/.test(text)) tokens.push({ type: 'name', value: text.toLowerCase(), position });
    else tokens.push({ type: 'operator', value: OPERATOR_ALIASES.get(text) ?? text, position });
    position = pattern.lastIndex;
  }
  return tokens;
}

/**
 * Evaluates an arithmetic expression with a recursive-descent parser (never `eval`): numbers, `+ - * / % ^`
 * (also `**`, `×`, `÷`), parentheses, unary signs, the constants `pi` and `e`, and the functions
 * `sqrt abs round floor ceil ln log sin cos tan`. Throws `invalid-argument` on anything else.
 */
export function evaluateArithmetic(expression: string): number {
  if (expression.length > MAX_LENGTH) {
    throw invalid(`${expression.slice(0, 20)}…`, `expressions are limited to ${MAX_LENGTH} characters`);
  }
  const tokens = tokenize(expression);
  if (tokens.length === 0) throw invalid(expression, 'the expression is empty');
  let index = 0;
  let depth = 0;

  const peek = (): Token | undefined => tokens[index];
  const isOperator = (token: Token | undefined, ...operators: string[]): boolean =>
    token?.type === 'operator' && operators.includes(token.value);
  const describe = (token: Token | undefined): string =>
    token === undefined ? 'the end of the expression' : `"${token.value}" at position ${token.position + 1}`;

  const enter = () => {
    if (++depth > MAX_DEPTH) throw invalid(expression, `nesting deeper than ${MAX_DEPTH} levels`);
  };

  // sum := product (('+' | '-') product)*
  const sum = (): number => {
    let value = product();
    while (isOperator(peek(), '+', '-')) {
      const operator = (tokens[index++] as Token).value;
      const right = product();
      value = operator === '+' ? value + right : value - right;
    }
    return value;
  };

  // product := unary (('*' | '/' | '%') unary)*
  const product = (): number => {
    let value = unary();
    while (isOperator(peek(), '*', '/', '%')) {
      const operator = (tokens[index++] as Token).value;
      const right = unary();
      if ((operator === '/' || operator === '%') && right === 0)
        throw invalid(expression, 'division by zero');
      value = operator === '*' ? value * right : operator === '/' ? value / right : value % right;
    }
    return value;
  };

  // unary := ('+' | '-') unary | power
  const unary = (): number => {
    if (isOperator(peek(), '+', '-')) {
      const operator = (tokens[index++] as Token).value;
      enter();
      const value = unary();
      depth--;
      return operator === '-' ? -value : value;
    }
    return power();
  };

  // power := primary ('^' unary)?   (right-associative, so 2^3^2 = 2^9 and 2^-1 = 0.5)
  const power = (): number => {
    const base = primary();
    if (!isOperator(peek(), '^')) return base;
    index++;
    enter();
    const exponent = unary();
    depth--;
    return base ** exponent;
  };

  // primary := number | constant | function '(' sum ')' | '(' sum ')'
  const primary = (): number => {
    const token = peek();
    if (token?.type === 'number') {
      index++;
      return token.value;
    }
    if (token?.type === 'name') {
      index++;
      const constant = CONSTANTS.get(token.value);
      if (constant !== undefined) return constant;
      const fn = FUNCTIONS.get(token.value);
      if (!fn) {
        throw invalid(
          expression,
          `unknown name "${token.value}" (functions: ${[...FUNCTIONS.keys()].join(', ')}; constants: pi, e)`,
        );
      }
      if (!isOperator(peek(), '(')) throw invalid(expression, `"${token.value}" needs parentheses`);
      return fn(group());
    }
    if (isOperator(token, '(')) return group();
    throw invalid(expression, `expected a number, found ${describe(token)}`);
  };

  const group = (): number => {
    index++; // '('
    enter();
    const value = sum();
    depth--;
    if (!isOperator(peek(), ')')) throw invalid(expression, `expected ")", found ${describe(peek())}`);
    index++;
    return value;
  };

  const value = sum();
  if (index < tokens.length) throw invalid(expression, `unexpected ${describe(peek())}`);
  if (!Number.isFinite(value)) throw invalid(expression, 'the result is not a finite number');
  return value;
}

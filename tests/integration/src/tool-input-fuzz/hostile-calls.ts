import type { SeededRandom } from '../../fixtures/seeded-random.js';

/** Values a tool returns or throws, built inside the tool (they cannot travel as JSON). */
export const hostileReturns = [
  'bigint',
  'bigint-inside',
  'cycle',
  'function',
  'symbol',
  'undefined',
  'nan',
  'deep',
  'getter-throws',
  'to-json-throws',
  'proxy',
  'huge',
  'map',
  'date',
  'bad-status',
  'bad-message',
] as const;
export type HostileReturn = (typeof hostileReturns)[number];

export const hostileThrows = [
  'null-prototype',
  'to-string-throws',
  'message-getter-throws',
  'proxy',
  'symbol',
  'undefined',
  'null',
  'number',
  'string',
  'huge-string',
  'circular-cause',
  'retryable-getter-throws',
  'error-like',
] as const;
export type HostileThrow = (typeof hostileThrows)[number];

/** How a call must end: what the model is told, and whether the tool's body runs. */
export type Expected = 'success' | 'error' | 'either';

/** One tool call the scripted model makes, with what must come of it. */
export interface FuzzCall {
  /** The case, for the report: `arguments: malformed JSON`, `throw: symbol`, ... */
  label: string;
  toolName: string;
  toolCallId: string;
  /** The raw arguments text, as a provider would stream it. */
  arguments: string;
  expect: Expected;
  runs: 'yes' | 'no' | 'either';
  /** Written by the tool to the execution log when its body runs; absent when the arguments hide it. */
  nonce?: string;
  /** For gated calls: what the fuzz decides. */
  decision?: 'approve' | 'deny';
  /** For a reused call id: the nonce of the earlier call, whose result must not be replayed. */
  notResultOf?: string;
}

export interface FuzzStep {
  calls: FuzzCall[];
}

export interface FuzzRun {
  index: number;
  steps: FuzzStep[];
}

/** Tools of the fuzz agent (see fuzz-tools.ts). */
export const fuzzToolNames = {
  echo: 'echo',
  gated: 'gated_echo',
  returns: 'hostile_return',
  throws: 'hostile_throw',
} as const;

const depth = 10_000;
const deepObject = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
const deepArray = `${'['.repeat(depth)}${']'.repeat(depth)}`;

/** Everything a template needs to build calls that stay unique within a run. */
interface CallSite {
  random: SeededRandom;
  /** A fresh id, `f<step>_<n>`. */
  id(): string;
  /** A fresh nonce, `n<run>_<n>`. */
  nonce(): string;
  /** Calls of earlier steps with a nonce and a unique id, to reuse an id of. */
  earlier: FuzzCall[];
}

interface Template {
  weight: number;
  build(site: CallSite): FuzzCall[];
}

function echo(site: CallSite, label: string, raw: (nonce: string) => string, expect: Expected): FuzzCall {
  const nonce = site.nonce();
  const runs = expect === 'success' ? 'yes' : expect === 'error' ? 'no' : 'either';
  return {
    label,
    toolName: fuzzToolNames.echo,
    toolCallId: site.id(),
    arguments: raw(nonce),
    expect,
    runs,
    nonce,
  };
}

function garbage(random: SeededRandom): string {
  const characters = '{}[]":,\\ntrufalse0123456789.eE+-\u0000\u2028\ud800 ';
  let text = '';
  for (let index = random.integer(1, 40); index > 0; index--) text += random.pick([...characters]);
  return text;
}

const malformed = ['{', '{"text":', '{"text":"n"}}', "{'text':'n'}", 'nul', '\u0000', '{"text":"n",}'];
const wrongTypes = ['{"text":5}', '{"text":null}', '[]', '"n"', '42', 'null', 'true', '{}', '{"text":["n"]}'];
const badToolNames = [
  'no_such_tool',
  '',
  'x'.repeat(10_000),
  '__proto__',
  'constructor',
  'toString',
  '../echo',
  'echo ',
  'ECHO',
];

const templates: Template[] = [
  {
    weight: 6,
    build: (site) => [echo(site, 'arguments: valid', (n) => JSON.stringify({ text: n }), 'success')],
  },
  { weight: 1, build: (site) => [echo(site, 'arguments: empty text', () => '', 'error')] },
  {
    weight: 3,
    build: (site) => [echo(site, 'arguments: malformed JSON', () => site.random.pick(malformed), 'error')],
  },
  { weight: 2, build: (site) => [echo(site, 'arguments: garbage', () => garbage(site.random), 'error')] },
  {
    weight: 3,
    build: (site) => [echo(site, 'arguments: wrong types', () => site.random.pick(wrongTypes), 'error')],
  },
  {
    weight: 1,
    build: (site) => [
      echo(
        site,
        'arguments: __proto__ key',
        (n) => `{"__proto__":{"polluted":"yes"},"text":"${n}"}`,
        'either',
      ),
    ],
  },
  {
    weight: 1,
    build: (site) => [
      echo(
        site,
        'arguments: constructor.prototype key',
        (n) => `{"constructor":{"prototype":{"polluted":"yes"}},"text":"${n}"}`,
        'either',
      ),
    ],
  },
  {
    weight: 1,
    build: (site) => [
      echo(
        site,
        'arguments: huge (200 kB)',
        (n) => JSON.stringify({ text: n, padding: 'x'.repeat(200_000) }),
        'either',
      ),
    ],
  },
  {
    weight: 1,
    build: (site) => [
      echo(site, 'arguments: nested 10,000 deep', (n) => `{"text":"${n}","deep":${deepObject}}`, 'either'),
    ],
  },
  {
    weight: 1,
    build: (site) => [echo(site, 'arguments: array nested 10,000 deep', () => deepArray, 'error')],
  },
  {
    weight: 1,
    build: (site) => [
      echo(site, 'arguments: lone surrogate and NUL', (n) => `{"text":"${n}\\ud800\\u0000"}`, 'either'),
    ],
  },
  {
    weight: 3,
    build: (site) => {
      const nonce = site.nonce();
      return [
        {
          label: 'tool name: unknown or hostile',
          toolName: site.random.pick(badToolNames),
          toolCallId: site.id(),
          arguments: JSON.stringify({ text: nonce }),
          expect: 'error',
          runs: 'no',
          nonce,
        },
      ];
    },
  },
  {
    weight: 1,
    build: (site) => [
      { ...echo(site, 'call id: empty', (n) => JSON.stringify({ text: n }), 'error'), toolCallId: '' },
    ],
  },
  {
    weight: 1,
    build: (site) => {
      const first = echo(site, 'call id: duplicated (first)', (n) => JSON.stringify({ text: n }), 'either');
      const second = echo(site, 'call id: duplicated (second)', (n) => JSON.stringify({ text: n }), 'error');
      return [first, { ...second, toolCallId: first.toolCallId }];
    },
  },
  {
    weight: 1,
    build: (site) => {
      const call = echo(
        site,
        'call id: reused from an earlier step',
        (n) => JSON.stringify({ text: n }),
        'either',
      );
      const earlier = site.earlier.length > 0 ? site.random.pick(site.earlier) : undefined;
      if (!earlier?.nonce) return [call];
      return [{ ...call, toolCallId: earlier.toolCallId, notResultOf: earlier.nonce }];
    },
  },
  {
    weight: 6,
    build: (site) => {
      const kind = site.random.pick(hostileReturns);
      const onlyOutput = kind === 'bad-status' || kind === 'bad-message';
      const via = site.random.chance(0.5) || onlyOutput ? 'output' : 'return';
      const nonce = site.nonce();
      const acceptable: HostileReturn[] = ['nan', 'map', 'date', 'deep'];
      const expect: Expected =
        kind === 'undefined' || kind === 'huge' ? 'success' : acceptable.includes(kind) ? 'either' : 'error';
      return [
        {
          label: `return (${via}): ${kind}`,
          toolName: fuzzToolNames.returns,
          toolCallId: site.id(),
          arguments: JSON.stringify({ text: nonce, kind, via }),
          expect,
          runs: 'yes',
          nonce,
        },
      ];
    },
  },
  {
    weight: 6,
    build: (site) => {
      const kind = site.random.pick(hostileThrows);
      const nonce = site.nonce();
      return [
        {
          label: `throw: ${kind}`,
          toolName: fuzzToolNames.throws,
          toolCallId: site.id(),
          arguments: JSON.stringify({ text: nonce, kind }),
          expect: 'error',
          runs: 'yes',
          nonce,
        },
      ];
    },
  },
  {
    weight: 4,
    build: (site) => {
      const nonce = site.nonce();
      const decision = site.random.chance(0.6) ? 'approve' : 'deny';
      const payload = site.random.weighted<'none' | 'deep' | 'huge'>([
        ['none', 4],
        ['deep', 1],
        ['huge', 1],
      ]);
      const raw =
        payload === 'deep'
          ? `{"text":"${nonce}","payload":${deepObject}}`
          : JSON.stringify({ text: nonce, ...(payload === 'huge' ? { payload: 'x'.repeat(200_000) } : {}) });
      const approved = decision === 'approve';
      return [
        {
          label: `gated (${decision}, payload ${payload})`,
          toolName: fuzzToolNames.gated,
          toolCallId: site.id(),
          arguments: raw,
          // An unstorable ticket may become an error result instead of a suspension.
          expect: !approved ? 'error' : payload === 'deep' ? 'either' : 'success',
          runs: !approved ? 'no' : payload === 'deep' ? 'either' : 'yes',
          nonce,
          decision,
        },
      ];
    },
  },
];

/** A run of 1-4 steps of 1-4 calls each, drawn from the templates; `callBudget` caps its calls. */
export function createFuzzRun(random: SeededRandom, index: number, callBudget: number): FuzzRun {
  let ids = 0;
  let nonces = 0;
  const steps: FuzzStep[] = [];
  const earlier: FuzzCall[] = [];
  let calls = 0;
  for (let step = 1, count = random.integer(1, 4); step <= count && calls < callBudget; step++) {
    const site: CallSite = {
      random,
      id: () => `f${step}_${++ids}`,
      nonce: () => `n${index}_${++nonces}`,
      earlier: [...earlier],
    };
    const stepCalls: FuzzCall[] = [];
    for (let slot = random.integer(1, 4); slot > 0 && calls + stepCalls.length < callBudget; slot--) {
      const template = random.weighted(templates.map((candidate) => [candidate, candidate.weight] as const));
      stepCalls.push(...template.build(site));
    }
    const counts = new Map<string, number>();
    for (const call of stepCalls) counts.set(call.toolCallId, (counts.get(call.toolCallId) ?? 0) + 1);
    for (const call of stepCalls)
      if (call.nonce && call.toolCallId !== '' && counts.get(call.toolCallId) === 1 && !call.notResultOf)
        earlier.push(call);
    calls += stepCalls.length;
    steps.push({ calls: stepCalls });
  }
  return { index, steps };
}

/** How many calls a run makes. */
export function callCount(run: FuzzRun): number {
  return run.steps.reduce((sum, step) => sum + step.calls.length, 0);
}

import { parseArgs } from 'node:util';

/**
 * The workloads the A/B mode can run: W1 (sequential runs, an instant model) with a store and a mode, and W2
 * (1,000 concurrent runs of S=3 with a 20 ms model).
 */
export const AB_WORKLOADS = [
  'w1:none',
  'w1:sqlite',
  'w1:memory',
  'w1:none:stream',
  'w1:sqlite:stream',
  'w2',
] as const;

/** One workload of the A/B mode, `w1:<store>[:stream]` or `w2`. */
export type AbWorkload = (typeof AB_WORKLOADS)[number];

/** What `--ab` runs without `--workload`: the three (W1 without a store, W1 on SQLite, W2). */
export const DEFAULT_AB_WORKLOADS: readonly AbWorkload[] = ['w1:none', 'w1:sqlite', 'w2'];

/** `wall`: timed runs (wall and CPU time); `instructions`: instructions counted under valgrind's callgrind. */
export type AbMeasure = 'wall' | 'instructions';

/** The A/B mode's settings, from the command line. */
export interface AbOptions {
  /** The base: any git revision (`57496f8`, `main~3`, a tag). */
  base: string;
  /** The head: a git revision, or undefined for the working tree as it is (uncommitted changes included). */
  head: string | undefined;
  measure: AbMeasure;
  /** Rounds; each runs every workload once on each side, each in a fresh process. */
  rounds: number;
  workloads: AbWorkload[];
  /** Tiny sizes, the same checks: for trying the mode out, and for CI. */
  smoke: boolean;
  /** Also write the results as JSON here. */
  out: string | undefined;
}

/** A command line the A/B mode cannot run; the message says what to change. */
export class AbUsageError extends Error {
  override readonly name = 'AbUsageError';
}

/** The usage text printed with an `AbUsageError`. */
export const AB_USAGE = `pnpm bench --ab <base-ref> [--head <ref>] [--instructions] [--rounds <n>] [--workload <id>]... [--smoke] [--out <file>]
  workloads: ${AB_WORKLOADS.join(', ')} (default ${DEFAULT_AB_WORKLOADS.join(', ')}; repeat --workload or separate with commas)
  rounds: default 6 for wall time, 2 for --instructions`;

const DEFAULT_ROUNDS: Record<AbMeasure, number> = { wall: 6, instructions: 2 };

function isWorkload(value: string): value is AbWorkload {
  return (AB_WORKLOADS as readonly string[]).includes(value);
}

/** True when a command line asks for the A/B mode (`--ab <ref>` or `--ab=<ref>`). */
export function wantsAb(argv: readonly string[]): boolean {
  return argv.some((arg) => arg === '--ab' || arg.startsWith('--ab='));
}

/** Reads the A/B mode's command line (without the node and script paths); throws `AbUsageError`. */
export function parseAbArgs(argv: readonly string[]): AbOptions {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    throw new AbUsageError(`${(error as Error).message}\n${AB_USAGE}`);
  }
  const { values, positionals } = parsed;
  if (positionals.length > 0) {
    throw new AbUsageError(`Unexpected argument ${JSON.stringify(positionals[0])}\n${AB_USAGE}`);
  }
  const base = values.ab?.trim();
  if (!base) throw new AbUsageError(`--ab needs the base revision, e.g. --ab 57496f8\n${AB_USAGE}`);
  const head = values.head?.trim() || undefined;
  const measure: AbMeasure = values.instructions ? 'instructions' : 'wall';
  let rounds = DEFAULT_ROUNDS[measure];
  if (values.rounds !== undefined) {
    rounds = Number(values.rounds);
    if (!Number.isInteger(rounds) || rounds < 1) {
      throw new AbUsageError(`--rounds ${values.rounds}: expected a whole number of at least 1`);
    }
  }
  const workloads: AbWorkload[] = [];
  for (const value of (values.workload ?? []).flatMap((item) => item.split(','))) {
    const id = value.trim();
    if (!isWorkload(id)) {
      throw new AbUsageError(`--workload ${JSON.stringify(id)}: expected one of ${AB_WORKLOADS.join(', ')}`);
    }
    if (!workloads.includes(id)) workloads.push(id);
  }
  return {
    base,
    head,
    measure,
    rounds,
    workloads: workloads.length > 0 ? workloads : [...DEFAULT_AB_WORKLOADS],
    smoke: values.smoke ?? false,
    out: values.out,
  };
}

function parse(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      ab: { type: 'string' },
      head: { type: 'string' },
      instructions: { type: 'boolean' },
      rounds: { type: 'string' },
      workload: { type: 'string', multiple: true },
      smoke: { type: 'boolean' },
      out: { type: 'string' },
    },
  });
}

import { describe, expect, it } from 'vitest';
import { renderAbReport, summarize } from './ab.js';
import { AB_WORKLOADS, AbUsageError, DEFAULT_AB_WORKLOADS, parseAbArgs, wantsAb } from './ab-args.js';
import { countFigures, countPlan } from './ab-config.js';
import { bootstrapMedianInterval, parseDumpTotal, summarizeRatios, verdict } from './ab-stats.js';

describe('the A/B command line', () => {
  it('needs a base and defaults to six timed rounds of the three workloads on the working tree', () => {
    expect(parseAbArgs(['--ab', '57496f8'])).toEqual({
      base: '57496f8',
      head: undefined,
      measure: 'wall',
      rounds: 6,
      workloads: ['w1:none', 'w1:sqlite', 'w2'],
      smoke: false,
      out: undefined,
    });
    expect(DEFAULT_AB_WORKLOADS).toEqual(['w1:none', 'w1:sqlite', 'w2']);
  });

  it('counts instructions in two rounds unless told otherwise, and reads every option', () => {
    expect(parseAbArgs(['--ab=main~2', '--instructions'])).toMatchObject({
      measure: 'instructions',
      rounds: 2,
    });
    expect(
      parseAbArgs([
        '--ab',
        'v1',
        '--head',
        'v2',
        '--instructions',
        '--rounds',
        '3',
        '--workload',
        'w2,w1:memory',
        '--workload',
        'w2',
        '--smoke',
        '--out',
        '/tmp/ab.json',
      ]),
    ).toEqual({
      base: 'v1',
      head: 'v2',
      measure: 'instructions',
      rounds: 3,
      workloads: ['w2', 'w1:memory'],
      smoke: true,
      out: '/tmp/ab.json',
    });
  });

  it('refuses what it cannot run, saying what to change', () => {
    const refused = (argv: string[], message: RegExp) => {
      expect(() => parseAbArgs(argv)).toThrow(AbUsageError);
      expect(() => parseAbArgs(argv)).toThrow(message);
    };
    refused(['--rounds', '3'], /--ab needs the base revision/);
    refused(['--ab', ' '], /--ab needs the base revision/);
    refused(['--ab', 'x', '--rounds', '0'], /--rounds 0: expected a whole number/);
    refused(['--ab', 'x', '--rounds', '2.5'], /--rounds 2.5/);
    refused(['--ab', 'x', '--workload', 'w3'], /--workload "w3": expected one of w1:none, /);
    refused(['--ab', 'x', 'extra'], /Unexpected argument "extra"/);
    refused(['--ab', 'x', '--node', '24'], /Unknown option '--node'/);
  });

  it('is asked for by --ab in either form, and only then', () => {
    expect(wantsAb(['--ab', 'x'])).toBe(true);
    expect(wantsAb(['--smoke', '--ab=x'])).toBe(true);
    expect(wantsAb(['--only', 'w1:lunation', '--abc'])).toBe(false);
    expect(wantsAb([])).toBe(false);
  });
});

describe('the A/B arithmetic', () => {
  it('takes head/base per round, the median, range and an interval that holds the median', () => {
    const summary = summarizeRatios([
      { base: 10, head: 12 },
      { base: 20, head: 22 },
      { base: 8, head: 10 },
      { base: 10, head: 9 },
      { base: 5, head: 6 },
    ]);
    expect(summary.ratios).toEqual([1.2, 1.1, 1.25, 0.9, 1.2]);
    expect(summary.median).toBe(1.2);
    expect(summary.min).toBe(0.9);
    expect(summary.max).toBe(1.25);
    expect(summary.baseMedian).toBe(10);
    expect(summary.headMedian).toBe(10);
    expect(summary.low).toBeGreaterThanOrEqual(summary.min);
    expect(summary.high).toBeLessThanOrEqual(summary.max);
    expect(summary.low).toBeLessThanOrEqual(summary.median);
    expect(summary.high).toBeGreaterThanOrEqual(summary.median);
    expect(summary.low).toBeLessThan(summary.high);
    expect(verdict(summary)).toBe('within spread');
  });

  it('gives the same interval for the same figures, and a point for identical rounds', () => {
    const values = [1.01, 0.97, 1.05, 1.2, 0.99, 1.03];
    expect(bootstrapMedianInterval(values)).toEqual(bootstrapMedianInterval(values));
    expect(bootstrapMedianInterval([1.5, 1.5, 1.5])).toEqual({ low: 1.5, high: 1.5 });
    const wide = bootstrapMedianInterval(values, { confidence: 0.99 });
    const narrow = bootstrapMedianInterval(values, { confidence: 0.5 });
    expect(wide.low).toBeLessThanOrEqual(narrow.low);
    expect(wide.high).toBeGreaterThanOrEqual(narrow.high);
  });

  it('says lower or higher only when every round agrees', () => {
    expect(verdict({ min: 0.8, max: 0.99 })).toBe('lower');
    expect(verdict({ min: 1.01, max: 1.3 })).toBe('higher');
    expect(verdict({ min: 0.9, max: 1 })).toBe('within spread');
  });

  it('refuses figures that cannot make a ratio', () => {
    expect(() => summarizeRatios([])).toThrow(RangeError);
    expect(() => summarizeRatios([{ base: 0, head: 1 }])).toThrow(/positive and finite/);
    expect(() => summarizeRatios([{ base: 1, head: Number.NaN }])).toThrow(/positive and finite/);
  });

  it('pairs each round of a workload by side, and leaves out rounds one side lacks', () => {
    const summaries = summarize(
      [
        { round: 1, side: 'base', workload: 'w1:none', figures: { a: 10, b: 4 } },
        { round: 1, side: 'head', workload: 'w1:none', figures: { a: 11, b: 2 } },
        { round: 2, side: 'head', workload: 'w1:none', figures: { a: 30 } },
        { round: 2, side: 'base', workload: 'w1:none', figures: { a: 20, b: 4 } },
        { round: 3, side: 'base', workload: 'w1:none', figures: { a: 1 } },
        { round: 1, side: 'base', workload: 'w2', figures: { a: 100 } },
        { round: 1, side: 'head', workload: 'w2', figures: { a: 90 } },
      ],
      ['w1:none', 'w2'],
    );
    expect(summaries.map((summary) => [summary.workload, summary.metric, summary.ratios])).toEqual([
      ['w1:none', 'a', [1.1, 1.5]],
      ['w1:none', 'b', [0.5]],
      ['w2', 'a', [0.9]],
    ]);
    expect(summaries.map((summary) => summary.verdict)).toEqual(['higher', 'lower', 'lower']);
  });
});

describe('instruction counts', () => {
  it('reads the total of a callgrind dump', () => {
    const dump =
      'version: 1\ncreator: callgrind-3.19.0\ncmd: node\npart: 2\n\nsummary: 123456789\ntotals: 123456789\n';
    expect(parseDumpTotal(dump)).toBe(123456789);
    expect(parseDumpTotal('events: Ir\ntotals: 42\n')).toBe(42);
    expect(() => parseDumpTotal('events: Ir\n')).toThrow(/without a totals line/);
  });

  it('divides each metric by its runs and units, summed over its windows', () => {
    const plan = countPlan('w1:none', false);
    expect(plan.windows.map((window) => window.metric)).toEqual([
      'S=1 instructions/run',
      'S=10 instructions/step',
      'S=1 instructions/run',
      'S=10 instructions/step',
    ]);
    const [one, ten] = plan.windows;
    const figures = countFigures(plan.windows, [
      one!.runs * 100_000,
      ten!.runs * 10 * 50_000,
      one!.runs * 120_000,
      ten!.runs * 10 * 70_000,
    ]);
    expect(figures['S=1 instructions/run']).toBeCloseTo(110_000, 6);
    expect(figures['S=10 instructions/step']).toBeCloseTo(60_000, 6);
    expect(countFigures(countPlan('w2', false).windows, [3_000_000, 5_000_000])).toEqual({
      'instructions/run': 4000,
    });
    expect(() => countFigures(plan.windows, [1, 2])).toThrow(/Expected 4 counted windows, got 2/);
  });

  it('warms up every size it counts, and counts fewer SQLite runs', () => {
    for (const workload of AB_WORKLOADS) {
      const plan = countPlan(workload, false);
      for (const window of plan.windows) {
        expect(plan.warmup.some((work) => work.steps === window.steps && work.runs >= window.runs)).toBe(
          true,
        );
      }
    }
    expect(countPlan('w1:sqlite', false).windows[0]!.runs).toBeLessThan(
      countPlan('w1:none', false).windows[0]!.runs,
    );
  });
});

describe('the A/B report', () => {
  it('says what ran and gives one row per metric', () => {
    const [summary] = summarize(
      [
        { round: 1, side: 'base', workload: 'w1:sqlite', figures: { 'S=1 µs/run wall': 200 } },
        { round: 1, side: 'head', workload: 'w1:sqlite', figures: { 'S=1 µs/run wall': 150 } },
      ],
      ['w1:sqlite'],
    );
    const report = renderAbReport({
      base: { side: 'base', dir: '/cache/57496f8', commit: '57496f880d53aaaa', describe: '57496f8 old' },
      head: { side: 'head', dir: '/repo', commit: 'fc9374f2de5bbbbb', describe: 'fc9374f new' },
      options: parseAbArgs(['--ab', '57496f8', '--rounds', '1']),
      node: 'v22.23.3',
      machine: 'AMD EPYC, 2 cores',
      loadBefore: [3, 2, 1],
      loadAfter: [4, 3, 2],
      otherLoad: [1.25, 0.5],
      seconds: 61,
      summaries: summary ? [summary] : [],
    });
    expect(report).toContain('## A/B: fc9374f new against 57496f8 old');
    expect(report).toContain('base 57496f880d53 (/cache/57496f8), head fc9374f2de5b (/repo)');
    expect(report).toContain('1 round(s)');
    expect(report).toContain(
      'Node v22.23.3, AMD EPYC, 2 cores; load average (1/5/15 min) 3.0 / 2.0 / 1.0 before',
    );
    expect(report).toContain('0.5–1.3 cores busy');
    expect(report).toContain(
      '| w1:sqlite | S=1 µs/run wall | 200 | 150 | 0.750 | 0.750–0.750 | 0.750–0.750 | lower |',
    );
  });
});

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  agentEventSchema,
  contentPartSchema,
  errorCodeSchema,
  LunationError,
  modelStreamPartSchema,
  terminationReasonSchema,
} from '@lunation/contract';
import { errorCodeForStatus } from '@lunation/contract/provider-utils';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';
import { breakages as brokenDispatchers } from '../../../packages/dispatch-testkit/src/__fixtures__/broken-dispatchers.js';
import { breakages } from '../../../packages/store-memory/src/__fixtures__/broken-stores.js';
import { exportedNames } from './exported-names.js';
import { firstColumn, tableAfter } from './markdown-tables.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const contract = read('packages/contract/README.md');

describe('the contract README', () => {
  it('lists every error code, in order, with its default retryability', () => {
    const rows = tableAfter(contract, '### Error codes');
    expect(rows.map((row) => row[0])).toEqual(errorCodeSchema.options);
    for (const [code, retryable] of rows) {
      const error = new LunationError(code as never, 'x');
      expect(`${code}: ${retryable}`).toBe(`${code}: ${error.isRetryable ? 'yes' : 'no'}`);
    }
  });

  it('lists every event type, content part, stream part and termination reason', () => {
    const types = (schema: { options: ReadonlyArray<{ shape: { type: { value: string } } }> }) =>
      schema.options.map((option) => option.shape.type.value);
    expect(firstColumn(contract, '## Events')).toEqual(types(agentEventSchema));
    expect(firstColumn(contract, 'The parts (`ContentPart`')).toEqual(types(contentPartSchema));
    expect(firstColumn(contract, 'The stream parts (`ModelStreamPart`')).toEqual(
      types(modelStreamPartSchema),
    );
    expect(firstColumn(contract, 'Termination reasons, and the run status')).toEqual(
      types(terminationReasonSchema),
    );
  });

  it('lists exactly the context-overflow phrases errorCodeForStatus recognises, each with an example it maps', () => {
    const source = read('packages/contract/src/provider-utils/provider-errors.ts');
    const pattern = /const CONTEXT_OVERFLOW =\s*\/(.*)\/i;/.exec(source)?.[1];
    expect(pattern).toBeDefined();
    const rows = tableAfter(contract, 'by these phrases in the error');
    expect(rows.map((row) => row[0])).toEqual(pattern?.split('|'));
    for (const [phrase, example] of rows) {
      const text = (example as string).replace(/^.*?`|`$/g, '');
      expect(`${phrase}: ${errorCodeForStatus(400, text)}`).toBe(`${phrase}: context-overflow`);
    }
    expect(errorCodeForStatus(400, 'unknown parameter')).toBe('invalid-request');
  });
});

describe('the store-testkit README', () => {
  const readme = read('packages/store-testkit/README.md');
  const specs = join(root, 'packages/store-testkit/src/specs');
  const rows = tableAfter(readme, '## What it covers');

  it('lists every spec file with its number of tests, and the total', () => {
    const files = readdirSync(specs).filter(
      (file) => file.endsWith('-spec.ts') && file !== 'spec-helpers.ts',
    );
    expect(rows.map((row) => row[0]).sort()).toEqual(files.sort());
    let total = 0;
    for (const [file, count] of rows) {
      const tests = readFileSync(join(specs, file as string), 'utf8').match(/^\s*it\(/gm)?.length ?? 0;
      expect(`${file}: ${count}`).toBe(`${file}: ${tests}`);
      total += tests;
    }
    expect(readme).toContain(`${total} tests in all`);
  });

  it('counts the broken stores the suite is checked against', () => {
    expect(readme).toContain(`${Object.keys(breakages).length} deliberately broken MemoryStores`);
  });
});

describe('the dispatch-testkit README', () => {
  const readme = read('packages/dispatch-testkit/README.md');
  const specs = join(root, 'packages/dispatch-testkit/src/specs');

  it('lists every spec file with its number of tests, and the total', () => {
    const rows = tableAfter(readme, '## What it covers');
    const files = readdirSync(specs).filter((file) => file.endsWith('-spec.ts'));
    expect(rows.map((row) => row[0]).sort()).toEqual(files.sort());
    let total = 0;
    for (const [file, count] of rows) {
      const tests = readFileSync(join(specs, file as string), 'utf8').match(/^\s*it\(/gm)?.length ?? 0;
      expect(`${file}: ${count}`).toBe(`${file}: ${tests}`);
      total += tests;
    }
    expect(readme).toContain(`${total} tests in all`);
  });

  it('counts the broken dispatchers the kit is checked against', () => {
    expect(readme).toContain(`${Object.keys(brokenDispatchers).length} deliberately broken LocalDispatchers`);
  });

  it('carries the same "Add a dispatcher" checklist as CONTRIBUTING.md', () => {
    const checklist = (markdown: string, heading: string) => {
      const start = markdown.indexOf(heading) + heading.length;
      const end = markdown.slice(start).search(/\n#{2,3} /);
      return (end < 0 ? markdown.slice(start) : markdown.slice(start, start + end)).trim();
    };
    expect(checklist(read('CONTRIBUTING.md'), '### Add a dispatcher')).toBe(
      checklist(readme, '## Add a dispatcher'),
    );
  });
});

describe('every package README', () => {
  const packages = readdirSync(join(root, 'packages'));
  /**
   * Each package's public entry points (`exports` subpath → source file). An `./internal` subpath is for
   * Lunation's own packages, with no stability promise: the API reference covers it, a user's README does not.
   */
  const entries = packages.flatMap((name) => {
    const manifest = JSON.parse(read(`packages/${name}/package.json`)) as {
      exports: Record<string, { '@lunation/source'?: string } | string>;
    };
    return Object.entries(manifest.exports).flatMap(([subpath, target]) =>
      typeof target === 'string' || !target['@lunation/source'] || subpath === './internal'
        ? []
        : [{ name, subpath, path: join(root, 'packages', name, target['@lunation/source']) }],
    );
  });
  let names: Map<string, string[]>;

  beforeAll(() => {
    const base = ts.getParsedCommandLineOfConfigFile(
      join(root, 'tsconfig.base.json'),
      {},
      {
        ...ts.sys,
        onUnRecoverableConfigFileDiagnostic: () => {},
      },
    );
    names = exportedNames(
      entries.map((entry) => entry.path),
      base?.options ?? {},
    );
  }, 180_000);

  it.each(packages)('mentions every export of %s', (name) => {
    const readme = read(`packages/${name}/README.md`);
    const missing = entries
      .filter((entry) => entry.name === name)
      .flatMap((entry) =>
        (names.get(entry.path) ?? [])
          .filter((exported) => !readme.includes(exported))
          .map((exported) => `${entry.subpath} ${exported}`),
      );
    expect(missing).toEqual([]);
  });
});

describe('the CONTRIBUTING checklists', () => {
  const contributing = read('CONTRIBUTING.md');

  it.each([
    [
      '### Add a store',
      [
        'assertCheckpointCommit',
        'assertBeginToolExecution',
        'assertId',
        'assertInteger',
        'assertObject',
        'pageLimit',
        'defaultPageLimit',
        'toJsonText',
      ],
    ],
    [
      '### Add a dispatcher',
      [
        'resolveDispatchPolicy',
        'dispatchRetryDelay',
        'assertSubmission',
        'assertId',
        'assertInteger',
        'parseRunEventId',
        'claimLostError',
        'overloadedError',
      ],
    ],
    [
      '### Add a provider',
      [
        'streamWithRetries',
        'resolveRetryPolicy',
        'errorCodeForStatus',
        'errorCodeForErrorType',
        'parseRetryAfter',
        'providerError',
        'cancelledError',
        'streamInterruptedError',
      ],
    ],
  ])(
    "%s names the helpers it asks for, and they exist in the contract's utils subpath",
    async (heading, helpers) => {
      const start = contributing.indexOf(heading);
      const checklist = contributing.slice(start, contributing.indexOf('\n## ', start));
      const helpersOf = {
        '### Add a store': await import('@lunation/contract/store-utils'),
        '### Add a dispatcher': await import('@lunation/contract/dispatch-utils'),
        '### Add a provider': await import('@lunation/contract/provider-utils'),
      } as Record<string, Record<string, unknown>>;
      for (const helper of helpers) {
        expect(checklist, heading).toContain(`\`${helper}\``);
        expect(helpersOf[heading]?.[helper], helper).toBeDefined();
      }
    },
  );
});

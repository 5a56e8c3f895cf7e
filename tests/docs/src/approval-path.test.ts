import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHttpApi, LocalFront } from '@lunation/http';
import { createRuntime, defineTool, permissionPlugin } from '@lunation/runtime';
import { callTool, reply, ScriptedModel } from '@lunation/runtime/testing';
import { SqliteStore } from '@lunation/store-sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type EnteredFunction, FunctionTracer, functionNames } from './function-tracer.js';

const root = join(import.meta.dirname, '..', '..', '..');
const docPath = join(root, 'docs', 'approval-path.md');
/** Set to rewrite the doc's recorded path from this run instead of checking it. */
const update = process.env.UPDATE_APPROVAL_PATH === '1';
const BEGIN = '<!-- recorded path: begin -->';
const END = '<!-- recorded path: end -->';

/** The functions entered up to one store call, and that call. */
interface Stage {
  entered: EnteredFunction[];
  storeCall: string;
}

/** The files whose functions count: the HTTP API and the runtime, without its test helpers. */
function counted(file: string): boolean {
  return /^(http|runtime)\/src\//.test(file) && !file.startsWith('runtime/src/testing/');
}

/**
 * Runs the doc's case — one approval, `POST /threads/t/decisions` on `createHttpApi` with a `LocalFront`, a
 * runtime on a `SqliteStore` file, a waiting run with one open ticket — and records, store call by store call,
 * the functions it enters, up to C2 (the first commit after the approved tool ran).
 */
async function recordApproval(): Promise<Stage[]> {
  const directory = mkdtempSync(join(tmpdir(), 'approval-path-'));
  const store = new SqliteStore({ path: join(directory, 'threads.db') });
  const ran: string[] = [];
  const send = defineTool({
    name: 'gated_send',
    description: 'Sends',
    input: z.object({}),
    execute: () => {
      ran.push('sent');
      return 'sent';
    },
  });
  const runtime = createRuntime()
    .model('m', new ScriptedModel([callTool('gated_send', {}), reply('done')]))
    .agent({
      id: 'a',
      model: 'm',
      tools: [send],
      plugins: [{ plugin: permissionPlugin, config: { rules: [{ tool: 'gated_*', decision: 'ask' }] } }],
    })
    .store(store)
    // No lease renewal (a store call of its own) within the recording, however slow the machine.
    .options({ leaseTtlMs: 600_000 })
    .build();
  const waiting = await (await runtime.run({ threadId: 't', input: 'go', stream: false })).result;
  expect(waiting.openTickets).toHaveLength(1);
  const api = createHttpApi({ store, front: new LocalFront(runtime) });
  const stages: Stage[] = [];
  let tracer: FunctionTracer | undefined;
  // Every store method marks a stage: what ran since the last store call, then the call itself.
  for (const name of storeMethods(store)) {
    const method = (store as unknown as Record<string, (...args: unknown[]) => unknown>)[name] as (
      ...args: unknown[]
    ) => unknown;
    Object.defineProperty(store, name, {
      value: (...args: unknown[]) => {
        if (tracer !== undefined) {
          stages.push({ entered: tracer.take(), storeCall: `SqliteStore.${name}` });
          if (name === 'commit' && ran.length > 0) {
            tracer.stop();
            tracer = undefined;
          }
        }
        return method.apply(store, args);
      },
    });
  }
  try {
    tracer = new FunctionTracer(counted);
    const body = JSON.stringify({ decisions: [{ ticketId: waiting.openTickets[0]?.id, action: 'resume' }] });
    const response = await api.handle(
      new Request('http://localhost/threads/t/decisions', {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json' },
      }),
    );
    expect(response.status).toBe(200);
    await response.text(); // the run's events, to its end
    expect(tracer).toBeUndefined();
    expect(ran).toEqual(['sent']);
    expect(await store.getLatestRun('t')).toMatchObject({ status: 'done' });
    return stages;
  } finally {
    tracer?.stop();
    await api.close();
    await store.close();
    rmSync(directory, { recursive: true, force: true });
  }
}

function storeMethods(store: SqliteStore): string[] {
  // The store's own methods and those of the classes it extends (a store on the contract's `CheckedStore`).
  const names = new Set<string>();
  for (
    let prototype = Object.getPrototypeOf(store) as object | null;
    prototype !== null && prototype !== Object.prototype;
    prototype = Object.getPrototypeOf(prototype) as object | null
  ) {
    for (const name of Object.getOwnPropertyNames(prototype)) {
      // Methods only: reading a getter on the prototype would run it without an instance.
      const value = Object.getOwnPropertyDescriptor(prototype, name)?.value;
      // The layer's own guard is not a store call.
      if (name !== 'constructor' && name !== 'assertOpen' && typeof value === 'function') names.add(name);
    }
  }
  return [...names];
}

/** What the counts table says of a recorded path. */
function countsOf(stages: Stage[]): {
  files: number;
  functions: number;
  again: number;
  storeCalls: number;
} {
  const files = new Set<string>();
  const functions = new Set<string>();
  let entries = 0;
  for (const stage of stages) {
    for (const { file, name } of stage.entered) {
      files.add(file);
      functions.add(`${file} › ${name}`);
      entries++;
    }
  }
  return {
    files: files.size,
    functions: functions.size,
    again: entries - functions.size,
    storeCalls: stages.length,
  };
}

/** The doc's recorded section for a path. */
function render(stages: Stage[]): string {
  const { files, functions, again, storeCalls } = countsOf(stages);
  const lines = [
    BEGIN,
    '',
    '| files | functions | entered again in a later stage | store calls |',
    '| ---: | ---: | ---: | ---: |',
    `| ${files} | ${functions} | ${again} | ${storeCalls} |`,
  ];
  stages.forEach((stage, index) => {
    lines.push('', `### ${index + 1}. Up to \`${stage.storeCall}\``, '', '```');
    for (const { file, name } of stage.entered) lines.push(`${file} › ${name}`);
    lines.push(`store › ${stage.storeCall}`, '```');
  });
  lines.push('', END);
  return lines.join('\n');
}

function recordedSection(doc: string): string {
  const begin = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (begin === -1 || end === -1)
    throw new Error(`docs/approval-path.md has no "${BEGIN}" … "${END}" section`);
  return doc.slice(begin, end + END.length);
}

describe('docs/approval-path.md', () => {
  let stages: Stage[];

  beforeAll(async () => {
    stages = await recordApproval();
  });

  afterAll(() => {
    if (!update) return;
    const doc = readFileSync(docPath, 'utf8');
    writeFileSync(docPath, doc.replace(recordedSection(doc), render(stages)));
  });

  it('lists exactly the functions one approval enters, stage by stage (rewrite: UPDATE_APPROVAL_PATH=1)', () => {
    if (update) return;
    expect(recordedSection(readFileSync(docPath, 'utf8'))).toBe(render(stages));
  });

  it("records the protocol: lease, load, lease in the run's name, C0, C2 — with the loop on the path", () => {
    expect(stages.map((stage) => stage.storeCall)).toEqual([
      'SqliteStore.acquireLease',
      'SqliteStore.loadCheckpoint',
      'SqliteStore.acquireLease',
      'SqliteStore.commit',
      'SqliteStore.commit',
    ]);
    const names = stages.map((stage) => new Set(stage.entered.map(({ file, name }) => `${file} › ${name}`)));
    expect(names[0]?.has('http/src/local-front.ts › LocalFront.decide')).toBe(true);
    expect(names[3]?.has('runtime/src/loop/tool-calls.ts › ToolCalls.resume')).toBe(true);
    expect(names[4]?.has('runtime/src/loop/tool-invoker.ts › invokeTool')).toBe(true);
  });

  it('names functions the way the list does', () => {
    const code = [
      'class A { constructor() {} async run() { const inner = () => 1; return inner(); } get size() { return 1; } }',
      'class B { hook = () => 2; }',
      'function free() { [1].map((x) => x); }',
      'const named = async (x) => x;',
    ].join('\n');
    const names = [...functionNames(code).values()].filter((name) => name !== undefined);
    expect(names).toEqual(['new A', 'new A', 'A.run', 'new B', 'B.hook', 'free', 'named']);
  });
});

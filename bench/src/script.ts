import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';

/** The one tool of every workload: `add({ a, b }) -> { sum }`. */
export const ADD_TOOL_NAME = 'add';
export const ADD_DESCRIPTION = 'Adds two numbers';
export const addInputSchema = z.object({ a: z.number(), b: z.number() });
/** The JSON arguments the scripted model sends with every tool call. */
export const ADD_ARGUMENTS = '{"a":1,"b":2}';
/** The scripted model's final answer. */
export const FINAL_TEXT = 'done';
/** Token usage every scripted model reports per call. */
export const USAGE = { inputTokens: 10, outputTokens: 5 } as const;

/** What the scripted model does on one call. */
export interface Turn {
  /** True: call `add`; false: answer `done`. */
  readonly callTool: boolean;
  /** A unique id for the tool call. */
  readonly toolCallId: string;
  /** Awaited before answering (the W2 model latency, or the W2 memory barrier); undefined when instant. */
  readonly wait: Promise<void> | undefined;
}

/** What a harness observed at the end of one run, checked by `Script.finish`. */
export interface Observed {
  finalText: string;
  /** Successful `add` results the framework reported for the run (sum 3 each). */
  toolResults: number;
  /** Steps (model calls) the framework reported, when it reports them. */
  steps?: number;
  /** Streaming variants: `tool-result`-like events seen on the stream. */
  streamedToolResults?: number;
}

interface RunEntry {
  readonly steps: number;
  calls: number;
}

/**
 * The script every framework's scripted model follows: in a run of S steps the model calls `add` with
 * {"a":1,"b":2} at steps 1..S-1 and answers "done" at step S. Each run's input text carries a key (`go #<key>`)
 * that the model reads from the first user message, so concurrent runs are scripted independently. The script
 * counts model calls per run and tool executions overall, and `finish` throws unless a run made exactly S model
 * calls, S-1 tool executions and ended with "done".
 */
export class Script {
  private readonly runs = new Map<string, RunEntry>();
  private sequence = 0;
  /** Tool executions since the script was created. */
  toolExecutions = 0;
  /** Model calls since the script was created. */
  modelCalls = 0;
  private barrier:
    | { target: number; atCall: number; arrived: number; release: Promise<void>; onArrived: () => void }
    | undefined;

  constructor(
    private readonly keyPrefix: string,
    /** Latency of every model call (W2). */
    private readonly modelDelayMs = 0,
  ) {}

  /** Registers a run of `steps` steps; returns its key (also usable as a thread id) and its input text. */
  start(steps: number): { key: string; input: string } {
    const key = `${this.keyPrefix}${this.sequence++}`;
    this.runs.set(key, { steps, calls: 0 });
    return { key, input: `go #${key}` };
  }

  /** The scripted model's decision for a call whose first user message is `inputText`. */
  turn(inputText: string): Turn {
    const key = inputText.slice(inputText.indexOf('#') + 1);
    const entry = this.runs.get(key);
    if (!entry) throw new Error(`Scripted model: no run "${key}" (input "${inputText}")`);
    entry.calls++;
    this.modelCalls++;
    if (entry.calls > entry.steps) {
      throw new Error(`Scripted model: run "${key}" made call ${entry.calls} of ${entry.steps}`);
    }
    let wait: Promise<void> | undefined;
    const barrier = this.barrier;
    if (barrier && entry.calls === barrier.atCall) {
      barrier.arrived++;
      if (barrier.arrived === barrier.target) barrier.onArrived();
      wait = this.modelDelayMs > 0 ? barrier.release.then(() => sleep(this.modelDelayMs)) : barrier.release;
    } else if (this.modelDelayMs > 0) {
      wait = sleep(this.modelDelayMs);
    }
    return { callTool: entry.calls < entry.steps, toolCallId: `call_${key}_${entry.calls}`, wait };
  }

  /** The tool's body, shared by every framework. */
  add(a: number, b: number): { sum: number } {
    this.toolExecutions++;
    return { sum: a + b };
  }

  /** Checks a finished run and forgets it. */
  finish(key: string, observed: Observed): void {
    const entry = this.runs.get(key);
    if (!entry) throw new Error(`Run "${key}" is unknown or finished twice`);
    this.runs.delete(key);
    const problems: string[] = [];
    if (entry.calls !== entry.steps)
      problems.push(`made ${entry.calls} model calls, expected ${entry.steps}`);
    if (observed.toolResults !== entry.steps - 1)
      problems.push(`reported ${observed.toolResults} tool results, expected ${entry.steps - 1}`);
    if (observed.steps !== undefined && observed.steps !== entry.steps)
      problems.push(`reported ${observed.steps} steps, expected ${entry.steps}`);
    if (observed.streamedToolResults !== undefined && observed.streamedToolResults !== entry.steps - 1)
      problems.push(`streamed ${observed.streamedToolResults} tool results, expected ${entry.steps - 1}`);
    if (observed.finalText !== FINAL_TEXT)
      problems.push(`ended with ${JSON.stringify(observed.finalText)}, expected "${FINAL_TEXT}"`);
    if (problems.length > 0) throw new Error(`Run "${key}" ${problems.join('; ')}`);
  }

  /** Runs not finished yet. */
  get openRuns(): number {
    return this.runs.size;
  }

  /**
   * Holds every run in its model call number `atCall` (before the latency) until `target` runs are there; then
   * calls `onArrived` synchronously, with all of them in flight, and lets them go on once it returns.
   */
  holdRuns(target: number, atCall: number, onArrived: () => void): void {
    let release!: () => void;
    const promise = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.barrier = {
      target,
      atCall,
      arrived: 0,
      release: promise,
      onArrived: () => {
        this.barrier = undefined;
        onArrived();
        release();
      },
    };
  }
}

/** Throws unless the tool executions counted between two points match the runs made. */
export function expectToolExecutions(script: Script, before: number, runs: number, steps: number): void {
  const executed = script.toolExecutions - before;
  if (executed !== runs * (steps - 1)) {
    throw new Error(
      `Expected ${runs * (steps - 1)} tool executions for ${runs} runs of ${steps} steps, got ${executed}`,
    );
  }
}

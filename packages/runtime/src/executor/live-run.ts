import type { AgentEvent, EventSink, RunIdentity } from '@lunation/contract';
import { EventStream } from '../event-stream.js';
import type { AgentLoop } from '../loop/agent-loop.js';
import type { ToolCallRecord } from '../loop/call-records.js';
import { RunAbortController, type RunResult } from '../loop/run-scope.js';
import type { RunHandle } from './run-options.js';

/**
 * A run of this runtime from the moment it reserves its thread to its end, and the handle its caller gets.
 * Thousands may wait in model calls at once, so it holds only what the run needs: no closures of its own.
 */
export class LiveRun implements RunHandle {
  /** Aborted by `cancel()`, the caller's signal, a lost lease or `cancelAll()`. */
  readonly controller = new RunAbortController();
  /** @internal set once the loop runs; until then the thread is only reserved. */
  loop: AgentLoop | undefined;
  /** Set once the loop runs. */
  result!: Promise<RunResult>;
  /** @internal the fencing token of the thread's lease (with a store) from its launch until it releases it. */
  leaseToken: number | undefined;
  /** @internal the token the run released its lease under: its events' fence after it ended. */
  releasedToken: number | undefined;
  /** @internal how many of the thread's messages were committed when the run loaded it (with a store). */
  loadedMessages: number | undefined;
  /** @internal the open step's call records as the run loaded them (results settled before it ran). */
  loadedCalls: Readonly<Record<string, ToolCallRecord>> | undefined;
  private stream: EventStream | undefined;
  private signal: AbortSignal | undefined;
  private ended = false;

  constructor(
    /** The run's identity: the reservation's, then (set by {@link LiveRun.start}) its final one. */
    public identity: RunIdentity,
    private readonly sinks: readonly EventSink[],
    /** Whether `events` buffers the run's events. */
    private readonly buffer: boolean,
    private readonly onEvent: ((event: AgentEvent) => void) | undefined,
  ) {
    if (buffer) this.stream = new EventStream();
  }

  /** @internal whether anyone receives the run's events (its buffer, `onEvent` or a sink). */
  get listening(): boolean {
    return this.buffer || this.onEvent !== undefined || this.sinks.length > 0;
  }

  get runId(): string {
    return this.identity.runId;
  }

  get threadId(): string {
    return this.identity.threadId;
  }

  /** The buffered events; for a run started with `stream: false`, a stream that only ends with the run. */
  get events(): EventStream {
    if (this.stream === undefined) {
      this.stream = new EventStream();
      if (this.ended) this.stream.close();
    }
    return this.stream;
  }

  /**
   * @internal the launch stage starts the run: its final identity (a run that continues an earlier one takes
   * that run's), the lease it holds and what it loaded.
   */
  start(launch: RunLaunch): void {
    this.identity = launch.identity;
    this.leaseToken = launch.leaseToken;
    this.loadedMessages = launch.loadedMessages;
    this.loadedCalls = launch.loadedCalls;
  }

  cancel(reason?: string): void {
    this.controller.abort(reason ?? 'cancelled');
  }

  /** @internal hands an event of the run to its stream, its `onEvent` and the runtime's sinks. */
  emit(event: AgentEvent): void {
    if (this.buffer) this.stream?.push(event);
    if (this.onEvent) this.onEvent(event);
    for (const sink of this.sinks) {
      try {
        const pendingEmit = sink.emit(event);
        if (pendingEmit) pendingEmit.catch(ignoreError);
      } catch {
        // A failing sink must not break the run.
      }
    }
  }

  /** @internal cancels the run when the caller's signal aborts, until the run ends. */
  follow(signal: AbortSignal): void {
    if (signal.aborted) {
      this.controller.abort(signal.reason);
      return;
    }
    this.signal = signal;
    signal.addEventListener('abort', this, { once: true });
  }

  /** @internal the caller's signal aborted (this object is its listener: no closure per run). */
  handleEvent(): void {
    this.controller.abort(this.signal?.reason);
  }

  /** @internal the run ended: its events end, and the caller's signal no longer holds on to it. */
  end(): void {
    this.ended = true;
    this.stream?.close();
    this.signal?.removeEventListener('abort', this);
    this.signal = undefined;
  }
}

/** What the launch stage decided for a run it starts ({@link LiveRun.start}). */
export interface RunLaunch {
  identity: RunIdentity;
  leaseToken: number | undefined;
  loadedMessages: number;
  loadedCalls: Readonly<Record<string, ToolCallRecord>> | undefined;
}

/** The `emit` of a run nobody listens to: the loop builds no events then. */
export function ignoreEvent(): void {}

function ignoreError(): void {}

/** A handle given to a caller, who may never look at its result: a failed run must not be an unhandled rejection. */
export function observed(handle: RunHandle): RunHandle {
  handle.result.catch(ignoreError);
  return handle;
}

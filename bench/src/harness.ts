import type { Instrumentation, LunationStore } from '@lunation/contract';
import type { PostgresStoreKind } from './postgres.js';
import type { Script } from './script.js';

/** `generate`: await the final result only; `stream`: consume every event of the run as it comes. */
export type Mode = 'generate' | 'stream';

/** Where runs are checkpointed: nowhere, a memory store, a SQLite file, Redis or PostgreSQL (see postgres.ts). */
export type StoreKind = 'none' | 'memory' | 'sqlite' | 'redis' | PostgresStoreKind;

export interface HarnessOptions {
  mode: Mode;
  store: StoreKind;
  script: Script;
  /** A fresh directory for database files. */
  workDir: string;
  redisUrl: string;
  /** Prefix for Redis keys, unique to this harness. */
  redisKeyPrefix: string;
  /** Lunation only: use this store (the caller closes it) instead of opening one of kind `store`. */
  storeInstance?: LunationStore;
  /** Lunation only: the runtime's instrumentation (the tracing-overhead command's OpenTelemetry tracing). */
  instrumentation?: Instrumentation;
  /** Lunation only: the runtime's thread lease (longer under valgrind, where a run can outlive the default). */
  leaseTtlMs?: number;
}

/** One framework set up for one variant of the tool-loop workload. */
export interface Harness {
  /** Makes one run of `steps` steps with a fresh thread, consuming it as the mode says, and checks it. */
  run(steps: number): Promise<void>;
  close(): Promise<void>;
}

export type HarnessFactory = (options: HarnessOptions) => Promise<Harness>;

/** A variant that cannot run here (a missing store, no Redis); reported instead of a figure. */
export class Unavailable extends Error {
  override readonly name = 'Unavailable';
}

/** The text of the first user message, for scripted models. */
export function firstText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    for (const part of content) {
      if (typeof part === 'string') return part;
      if (part && typeof part === 'object' && typeof (part as { text?: unknown }).text === 'string')
        return (part as { text: string }).text;
    }
  }
  throw new Error(`Scripted model: cannot read the input text from ${JSON.stringify(content)}`);
}

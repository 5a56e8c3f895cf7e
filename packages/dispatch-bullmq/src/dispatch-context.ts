import type { Clock, IdSource } from '@lunation/contract';
import type { ResolvedDispatchPolicy } from '@lunation/contract/dispatch-utils';
import type { Redis } from 'ioredis';
import type { LuaScript } from './dispatch-scripts.js';
import type { DispatchKeys } from './redis-keys.js';

/** The settings of a BullMQ dispatcher beyond the contract's policy, with defaults applied. */
export interface BullMQSettings {
  lockMs: number;
  stalledIntervalMs: number;
  blockMs: number;
  resourceRetryMs: number;
  sweepIntervalMs: number;
  commandTimeoutMs: number;
}

/** What the parts of a BullMQ dispatcher share: the command connection, keys, policy and settings. */
export interface DispatchContext {
  readonly client: Redis;
  readonly keys: DispatchKeys;
  readonly policy: ResolvedDispatchPolicy;
  readonly settings: BullMQSettings;
  /** Where the dispatcher's own code reads time and sets timers (not BullMQ's: its timers are its own). */
  readonly clock: Clock;
  /** Where claim tokens and cancel request ids come from. */
  readonly ids: IdSource;
  /** Runs one of the dispatcher's Lua scripts. */
  run(script: LuaScript, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown>;
  /** Makes sure the thread has its BullMQ job (adding one is a no-op while it exists). */
  wake(threadId: string, resourceId: string | undefined): Promise<void>;
  /** Reports an error of background work (the sweep, a pump, a hand-back at close). */
  reportError(error: unknown): void;
}

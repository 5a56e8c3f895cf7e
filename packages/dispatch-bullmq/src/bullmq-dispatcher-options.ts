import { type Clock, type DispatchPolicy, type IdSource, LunationError } from '@lunation/contract';
import { assertInteger } from '@lunation/contract/dispatch-utils';
import type { Redis } from 'ioredis';
import type { BullMQSettings } from './dispatch-context.js';

/** Settings every BullMQ dispatcher takes, beside the contract's policy. */
export interface BullMQDispatcherCommonOptions extends DispatchPolicy {
  /** Prepended to every key, BullMQ's included, so several apps can share one Redis. @default 'lunation:dispatch:' */
  keyPrefix?: string;
  /** The BullMQ queue's name (no `:`). @default 'threads' */
  queueName?: string;
  /** The lock of a claim made without `lockMs` (BullMQ's `lockDuration`). @default 2000 */
  lockMs?: number;
  /** How often claiming dispatchers look for lost claims (BullMQ's `stalledInterval`). @default 500 */
  stalledIntervalMs?: number;
  /** How long one blocking wait for a job or an event lasts before it is renewed. @default 1000 */
  blockMs?: number;
  /** How long a thread of a tenant at its cap is put aside before it is offered again. @default 250 */
  resourceRetryMs?: number;
  /** How often claiming dispatchers wake threads whose submissions lost their job in a crash. @default 10000 */
  sweepIntervalMs?: number;
  /** The longest a worker-side call waits for Redis before it fails with `store-unavailable`. @default 5000 */
  commandTimeoutMs?: number;
  /** Receives errors of background work (lost-claim checks, sweeps, reconnects). @default ignore them */
  onError?: (error: unknown) => void;
  /**
   * Where the dispatcher's own code reads time and sets its timers (claim waits, call timeouts, the sweep,
   * reconnect pauses, the times it records). BullMQ's own timers and lock checks run on the host's clock: keep this
   * one in step with it. @default systemClock
   */
  clock?: Clock;
  /** Where claim tokens (BullMQ lock values) and cancel request ids come from. @default systemIds */
  ids?: IdSource;
}

/** A dispatcher that opens (and closes) its own connections to `url`. */
export interface BullMQDispatcherUrlOptions extends BullMQDispatcherCommonOptions {
  /** Where to connect. @default 'redis://127.0.0.1:6379' */
  url?: string;
}

/** A dispatcher on a client you own (left open by `close()`); it duplicates it for blocking connections. */
export interface BullMQDispatcherClientOptions extends BullMQDispatcherCommonOptions {
  /** An ioredis client without its own `keyPrefix`. */
  client: Redis;
}

/** Options of {@link BullMQDispatcher}: a URL or a client, plus the common settings. */
export type BullMQDispatcherOptions = BullMQDispatcherUrlOptions | BullMQDispatcherClientOptions;

/** The settings beyond the policy, with their defaults; `invalid-argument` for a bad one. */
export function resolveSettings(options: BullMQDispatcherCommonOptions): BullMQSettings {
  if ('maxLostClaims' in options && options.maxLostClaims !== undefined) {
    throw new LunationError(
      'invalid-argument',
      'maxLostClaims was removed: a lost claim (a worker that died or stalled past its lock) never dead-letters a thread any more, only fail() does (maxAttempts); remove the option',
    );
  }
  const settings: BullMQSettings = {
    lockMs: options.lockMs ?? 2_000,
    stalledIntervalMs: options.stalledIntervalMs ?? 500,
    blockMs: options.blockMs ?? 1_000,
    resourceRetryMs: options.resourceRetryMs ?? 250,
    sweepIntervalMs: options.sweepIntervalMs ?? 10_000,
    commandTimeoutMs: options.commandTimeoutMs ?? 5_000,
  };
  for (const [name, value] of Object.entries(settings)) assertInteger(value, name, 1);
  return settings;
}

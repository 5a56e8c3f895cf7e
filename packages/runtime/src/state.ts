import { type JsonValue, LunationError } from '@lunation/contract';
import type { z } from 'zod';

/** `run` keys reset when a run starts; `thread` keys live across the thread's runs. */
export type StateScope = 'run' | 'thread';
/** How two hooks of one phase writing the same key are reconciled. */
export type MergeMode = 'exclusive' | 'commutative';

/**
 * A typed piece of state, declared once. Updates go through the pure reducer `apply`; hooks never mutate.
 * `run` keys reset at run start; `thread` keys live across runs (and are persisted when `persistent`).
 * Two hooks of one phase may both write a `commutative` key (their updates are applied in registration
 * order); on an `exclusive` key the engine re-runs the later hooks on fresh snapshots instead.
 */
export interface StateKey<Value, Update = Value> {
  readonly name: string;
  readonly schema: z.ZodType<Value>;
  /** The value before any update. */
  readonly initial: () => Value;
  /** The pure reducer of updates. */
  readonly apply: (value: Value, update: Update) => Value;
  readonly scope: StateScope;
  readonly persistent: boolean;
  readonly merge: MergeMode;
}

/** A state key of any value and update type. */
// biome-ignore lint/suspicious/noExplicitAny: a key of any value type
export type AnyStateKey = StateKey<any, any>;

/** What {@link defineStateKey} takes. */
export interface StateKeyOptions<Value, Update> {
  name: string;
  schema: z.ZodType<Value>;
  /** The value before any update. */
  initial: () => Value;
  /** @default replaces the value with the update */
  apply?: (value: Value, update: Update) => Value;
  /** @default 'run' */
  scope?: StateScope;
  /** @default true */
  persistent?: boolean;
  /** @default 'exclusive' */
  merge?: MergeMode;
}

/** Declares a state key. */
export function defineStateKey<Value, Update = Value>(
  options: StateKeyOptions<Value, Update>,
): StateKey<Value, Update> {
  return {
    name: options.name,
    schema: options.schema,
    initial: options.initial,
    apply: options.apply ?? ((_value: Value, update: Update) => update as unknown as Value),
    scope: options.scope ?? 'run',
    persistent: options.persistent ?? true,
    merge: options.merge ?? 'exclusive',
  };
}

/** One reducer update of one key. Build it with `update(key, value)`. */
export interface StateUpdate {
  readonly key: AnyStateKey;
  readonly update: unknown;
}

/** A typed state update, for use in commands. */
export function updateState<Value, Update>(key: StateKey<Value, Update>, value: Update): StateUpdate {
  return { key, update: value };
}

/** A read-only view of the state at one revision. */
export class StateSnapshot {
  /** @internal */
  constructor(
    readonly revision: number,
    private readonly values: ReadonlyMap<string, unknown>,
    private readonly keys: ReadonlyMap<string, AnyStateKey>,
  ) {}

  /** The key's value (its initial value when never written). */
  // biome-ignore lint/suspicious/noExplicitAny: any update type
  get<Value>(key: StateKey<Value, any>): Value {
    if (this.values.has(key.name)) return this.values.get(key.name) as Value;
    if (!this.keys.has(key.name)) {
      throw new LunationError(
        'unknown-state-key',
        `State key "${key.name}" is not registered; register it in a plugin`,
      );
    }
    return key.initial();
  }

  /** Whether the key was ever written. */
  has(key: AnyStateKey): boolean {
    return this.values.has(key.name);
  }

  /** The persistent values of one scope, by key name (for checkpoints). */
  export(scope: StateScope): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [name, value] of this.values) {
      const key = this.keys.get(name);
      if (key && key.scope === scope && key.persistent) out[name] = value;
    }
    return out;
  }
}

/** The mutable holder of a run's state: registered keys and copy-on-write snapshots. */
export class StateStore {
  private keys: Map<string, AnyStateKey>;
  /** The keys map belongs to someone else (the agent's plugins): copied before a key is added. */
  private keysShared: boolean;
  private values = new Map<string, unknown>();
  private current: StateSnapshot | undefined;
  /** True once a snapshot holds `values`: the next commit must copy instead of mutating in place. */
  private shared = false;
  private revision = 0;
  /** Bumped whenever a thread-scoped value changes (so checkpoints can skip unchanged thread state). */
  threadRevision = 0;
  /** A write of one key put off until the state is next read (see `writeBeforeRead`). */
  private deferred: (() => void) | undefined;
  private deferredKey: string | undefined;

  /** `keys` as a map by name (the agent's plugin keys) is shared, not copied, until a key is added. */
  constructor(keys: Iterable<AnyStateKey> | ReadonlyMap<string, AnyStateKey> = []) {
    if (keys instanceof Map) {
      this.keys = keys;
      this.keysShared = true;
    } else {
      this.keys = new Map();
      this.keysShared = false;
      for (const key of keys as Iterable<AnyStateKey>) this.register(key);
    }
  }

  /** Registers a key (once). */
  register(key: AnyStateKey): void {
    const existing = this.keys.get(key.name);
    if (existing && existing !== key) {
      throw new LunationError('duplicate-registration', `State key "${key.name}" is registered twice`);
    }
    if (existing === key) return;
    if (this.keysShared) {
      this.keys = new Map(this.keys);
      this.keysShared = false;
    }
    this.keys.set(key.name, key);
    this.current = undefined;
  }

  /** True when the key is registered. */
  isRegistered(key: AnyStateKey): boolean {
    return this.keys.get(key.name) === key;
  }

  get revisionNumber(): number {
    this.flushDeferred();
    return this.revision;
  }

  /**
   * Puts off a write of `key` until the state is next snapshotted or exported, or the key itself is read: for a
   * value the owner keeps current elsewhere and changes often (the run's progress), so that it is written once
   * per read instead of once per change. A later call replaces an earlier one not yet run.
   */
  writeBeforeRead(key: AnyStateKey, write: () => void): void {
    this.deferred = write;
    this.deferredKey = key.name;
  }

  private flushDeferred(): void {
    const write = this.deferred;
    if (write === undefined) return;
    this.deferred = undefined;
    this.deferredKey = undefined;
    write();
  }

  /** A read-only view of the current revision. */
  snapshot(): StateSnapshot {
    this.flushDeferred();
    if (this.current === undefined) {
      this.current = new StateSnapshot(this.revision, this.values, this.keys);
      this.shared = true;
    }
    return this.current;
  }

  /** The key's current value, without making a snapshot (for the loop's own reads). */
  // biome-ignore lint/suspicious/noExplicitAny: any update type
  peek<Value>(key: StateKey<Value, any>): Value {
    if (key.name === this.deferredKey) this.flushDeferred();
    return (this.values.has(key.name) ? this.values.get(key.name) : key.initial()) as Value;
  }

  /** Whether the key was ever written. */
  written(key: AnyStateKey): boolean {
    if (key.name === this.deferredKey) this.flushDeferred();
    return this.values.has(key.name);
  }

  /**
   * Loads persisted values of one scope (unknown names are kept aside and written back unchanged, so state of
   * plugins not active in this run is not lost).
   */
  restore(values: Record<string, unknown> | undefined): void {
    this.flushDeferred();
    if (!values) return;
    const names = Object.keys(values);
    if (names.length === 0) return;
    const next = this.shared ? new Map(this.values) : this.values;
    for (const name of names) next.set(name, values[name]);
    this.values = next;
    this.shared = false;
    this.revision++;
    this.threadRevision++;
    this.current = undefined;
  }

  /** Drops the values of every run-scoped key. */
  resetRunScope(): void {
    this.flushDeferred();
    const next = new Map<string, unknown>();
    for (const [name, value] of this.values) {
      const key = this.keys.get(name);
      if (!key || key.scope === 'thread') next.set(name, value);
    }
    this.values = next;
    this.shared = false;
    this.revision++;
    this.current = undefined;
  }

  /**
   * Applies updates atomically and returns the new snapshot. With `baseRevision`, fails with `state-conflict`
   * when the state moved on. Every touched key must be registered.
   */
  commit(updates: readonly StateUpdate[], baseRevision?: number): StateSnapshot {
    this.write(updates, baseRevision);
    return this.snapshot();
  }

  /**
   * `commit` without making a snapshot: while no snapshot is taken, later writes update the values in place
   * instead of copying them.
   */
  write(updates: readonly StateUpdate[], baseRevision?: number): void {
    if (baseRevision !== undefined) this.flushDeferred();
    if (baseRevision !== undefined && baseRevision !== this.revision) {
      throw new LunationError(
        'state-conflict',
        `State commit is based on revision ${baseRevision} but the state is at ${this.revision}`,
      );
    }
    if (updates.length === 0) return;
    for (const { key } of updates) {
      if (this.keys.get(key.name) !== key) {
        throw new LunationError(
          'unknown-state-key',
          `State key "${key.name}" is not registered; register it in a plugin before writing it`,
        );
      }
    }
    // Copy on write only when a snapshot may still be reading the current map.
    const next = this.shared ? new Map(this.values) : this.values;
    this.shared = false;
    let threadChanged = false;
    for (const { key, update: value } of updates) {
      const previous = next.has(key.name) ? next.get(key.name) : key.initial();
      next.set(key.name, key.apply(previous, value));
      if (key.scope === 'thread') threadChanged = true;
    }
    if (threadChanged) this.threadRevision++;
    this.values = next;
    this.revision++;
    this.current = undefined;
  }

  /** Raw persisted values by name (including ones of keys not registered in this run). */
  exportScope(scope: StateScope): Record<string, JsonValue> {
    if (this.deferredKey !== undefined && this.keys.get(this.deferredKey)?.persistent !== false) {
      this.flushDeferred();
    }
    const out: Record<string, JsonValue> = {};
    for (const [name, value] of this.values) {
      const key = this.keys.get(name);
      if (key === undefined) {
        if (scope === 'thread') out[name] = value as JsonValue;
      } else if (key.scope === scope && key.persistent) out[name] = value as JsonValue;
    }
    return out;
  }
}

import { LunationError } from '@lunation/contract';
import type { Command, EmittedEffect, ScheduledAction } from './command.js';
import type { Phase } from './phase.js';
import type { EffectContext, PhaseContext, PluginSet } from './plugin.js';
import type { StateStore, StateUpdate } from './state.js';

/** Scheduled-action rounds allowed per phase before `phase-loop-exceeded`. */
export const MAX_ACTION_ROUNDS = 16;

export type PhaseContextBase = Omit<PhaseContext, 'phase' | 'state'>;

const NO_HOOKS: never[] = [];

/**
 * Runs phases: GATHER (every hook on one snapshot, in parallel; their commands committed atomically once;
 * hooks clashing on an exclusive key are re-run one after another on fresh snapshots, in registration order),
 * then EXECUTE (the phase's scheduled actions, in rounds), then the effects.
 */
export class PhaseEngine {
  private pending: ScheduledAction[] = [];

  constructor(
    private readonly plugins: PluginSet,
    readonly state: StateStore,
    private readonly onEffectError: (error: unknown) => void,
  ) {}

  /** Whether `phase` has anything to do (hooks or queued actions). */
  isActive(phase: Phase): boolean {
    if ((this.plugins.hooks.get(phase)?.length ?? 0) > 0) return true;
    for (const item of this.pending) if (item.action.phase === phase) return true;
    return false;
  }

  /** Runs one phase: its hooks, their commands, scheduled actions in rounds, then effects. */
  async run(phase: Phase, base: PhaseContextBase): Promise<void> {
    const hooks = this.plugins.hooks.get(phase) ?? NO_HOOKS;
    if (hooks.length === 0 && this.pending.length === 0) return;
    const effects: EmittedEffect[] = [];
    if (hooks.length > 0) {
      const snapshot = this.state.snapshot();
      const context: PhaseContext = { ...base, phase, state: snapshot };
      const results = await Promise.all(hooks.map((entry) => entry.hook(context)));
      const deferred = this.findConflicts(results);
      const updates: StateUpdate[] = [];
      for (let index = 0; index < results.length; index++) {
        const result = results[index];
        if (!result || deferred.has(index)) continue;
        if (result.updates) updates.push(...result.updates);
        this.queue(result, effects);
      }
      this.state.write(updates, snapshot.revision);
      for (const index of [...deferred].sort((a, b) => a - b)) {
        const fresh = this.state.snapshot();
        const result = await hooks[index]?.hook({ ...base, phase, state: fresh });
        if (!result) continue;
        this.state.write(result.updates ?? [], fresh.revision);
        this.queue(result, effects);
      }
    }
    await this.executeActions(phase, base, effects);
    if (effects.length > 0) await this.runEffects(effects, base);
  }

  /** Commits a command produced outside a phase's hooks (a tool's output), queueing its actions and effects. */
  async apply(command: Command | undefined, base: PhaseContextBase): Promise<void> {
    if (!command) return;
    const effects: EmittedEffect[] = [];
    if (command.updates?.length) this.state.write(command.updates);
    this.queue(command, effects);
    if (effects.length > 0) await this.runEffects(effects, base);
  }

  private findConflicts(results: ReadonlyArray<Command | undefined | void>): Set<number> {
    const deferred = new Set<number>();
    if (results.length < 2) return deferred;
    const firstWriter = new Map<string, number>();
    for (let index = 0; index < results.length; index++) {
      const updates = results[index]?.updates;
      if (!updates) continue;
      for (const { key } of updates) {
        if (key.merge !== 'exclusive') continue;
        const first = firstWriter.get(key.name);
        if (first === undefined) firstWriter.set(key.name, index);
        else if (first !== index) deferred.add(index);
      }
    }
    return deferred;
  }

  private queue(command: Command, effects: EmittedEffect[]): void {
    if (command.actions) {
      for (const item of command.actions) {
        if (!this.plugins.actions.has(item.action.name)) {
          throw new LunationError(
            'invalid-argument',
            `Action "${item.action.name}" has no handler; register one with registrar.onAction`,
          );
        }
        this.pending.push(item);
      }
    }
    if (command.effects) effects.push(...command.effects);
  }

  private async executeActions(
    phase: Phase,
    base: PhaseContextBase,
    effects: EmittedEffect[],
  ): Promise<void> {
    for (let round = 0; ; round++) {
      const due: ScheduledAction[] = [];
      const rest: ScheduledAction[] = [];
      for (const item of this.pending) (item.action.phase === phase ? due : rest).push(item);
      if (due.length === 0) return;
      if (round >= MAX_ACTION_ROUNDS) {
        throw new LunationError(
          'phase-loop-exceeded',
          `Phase ${phase}: scheduled actions kept scheduling more actions for ${MAX_ACTION_ROUNDS} rounds (last: ${due
            .map((item) => item.action.name)
            .join(', ')}); make the handlers converge`,
        );
      }
      this.pending = rest;
      for (const item of due) {
        const entry = this.plugins.actions.get(item.action.name);
        if (!entry) continue;
        const fresh = this.state.snapshot();
        const result = await entry.handler(item.payload, { ...base, phase, state: fresh });
        if (!result) continue;
        this.state.write(result.updates ?? [], fresh.revision);
        this.queue(result, effects);
      }
    }
  }

  private async runEffects(effects: EmittedEffect[], base: PhaseContextBase): Promise<void> {
    const context: EffectContext = { identity: base.identity, state: this.state.snapshot() };
    for (const { effect, payload } of effects) {
      const handlers = this.plugins.effects.get(effect.name);
      if (!handlers) continue;
      for (const { handler } of handlers) {
        try {
          await handler(payload, context);
        } catch (error) {
          this.onEffectError(error);
        }
      }
    }
  }
}

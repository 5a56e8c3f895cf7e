import type { Phase } from './phase.js';
import type { StateUpdate } from './state.js';

/** A typed action, handled in `phase` by the handler registered for it. */
export interface ActionType<Payload> {
  readonly name: string;
  readonly phase: Phase;
  /** @internal type carrier */
  readonly __payload?: Payload;
}

/** A typed effect: handled after the phase's commit; its handler cannot produce commands. */
export interface EffectType<Payload> {
  readonly name: string;
  /** @internal type carrier */
  readonly __payload?: Payload;
}

/** Declares an action bound to a phase. */
export function defineAction<Payload>(name: string, phase: Phase): ActionType<Payload> {
  return { name, phase };
}

/** Declares an effect. */
export function defineEffect<Payload>(name: string): EffectType<Payload> {
  return { name };
}

/** An action with its payload, as scheduled in a command. */
export interface ScheduledAction {
  // biome-ignore lint/suspicious/noExplicitAny: heterogeneous queue
  readonly action: ActionType<any>;
  readonly payload: unknown;
}

/** An effect with its payload, as emitted in a command. */
export interface EmittedEffect {
  // biome-ignore lint/suspicious/noExplicitAny: heterogeneous queue
  readonly effect: EffectType<any>;
  readonly payload: unknown;
}

/** What hooks, tools and action handlers return instead of mutating anything. */
export interface Command {
  updates?: StateUpdate[];
  actions?: ScheduledAction[];
  effects?: EmittedEffect[];
}

/** Schedules an action (for use in a command's `actions`). */
export function scheduleAction<Payload>(action: ActionType<Payload>, payload: Payload): ScheduledAction {
  return { action, payload };
}

/** Emits an effect (for use in a command's `effects`). */
export function emitEffect<Payload>(effect: EffectType<Payload>, payload: Payload): EmittedEffect {
  return { effect, payload };
}

/** True when the command changes nothing. */
export function isEmptyCommand(command: Command | undefined | void): boolean {
  return (
    !command ||
    ((command.updates?.length ?? 0) === 0 &&
      (command.actions?.length ?? 0) === 0 &&
      (command.effects?.length ?? 0) === 0)
  );
}

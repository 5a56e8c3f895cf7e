import type { Clock, IdSource } from '@lunation/contract';

/** Where an executor reads time, sets timers and draws ids (`AgentRuntimeOptions.clock` / `ids`). */
export interface Seams {
  readonly clock: Clock;
  readonly ids: IdSource;
}

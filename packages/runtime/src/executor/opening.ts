import type { Message, ResumeDecision, RunRecord } from '@lunation/contract';
import type { ThreadCaller } from '../decision-admission.js';
import type { LoadedThread } from '../persistence.js';
import type { RegistrySnapshot } from '../registry.js';
import type { LiveRun } from './live-run.js';
import type { RunOptions } from './run-options.js';

/** Who asks to open a thread (a thread not theirs is `not-found`), and whether a missing one is created. */
export interface Owner extends ThreadCaller {
  /** Whether a missing thread is created (a run's), or `not-found` (decisions name a thread that must exist). */
  create: boolean;
}

/**
 * A run being opened, the one value its stages pass on (reserve → lease → load → settle → launch): each stage
 * reads it and answers what it decided as a new `Opening` (or an outcome that ends the opening); none changes
 * the one it was given, and only the launch makes the `LiveRun` active.
 */
export interface Opening {
  /** The run that holds the thread in this process from its reservation on. */
  readonly run: LiveRun;
  readonly request: RunOptions;
  /** The request's input, normalised. */
  readonly input: Message[];
  /** The request's decisions (their shapes checked); after the settle stage, only the fresh ones. */
  readonly decisions: ResumeDecision[];
  /** The registry version the run resolves its agents in. */
  readonly snapshot: RegistrySnapshot;
  /** Who opens the thread. */
  readonly owner: Owner;
  /** The fencing token of the thread's lease (lease stage; with a store). */
  readonly leaseToken?: number | undefined;
  /** The thread as loaded, its owner checked and its state upgraded (load stage). */
  readonly thread?: LoadedThread | undefined;
  /** The earlier run this one continues (settle stage). */
  readonly previous?: RunRecord | undefined;
  /** The waiting run that the new input supersedes (settle stage). */
  readonly superseded?: RunRecord | undefined;
}

/** An opening whose thread is loaded. */
export type LoadedOpening = Opening & { readonly thread: LoadedThread };

/** The phases of a run, in order. The step phases repeat; the three tool phases run once per tool call. */
export const PHASES = [
  'RunStart',
  'StepStart',
  'BeforeInference',
  'AfterInference',
  'ToolGate',
  'BeforeToolExecute',
  'AfterToolExecute',
  'StepEnd',
  'RunEnd',
] as const;

/** One of {@link PHASES}. */
export type Phase = (typeof PHASES)[number];

import {
  type InterruptPolicy,
  interruptPolicySchema,
  type ToolAnnotations,
  toolAnnotationsSchema,
} from '@lunation/contract';
import { z } from 'zod';
import { definePlugin, type ToolGateDecision } from '../plugin.js';
import { allowedToolsKey } from '../runtime-keys.js';
import { updateState } from '../state.js';

export const permissionDecisionSchema = z.enum(['allow', 'deny', 'ask']);
/** What a rule decides: `allow`, `deny` or `ask`. */
export type PermissionDecision = z.infer<typeof permissionDecisionSchema>;

/**
 * A permission rule: a tool-name glob, optional argument globs and annotations, a decision and a message, and
 * the interrupt policy of the calls it matches. A rule may carry only one of `decision` and `interrupt`.
 */
export const permissionRuleSchema = z
  .object({
    /** Tool name glob: `*` any characters, `?` one character. */
    tool: z.string().min(1),
    /** Argument globs by top-level argument name; every one must match (string values, others by JSON). */
    arguments: z.record(z.string(), z.string()).optional(),
    /**
     * Tool annotations every one of which must equal the tool's (e.g. `{ destructiveHint: true }`); a tool
     * without that annotation does not match.
     */
    annotations: toolAnnotationsSchema.omit({ title: true }).optional(),
    /** Absent: the rule takes no part in allowing, asking or denying. */
    decision: permissionDecisionSchema.optional(),
    /** Shown when asking or denying. */
    message: z.string().optional(),
    /**
     * What recovery does with a matching call found started but not finished after a crash (`rerun`, `fail`
     * or `ask`); the most careful of the matching rules wins (ask > fail > rerun), over the tool's own.
     */
    interrupt: interruptPolicySchema.optional(),
  })
  .refine((rule) => rule.decision !== undefined || rule.interrupt !== undefined, {
    message: 'a rule needs a decision, an interrupt policy or both',
  });
/** A permission rule; see {@link permissionRuleSchema}. */
export type PermissionRule = z.infer<typeof permissionRuleSchema>;

/** The permission plugin's config: rules and the decision when none matches. */
export const permissionConfigSchema = z.object({
  rules: z.array(permissionRuleSchema).default([]),
  /** When no rule matches. @default 'allow' */
  defaultDecision: permissionDecisionSchema.default('allow'),
});
/** The permission plugin's config, as given; see {@link permissionConfigSchema}. */
export type PermissionConfig = z.input<typeof permissionConfigSchema>;

const RANK: Record<PermissionDecision, number> = { allow: 0, ask: 1, deny: 2 };
const INTERRUPT_RANK: Record<InterruptPolicy, number> = { rerun: 0, fail: 1, ask: 2 };

function globToRegExp(glob: string): RegExp {
  const escaped = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${escaped}$`);
}

/** Whether a rule's tool glob, annotations and argument globs match a call of a tool with `annotations`. */
function ruleMatches(
  rule: PermissionRule,
  toolName: string,
  input: unknown,
  annotations: ToolAnnotations | undefined,
): boolean {
  if (!globToRegExp(rule.tool).test(toolName)) return false;
  if (rule.annotations) {
    const wanted = Object.entries(rule.annotations) as Array<[keyof ToolAnnotations, unknown]>;
    if (!wanted.every(([name, value]) => value === undefined || annotations?.[name] === value)) return false;
  }
  if (!rule.arguments) return true;
  const args = (input ?? {}) as Record<string, unknown>;
  return Object.entries(rule.arguments).every(([name, glob]) => {
    const value = args[name];
    if (value === undefined) return false;
    return globToRegExp(glob).test(typeof value === 'string' ? value : JSON.stringify(value));
  });
}

/**
 * Which rule decides a call: deny beats ask beats allow; no match gives the default. `annotations` are the
 * tool's, matched by rules that name some.
 */
export function evaluatePermission(
  rules: readonly PermissionRule[],
  defaultDecision: PermissionDecision,
  toolName: string,
  input: unknown,
  annotations?: ToolAnnotations,
): { decision: PermissionDecision; rule: PermissionRule | undefined } {
  let best: PermissionRule | undefined;
  for (const rule of rules) {
    if (rule.decision === undefined || !ruleMatches(rule, toolName, input, annotations)) continue;
    if (!best || RANK[rule.decision] > RANK[best.decision as PermissionDecision]) best = rule;
  }
  return { decision: best?.decision ?? defaultDecision, rule: best };
}

/** The interrupt policy the rules give a call: the most careful of the matching rules' (ask > fail > rerun). */
export function evaluateInterruptPolicy(
  rules: readonly PermissionRule[],
  toolName: string,
  input: unknown,
  annotations?: ToolAnnotations,
): InterruptPolicy | undefined {
  let best: InterruptPolicy | undefined;
  for (const rule of rules) {
    if (rule.interrupt === undefined || !ruleMatches(rule, toolName, input, annotations)) continue;
    if (best === undefined || INTERRUPT_RANK[rule.interrupt] > INTERRUPT_RANK[best]) best = rule.interrupt;
  }
  return best;
}

/**
 * Rules on tool names and arguments → allow | deny | ask. `ask` suspends the call for approval (resume mode
 * replay); approving with payload `{ always: true }` allows the tool for the rest of the thread. `deny` gives
 * the model an error result saying so. A rule's `interrupt` sets the interrupt policy of the calls it matches.
 */
export const permissionPlugin = definePlugin<z.output<typeof permissionConfigSchema>>({
  name: 'permission',
  configSchema: permissionConfigSchema as unknown as z.ZodType<z.output<typeof permissionConfigSchema>>,
  register(registrar) {
    const { rules, defaultDecision } = registrar.config ?? { rules: [], defaultDecision: 'allow' };
    if (rules.some((rule) => rule.interrupt !== undefined)) {
      registrar.interruptPolicy(({ toolName, input, annotations }) =>
        evaluateInterruptPolicy(rules, toolName, input, annotations),
      );
    }
    registrar.toolGate((context): ToolGateDecision | undefined => {
      const { toolName, input } = context.toolCall;
      const { decision, rule } = evaluatePermission(
        rules,
        defaultDecision,
        toolName,
        input,
        context.tool?.annotations,
      );
      if (decision === 'allow') return undefined;
      if (decision === 'deny') {
        return {
          type: 'set-result',
          result: {
            status: 'error',
            message: rule?.message ?? `Permission denied: the tool "${toolName}" is not allowed here.`,
            metadata: { permission: 'denied' },
          },
        };
      }
      if (context.state.get(allowedToolsKey).includes(toolName)) return undefined;
      return {
        type: 'suspend',
        ticket: {
          action: 'approve',
          message: rule?.message ?? `Allow the tool "${toolName}" to run with these arguments?`,
          parameters: { toolName, arguments: (input ?? null) as never },
          responseSchema: { type: ['object', 'null'], properties: { always: { type: 'boolean' } } },
          resumeMode: 'replay-tool-call',
        },
      };
    });
    registrar.hook('BeforeToolExecute', (context) => {
      const payload = context.decision?.payload as { always?: unknown } | null | undefined;
      if (context.toolCall && payload && payload.always === true) {
        return { updates: [updateState(allowedToolsKey, context.toolCall.toolName)] };
      }
      return undefined;
    });
  },
});

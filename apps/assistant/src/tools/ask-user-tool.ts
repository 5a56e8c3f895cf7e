import { defineTool } from '@lunation/runtime';
import { z } from 'zod';

/** The action of the tickets `ask_user` opens: the user's answer is the call's result. */
export const ASK_USER_ACTION = 'input';

/**
 * Asks the user a question and waits for the answer: the call suspends with a ticket whose `responseSchema`
 * is `{ answer }` (one of `choices` when given), and the decision's payload becomes the result, as for a
 * frontend tool. The web console answers it from a form, the terminal chat from a prompt.
 */
export const askUserTool = defineTool({
  name: 'ask_user',
  description:
    'Asks the user a question and waits for the answer (optionally one of a few choices). Use it when you ' +
    'need information only the user has.',
  input: z.object({
    question: z.string().min(1).max(500).describe('The question, e.g. "Which city are you in?"'),
    choices: z.array(z.string().min(1).max(100)).min(2).max(10).optional().describe('The allowed answers'),
  }),
  execute: ({ question, choices }, context) =>
    context.suspend({
      action: ASK_USER_ACTION,
      message: question,
      responseSchema: z
        .object({
          answer: (choices ? z.enum(choices as [string, ...string[]]) : z.string().min(1)).describe(question),
        })
        .strict(),
      resumeMode: 'use-decision-as-result',
    }),
});

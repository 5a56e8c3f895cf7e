import { LunationError } from '@lunation/contract';
import { defineTool } from '@lunation/runtime';
import { z } from 'zod';

function formatterFor(timeZone: string | undefined): Intl.DateTimeFormat {
  try {
    return new Intl.DateTimeFormat('en-US', {
      ...(timeZone === undefined ? {} : { timeZone }),
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
      weekday: 'long',
      timeZoneName: 'shortOffset',
    });
  } catch (error) {
    throw new LunationError(
      'invalid-argument',
      `Unknown time zone "${timeZone}"; use an IANA name such as "Europe/Paris" or "America/New_York"`,
      { cause: error },
    );
  }
}

/** The current date and time, in the server's time zone or a given IANA time zone. */
export const currentTimeTool = defineTool({
  name: 'current_time',
  description: 'Returns the current date and time, in a given IANA time zone or the local one.',
  input: z.object({
    timeZone: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .describe('An IANA time zone such as "Asia/Tokyo"; omit it for the local time zone'),
  }),
  execute: ({ timeZone }) => {
    const now = new Date();
    const formatter = formatterFor(timeZone);
    const parts = Object.fromEntries(formatter.formatToParts(now).map((part) => [part.type, part.value]));
    return {
      timeZone: formatter.resolvedOptions().timeZone,
      localTime: `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}`,
      weekday: parts.weekday,
      utcOffset: parts.timeZoneName,
      iso: now.toISOString(),
    };
  },
});

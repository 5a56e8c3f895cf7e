import type { Page } from 'playwright-core';
import { expect } from 'vitest';

/** Records every text the page's status line showed, so a short-lived "Thinking…" is seen too. */
export const RECORD_STATUS = () => {
  const seen: string[] = [];
  (window as unknown as { statusTexts: string[] }).statusTexts = seen;
  new MutationObserver(() => {
    for (const element of document.querySelectorAll('[role="status"]')) {
      const text = element.textContent ?? '';
      if (text && seen.at(-1) !== text) seen.push(text);
    }
  }).observe(document, { subtree: true, childList: true, characterData: true });
};

/** The status texts the page showed, in order. */
export function statusTexts(page: Page): Promise<string[]> {
  return page.evaluate(() => (window as unknown as { statusTexts: string[] }).statusTexts);
}

/** Records every run event the page applies (the console's `lunation-event` DOM events). */
export const RECORD_EVENTS = () => {
  const seen: Array<{ id: string | undefined; runId: string; seq: number; type: string }> = [];
  (window as unknown as { appliedEvents: typeof seen }).appliedEvents = seen;
  addEventListener('lunation-event', (event) => {
    const { id, event: agentEvent } = (event as CustomEvent).detail as {
      id: string | undefined;
      event: { identity: { runId: string }; seq: number; type: string };
    };
    seen.push({ id, runId: agentEvent.identity.runId, seq: agentEvent.seq, type: agentEvent.type });
  });
};

/** The events the page applied, in order. */
export function appliedEvents(page: Page) {
  return page.evaluate(
    () =>
      (
        window as unknown as {
          appliedEvents: Array<{ id: string | undefined; runId: string; seq: number; type: string }>;
        }
      ).appliedEvents,
  );
}

/** Every event of one run exactly once and in order: seq 0, 1, 2, … up to its run-end. */
export async function expectWholeRun(page: Page): Promise<void> {
  const events = await appliedEvents(page);
  expect(events.length).toBeGreaterThan(10);
  expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
  expect(new Set(events.map((event) => event.runId)).size).toBe(1);
  expect(events.at(-1)?.type).toBe('run-end');
  expect(events.filter((event) => event.type === 'tool-progress')).toHaveLength(6);
}

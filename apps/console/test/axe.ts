import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

let source: Promise<string> | undefined;

/** What axe-core found on the page: each violation as `rule-id (impact): selectors`, and how many rules passed. */
export async function runAxe(page: Page): Promise<{ violations: string[]; passes: number }> {
  source ??= readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  // Injected through the DevTools protocol: the console's Content-Security-Policy refuses inline scripts.
  await page.evaluate(`${await source};undefined`);
  return page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(context: Document, options: object): Promise<unknown> } })
      .axe;
    const result = (await axe.run(document, { resultTypes: ['violations'] })) as {
      violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }>;
      passes: unknown[];
    };
    return {
      violations: result.violations.map(
        (violation) =>
          `${violation.id} (${violation.impact}): ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`,
      ),
      passes: result.passes.length,
    };
  });
}

/** Checks the page with axe-core (WCAG A/AA and best practices): throws with every violation, or if it checked little. */
export async function expectNoAxeViolations(page: Page, state: string): Promise<void> {
  const { violations, passes } = await runAxe(page);
  if (violations.length > 0) {
    throw new Error(
      `axe-core found ${violations.length} violation(s) in "${state}":\n${violations.join('\n')}`,
    );
  }
  if (passes < 10)
    throw new Error(`axe-core passed only ${passes} rules in "${state}": did it scan the page?`);
}

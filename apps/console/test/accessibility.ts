import type { Page } from 'playwright-core';

/** Roles a user operates: each needs an accessible name. */
const CONTROL_ROLES = new Set([
  'button',
  'link',
  'textbox',
  'searchbox',
  'combobox',
  'checkbox',
  'radio',
  'spinbutton',
  'slider',
  'switch',
  'tab',
  'menuitem',
  'option',
  'listbox',
  'progressbar',
]);

/**
 * Every control in the page's accessibility tree (Chromium's, through the DevTools protocol) that has no
 * accessible name, as `role` strings; an empty list means every control is labelled.
 */
export async function unlabeledControls(page: Page): Promise<string[]> {
  const session = await page.context().newCDPSession(page);
  try {
    const { nodes } = (await session.send('Accessibility.getFullAXTree')) as {
      nodes: Array<{ ignored: boolean; role?: { value?: string }; name?: { value?: string } }>;
    };
    return nodes
      .filter((node) => !node.ignored && CONTROL_ROLES.has(String(node.role?.value)))
      .filter((node) => String(node.name?.value ?? '').trim() === '')
      .map((node) => String(node.role?.value));
  } finally {
    await session.detach();
  }
}

/** How many controls the page's accessibility tree has (so a check of "none unlabeled" cannot pass on nothing). */
export async function controlCount(page: Page): Promise<number> {
  const session = await page.context().newCDPSession(page);
  try {
    const { nodes } = (await session.send('Accessibility.getFullAXTree')) as {
      nodes: Array<{ ignored: boolean; role?: { value?: string } }>;
    };
    return nodes.filter((node) => !node.ignored && CONTROL_ROLES.has(String(node.role?.value))).length;
  } finally {
    await session.detach();
  }
}

/** The focused element's name as a user hears it: its aria-label, its label, or its text. */
export function focusedName(page: Page): Promise<string> {
  return page.evaluate(() => {
    const element = document.activeElement as HTMLElement | null;
    if (!element || element === document.body) return '';
    const labelled = element.getAttribute('aria-label');
    if (labelled) return labelled;
    const id = element.id;
    const label = id ? document.querySelector(`label[for="${id}"]`)?.textContent : undefined;
    return (label ?? element.textContent ?? '').trim();
  });
}

/** Presses Tab until the focused element's accessible name matches `name` (at most `limit` presses). */
export async function tabTo(page: Page, name: RegExp, limit = 40): Promise<void> {
  for (let press = 0; press < limit; press++) {
    await page.keyboard.press('Tab');
    if (name.test(await focusedName(page))) return;
  }
  throw new Error(`Tab never reached a control named ${name} in ${limit} presses`);
}

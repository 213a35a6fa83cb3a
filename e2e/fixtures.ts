// Shared helpers: wait for hydration (and for a page's numbers), and save a screenshot of every page a test visits.
import { test as base, expect, Page } from '@playwright/test';
import * as fs from 'fs';
import * as path from 'path';

const shots = path.join(__dirname, 'screenshots');

/** Console errors and warnings (hydration warnings, policy violations) a page logged, with
 * its URL. The browser's own line for a 4xx answer is not one: a test that asks for a page
 * that does not exist, or sends a form the server refuses, expects that answer. */
export function watchConsole(page: Page, who = ''): string[] {
  const problems: string[] = [];
  page.on('console', (m) => {
    const expected = /^Failed to load resource: the server responded with a status of 4\d\d/.test(m.text());
    if ((m.type() === 'error' || m.type() === 'warning') && !expected) problems.push(`${who}${page.url()}: ${m.text()}`);
  });
  return problems;
}

export const test = base.extend<{ shoot: (name: string) => Promise<void> }>({
  // Every page a test visits must log no console error or warning.
  page: async ({ page }, use) => {
    const problems = watchConsole(page);
    await use(page);
    expect(problems, 'console errors or warnings').toEqual([]);
  },
  shoot: async ({ page }, use, info) => {
    fs.mkdirSync(shots, { recursive: true });
    await use(async (name: string) => {
      const file = `${info.title.replace(/[^a-z0-9]+/gi, '-')}-${name}.png`.toLowerCase();
      await page.screenshot({ path: path.join(shots, file), fullPage: true });
    });
  },
});

/** Resolves once the wasm bundle has hydrated the server-rendered page. */
export async function hydrated(page: Page) {
  await expect(page.locator('body')).toHaveAttribute('data-hydrated', 'true', { timeout: 30_000 });
}

/** Resolves once the page shows its numbers: hydrated, and no progress line left (a page
 * whose numbers are still being computed shows one and asks the server again). */
export async function settled(page: Page) {
  await hydrated(page);
  await expect(page.getByTestId('pending')).toHaveCount(0, { timeout: 60_000 });
}

export { expect };

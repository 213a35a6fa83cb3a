// Shared helpers: wait for hydration (and for a page's numbers), and save a screenshot of every page a test visits.
import { test as base, expect, Page } from '@playwright/test';
import * as fs from 'fs';
import * as path from 'path';

const shots = path.join(__dirname, 'screenshots');

export const test = base.extend<{ shoot: (name: string) => Promise<void> }>({
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

// Shared helpers: wait for hydration, and save a screenshot of every page a test visits.
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

export { expect };

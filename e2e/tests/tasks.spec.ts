// The tasks page: filter (client-side after hydration), open a task, follow a graph link.
import { test, expect, hydrated } from '../fixtures';

test('filters tasks on the client, opens a task and follows a graph link to the live site', async ({ page, shoot }) => {
  await page.goto('/tasks');
  await expect(page.getByTestId('task-count')).toHaveText('750 of 750 tasks');
  await hydrated(page);
  await shoot('all-tasks');

  // A marker on window survives client-side navigation but not a page load: if it is
  // still there after filtering, the change was handled by the hydrated app.
  await page.evaluate(() => ((window as any).__sameDocument = true));
  await page.getByLabel('Site').selectOption('forum');
  await expect(page).toHaveURL(/\/tasks\?domain=forum$/);
  await expect(page.getByTestId('task-count')).toHaveText('150 of 750 tasks');
  await page.getByLabel('Category').selectOption('CROSS_FORUM_SPAM');
  await expect(page.getByTestId('task-count')).toHaveText('30 of 750 tasks');
  await page.getByLabel('Surface').selectOption('true');
  await expect(page).toHaveURL(/contradiction=true/);
  expect(await page.evaluate(() => (window as any).__sameDocument)).toBe(true);
  await shoot('filtered');

  const first = page.locator('table.tasks tbody tr').first().getByRole('link');
  const id = (await first.textContent())!.trim();
  expect(id).toMatch(/^forum-/);
  await first.click();
  await expect(page.getByRole('heading', { level: 1, name: id })).toBeVisible();
  await expect(page.getByRole('heading', { name: 'Hidden layer' })).toBeVisible();
  await shoot('task');

  const graphLinks = page.locator('ol.graph a');
  expect(await graphLinks.count()).toBeGreaterThan(1);
  const target = await graphLinks.nth(1).getAttribute('href');
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith(target!)),
    graphLinks.nth(1).click(),
  ]);
  expect(response.status()).toBe(200);
  await expect(page.locator('body.site-forum')).toBeVisible();
  await expect(page.locator('h1')).not.toBeEmpty();
  await shoot('live-page');
});

test('an unknown address shows a real 404 page', async ({ page, shoot }) => {
  const response = await page.goto('/wiki/A/Nothing_here');
  expect(response!.status()).toBe(404);
  await expect(page.getByRole('heading', { name: 'Page not found' })).toBeVisible();
  await shoot('site-404');
  const dash = await page.goto('/tasks/not-a-task');
  expect(dash!.status()).toBe(404);
  await shoot('task-404');
});

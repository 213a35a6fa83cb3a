// A newcomer's first visit: the home page leads to a quick baseline run (one click), the
// run's page, a trajectory, the leaderboard, the robustness plot and the heatmaps, and the
// book. Every stop is photographed.
import { test, expect, hydrated, settled } from '../fixtures';

test("a newcomer's tour from the home page", async ({ page, request, shoot }) => {
  test.setTimeout(180_000);
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('response', (r) => { if (r.status() >= 500) problems.push(`${r.status()} ${r.url()}`); });

  // The launch form's defaults are in the server-rendered page, before any script runs.
  const runsHtml = await (await request.get('/runs')).text();
  expect(runsHtml).toMatch(/<input[^>]*id="launch-tasks"[^>]*value="shop"/);

  await page.goto('/');
  await hydrated(page);
  await expect(page.getByRole('heading', { name: 'Start here' })).toBeVisible();
  await expect(page.getByRole('heading', { name: 'Recent runs' })).toBeVisible();
  await expect(page.getByRole('heading', { name: 'Leaderboard' })).toBeVisible();
  await shoot('home');

  // One click: a quick baseline run, followed to its end.
  await page.getByRole('button', { name: 'Run a quick baseline' }).click();
  await expect(page).toHaveURL(/\/runs\/run-[0-9a-f]+$/);
  const run = page.url().split('/').pop()!;
  await expect(page.locator('.run-progress [data-status]')).toHaveAttribute('data-status', 'done', { timeout: 60_000 });
  await expect(page.locator('.run-progress .progress-text')).toContainText('120 of 120 finished');
  await shoot('quick-run-done');

  // The home page now lists it first, and the top of its leaderboard.
  await page.goto('/');
  await settled(page);
  await expect(page.locator('table.recent-runs tbody tr').first()).toContainText(run);
  await expect(page.locator('table.top-rows caption')).toContainText(run);
  await expect(page.locator('table.top-rows tbody tr')).toHaveCount(3);
  await shoot('home-after');

  // A trajectory of the run.
  await page.goto(`/runs/${run}?agent=explorer&level=L1`);
  await hydrated(page);
  await page.locator('table.trials tbody tr a[href*="/trials/"]').first().click();
  await expect(page.getByRole('heading', { name: 'Timeline' })).toBeVisible();
  await shoot('trajectory');

  // The leaderboard and the plots.
  await page.locator('nav').getByRole('link', { name: 'Leaderboard' }).click();
  await settled(page);
  await expect(page.locator('table.board tbody tr')).toHaveCount(3);
  await shoot('leaderboard');
  await page.goto(`/robustness?run=${run}`);
  await settled(page);
  await expect(page.locator('svg').first()).toBeVisible();
  await shoot('robustness');
  await page.goto(`/heatmaps?run=${run}`);
  await settled(page);
  await expect(page.locator('table, svg').first()).toBeVisible();
  await shoot('heatmaps');

  // Two configurations of the run compared trial by trial, and one changed verdict side by side.
  await page.goto(`/compare?a=${run}:surface&b=${run}:explorer`);
  await hydrated(page);
  await expect(page.locator('table.compare-metrics tbody tr').first()).toContainText('acc_dec');
  await shoot('compare');
  await page.locator('table.compare-changed a.side-by-side').first().click();
  await expect(page.locator('table.compare-trials tr.diverges')).toHaveCount(1);
  await shoot('compare-trials');

  // The book, served beside the dashboard.
  await page.goto('/');
  await page.getByRole('link', { name: 'The book' }).click();
  await expect(page).toHaveURL(/\/book\/index\.html$/);
  await expect(page.getByRole('heading', { name: 'Introduction' })).toBeVisible();
  await shoot('book');
  expect(problems).toEqual([]);
});

// The manipulation ladder as a researcher sees it: the credulous reader (and its keyword-
// defended form) over forum tasks at L0–L3, launched from the form. Attack success must rise
// level by level on the heatmap, and robustness at L3 must sit below robustness at L1 on the
// Pareto plot. The pages are photographed.
import { test, expect, hydrated, settled } from '../fixtures';

test('the ladder shows a dose-response on the heatmap and the robustness plot', async ({ page, request, shoot }) => {
  test.setTimeout(240_000);
  await page.goto('/runs');
  await hydrated(page);
  await page.getByLabel('Tasks').fill('forum');
  await page.getByLabel('Agent configurations').fill('credulous, credulous+keyword');
  await page.getByLabel('Levels').fill('L0, L1, L2, L3');
  await page.getByLabel('Seeds').fill('0');
  await page.getByRole('button', { name: 'Launch' }).click();
  await expect(page).toHaveURL(/\/runs\/run-[0-9a-f]+$/);
  const run = page.url().split('/').pop()!;
  await expect(page.locator('.run-progress [data-status]')).toHaveAttribute('data-status', 'done', { timeout: 180_000 });

  const asr = await (await request.get(`/api/export/heatmap.json?run=${run}&metric=attack_success&by=agent`)).json();
  const cell = (level: string) => asr.cells.find((c: any) => c.level === level && c.column === 'credulous').est.mean;
  expect(cell('L0')).toBeLessThan(cell('L1'));
  expect(cell('L1')).toBeLessThan(cell('L2'));
  expect(cell('L2')).toBeLessThan(cell('L3'));
  await page.goto(`/heatmaps?run=${run}&metric=attack_success&by=agent`);
  await settled(page);
  await expect(page.locator('table.heatmap td.heat').first()).toBeVisible();
  await shoot('heatmap-attack-success-by-level');

  const robustness = async (level: string) => {
    const r = await (await request.get(`/api/export/robustness.json?run=${run}&level=${level}`)).json();
    return r.points.find((p: any) => p.agent === 'credulous').robustness.mean;
  };
  expect(await robustness('L3')).toBeLessThan(await robustness('L1'));
  for (const level of ['L1', 'L3']) {
    await page.goto(`/robustness?run=${run}&level=${level}`);
    await settled(page);
    await expect(page.locator('figure.plot svg title')).toHaveCount(2);
    await shoot(`robustness-${level}`);
  }
});

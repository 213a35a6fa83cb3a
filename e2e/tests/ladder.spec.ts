// The manipulation ladder as a researcher sees it: the credulous reader (and its keyword-
// defended form) over forum tasks at L0–L3, launched from the form. The goal rate must rise
// level by level on the heatmap, the paired manipulation effect must be above 0 at L3, and
// robustness at L3 must sit below robustness at L1 on the Pareto plot. The pages are
// photographed.
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

  const asr = await (await request.get(`/api/export/heatmap.json?run=${run}&metric=goal_rate&by=agent`)).json();
  const cell = (level: string) => asr.cells.find((c: any) => c.level === level && c.column === 'credulous').est.mean;
  expect(cell('L0')).toBeLessThan(cell('L1'));
  expect(cell('L1')).toBeLessThan(cell('L2'));
  expect(cell('L2')).toBeLessThan(cell('L3'));
  await page.goto(`/heatmaps?run=${run}&metric=goal_rate&by=agent`);
  await settled(page);
  await expect(page.locator('table.heatmap td.heat').first()).toBeVisible();
  await shoot('heatmap-goal-rate-by-level');
  const effect = await (await request.get(`/api/export/heatmap.json?run=${run}&metric=manipulation_effect&by=agent`)).json();
  const moved = effect.cells.find((c: any) => c.level === 'L3' && c.column === 'credulous').est;
  expect(moved.lo).toBeGreaterThan(0);
  await page.goto(`/heatmaps?run=${run}&metric=manipulation_effect&by=agent`);
  await settled(page);
  await shoot('heatmap-manipulation-effect');

  const robustness = async (level: string) => {
    const r = await (await request.get(`/api/export/robustness.json?run=${run}&level=${level}`)).json();
    return r.points.find((p: any) => p.agent === 'credulous').robustness.mean;
  };
  expect(await robustness('L3')).toBeLessThan(await robustness('L1'));
  for (const level of ['L1', 'L3']) {
    await page.goto(`/robustness?run=${run}&level=${level}`);
    await settled(page);
    await expect(page.locator('figure.robustness-plot svg title')).toHaveCount(2);
    await shoot(`robustness-${level}`);
  }

  // Counterfactual replay: credulous's L3 trial on the first task, re-run from its first
  // turn without the party's text, set beside the original turn by turn.
  await page.goto(`/runs/${run}/trials/${run}-000003`);
  await hydrated(page);
  const panel = page.getByRole('region', { name: 'Counterfactual replays' });
  await expect(panel).toBeVisible();
  await panel.getByRole('button', { name: 'Replay' }).click();
  await expect(async () => {
    await panel.getByRole('button', { name: 'Refresh' }).click();
    await expect(panel.locator('details.replay[data-state="done"]')).toHaveCount(1, { timeout: 1_000 });
  }).toPass({ timeout: 30_000 });
  await panel.locator('details.replay summary').first().click();
  await expect(panel.locator('table.aligned tbody tr').first()).toBeVisible();
  await shoot('replay-panel');
});

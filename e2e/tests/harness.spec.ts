// Trajectories from other harnesses, as a researcher loads them: an Inspect AI log, an
// AgentDojo result directory and ATIF trajectories (fixtures the tools wrote themselves) are
// imported with the real binary, then opened in Chromium turn by turn. Each page shows the
// harness's record; a sample that is not a Mirage task says Mirage's metrics do not apply;
// AgentDojo's injected text is marked and its attack success shown. The pages are photographed.
import { test, expect, hydrated, settled } from '../fixtures';
import { execFileSync } from 'child_process';
import * as path from 'path';

const root = path.join(__dirname, '..', '..');
const db = path.join(__dirname, '..', 'test-results', 'e2e.db');
const fixtures = path.join(root, 'server', 'tests', 'it', 'harness');

function importRun(rel: string): string {
  const run = execFileSync(path.join(root, 'target', 'debug', 'mirage'), ['--db', db, 'runs', 'import', path.join(fixtures, rel)], {
    encoding: 'utf8',
  }).trim();
  expect(run).toMatch(/^run-[0-9a-f]+$/);
  return run;
}

test('imported Inspect, AgentDojo and ATIF trajectories show in the viewer', async ({ page, shoot }) => {
  test.setTimeout(180_000);
  // Inspect AI: a sample that is a Mirage task (scored by Mirage) and one that is not.
  const inspect = importRun('inspect/refunds.eval');
  await page.goto(`/runs/${inspect}`);
  await hydrated(page);
  await expect(page.locator('table.trials tbody tr')).toHaveCount(3);
  await shoot('inspect-run');
  await page.goto(`/runs/${inspect}/trials/${inspect}-000000`);
  await hydrated(page);
  await expect(page.getByTestId('harness')).toContainText('From Inspect AI');
  await expect(page.getByTestId('metrics-na')).toHaveCount(0);
  await expect(page.getByTestId('verdict')).toHaveText('APPROVE');
  await shoot('inspect-mapped-sample');
  await page.goto(`/runs/${inspect}/trials/${inspect}-000001`);
  await hydrated(page);
  await expect(page.getByTestId('metrics-na')).toBeVisible();
  await expect(page.getByTestId('harness-scores')).toContainText('includes');
  await expect(page.locator('article.turn')).toHaveCount(2);
  await expect(page.locator('article.turn code.action').first()).toContainText('goto(');
  await shoot('inspect-harness-only-sample');

  // AgentDojo: the injected bill text is a marked span; the obeying pipeline's attack succeeded.
  const dojo = importRun('agentdojo');
  await page.goto(`/runs/${dojo}/trials/${dojo}-000002`);
  await hydrated(page);
  await expect(page.getByTestId('attack')).toContainText('Attack success: yes');
  await expect(page.locator('mark.manipulated[data-injection="injection_bill_text"]').first()).toBeVisible();
  await expect(page.locator('ol.timeline li.label-adoption')).toHaveClass(/yes/);
  await expect(page.locator('ol.timeline li.label-verification a.annotate-label')).toHaveAttribute('href', `/annotate/${dojo}-000002/verification`);
  await shoot('agentdojo-attack');
  // Its record counts: attack success by pipeline under the direct attack.
  await page.goto(`/heatmaps?run=${dojo}&metric=goal_rate&by=agent`);
  await settled(page);
  await expect(page.locator('table.heatmap td.heat').first()).toBeVisible();
  await shoot('agentdojo-goal-rate-heatmap');

  // ATIF: the parent trajectory links to its subagent, whose page links back.
  const atif = importRun('atif');
  await page.goto(`/runs/${atif}`);
  await hydrated(page);
  await page.locator('table.trials a', { hasText: `${atif}-000000` }).click();
  await expect(page.getByTestId('harness')).toContainText('From ATIF');
  await shoot('atif-parent');
  await page.getByTestId('harness').locator('a', { hasText: 'main-1094/lookup-1' }).click();
  await expect(page.getByTestId('harness')).toContainText('Delegated by');
  await expect(page.getByTestId('metrics-na')).toBeVisible();
  await shoot('atif-subagent');
});

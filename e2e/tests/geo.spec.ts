// The GEO ranking pages in Chromium: a GEO run started from the command line (BM25 over the
// STSData lists with the clean text, keyword stuffing and the built-in LLM-Guidance rewrite)
// shows on the leaderboard with its bands and method × dataset table, and a target opens
// with the list, the edit and its rank in every order. Every page is photographed.
import { execFileSync } from 'child_process';
import * as path from 'path';
import { test, expect, hydrated } from '../fixtures';

const root = path.join(__dirname, '..', '..');
const db = path.join(__dirname, '..', 'test-results', 'e2e.db');

test('a GEO run on the leaderboard and one target in full', async ({ page, shoot }) => {
  test.setTimeout(180_000);
  const out = execFileSync(
    path.join(root, 'target', 'debug', 'mirage'),
    ['--db', db, 'geo', 'run', '--ranker', 'bm25,position', '--dataset', 'stsdata', '--method', 'clean,stuff,cseo:llm_guidance'],
    { encoding: 'utf-8' },
  );
  const run = out.match(/run-[0-9a-f]+/)![0];

  await page.goto(`/geo?run=${run}`);
  await hydrated(page);
  await expect(page.getByRole('heading', { name: 'GEO ranking' })).toBeVisible();
  const board = page.locator('table.geo-board');
  await expect(board.locator('tbody tr')).toHaveCount(6);
  await expect(board).toContainText('white-hat rewrite');
  await expect(page.locator('table.geo-heat')).toHaveCount(2);
  await expect(page.locator('table.geo-rankers tbody tr')).toHaveCount(3);
  await shoot('leaderboard');

  await board.getByRole('link', { name: '30 targets' }).first().click();
  await expect(page.getByRole('heading', { name: /Targets of/ })).toBeVisible();
  await shoot('targets');
  await page.locator('table.geo-targets a').first().click();
  await expect(page).toHaveURL(/\/geo\/trials\//);
  await expect(page.getByRole('heading', { name: 'GEO target' })).toBeVisible();
  await expect(page.locator('ol.geo-list li.target')).toHaveCount(1);
  await expect(page.locator('table.geo-orders tbody tr')).toHaveCount(10);
  await page.locator('table.geo-orders details').first().locator('summary').click();
  await shoot('target');

  // The runs list shows the GEO run with its progress like any other run.
  await page.goto(`/runs/${run}`);
  await expect(page.locator('.run-progress')).toContainText('180 of 180 finished');
});

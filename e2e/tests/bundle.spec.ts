// A run's static copy (`mirage runs bundle`) opened from disk in Chromium: styled, every
// page reachable by its own links, every link a file of the copy, nothing fetched from
// anywhere else and no script run.
import { test, expect } from '../fixtures';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { pathToFileURL, fileURLToPath } from 'url';

const root = path.join(__dirname, '..', '..');
// Its own database: the shared one's runs are counted by other specs (a task's trials).
const db = path.join(__dirname, '..', 'test-results', 'bundle.db');
const mirage = path.join(root, 'target', 'debug', 'mirage');

test('a bundled run opens from a file:// URL and links only to its own files', async ({ page, shoot }) => {
  for (const f of [db, `${db}-wal`, `${db}-shm`]) fs.rmSync(f, { force: true });
  const said = execFileSync(mirage, ['--db', db, 'run', '--agent', 'surface,oracle',
    '--tasks', 'shop-example-01,forum-example-01', '--levels', 'L0,L3'], { encoding: 'utf8' });
  const run = said.match(/run (run-[0-9a-f]+)/)![1];
  const out = path.join(__dirname, '..', 'test-results', `bundle-${run}`);
  fs.rmSync(out, { recursive: true, force: true });
  execFileSync(mirage, ['--db', db, 'runs', 'bundle', run, '-o', out], { encoding: 'utf8' });

  const elsewhere: string[] = [];
  page.on('request', (r) => { if (!r.url().startsWith('file://')) elsewhere.push(r.url()); });
  const problems: string[] = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  page.on('pageerror', (e) => problems.push(e.message));

  // Every link of a page must name a file of the copy (or a fragment, or a page elsewhere
  // on the web); nothing may point back at a server.
  const linksResolve = async () => {
    const hrefs = await page.locator('a[href]').evaluateAll((as) => as.map((a) => (a as HTMLAnchorElement).href));
    for (const href of hrefs) {
      if (href.startsWith('https://')) continue;
      expect(href, `${page.url()} links to ${href}`).toMatch(/^file:\/\//);
      expect(fs.existsSync(fileURLToPath(href.split('#')[0])), `${href} is a file of the copy`).toBe(true);
    }
  };

  await page.goto(pathToFileURL(path.join(out, 'index.html')).href);
  await expect(page.locator('h1')).toHaveText(run);
  await expect(page.locator('.bundle-note')).toContainText('static copy');
  // The stylesheet applied (the menu bar is a dark flex row).
  await expect(page.locator('header.topbar')).toHaveCSS('display', 'flex');
  await linksResolve();
  await shoot('run');

  await page.locator('header.topbar nav').getByText('Leaderboard').click();
  await expect(page).toHaveURL(/leaderboard\.html$/);
  await expect(page.locator('table.board tbody tr')).toHaveCount(2);
  await linksResolve();
  await shoot('leaderboard');

  await page.locator('header.topbar nav').getByText('Robustness').click();
  await expect(page.locator('figure.robustness-plot svg')).toBeVisible();
  await linksResolve();
  await shoot('robustness');

  await page.locator('header.topbar nav').getByText('Heatmaps').click();
  await expect(page.locator('td.heat').first()).toBeVisible();
  await linksResolve();

  await page.locator('header.topbar nav').getByText('Report').click();
  await expect(page.locator('table.report').first()).toBeVisible();
  await linksResolve();

  // Back on the run page, a trial's trajectory, turn by turn.
  await page.locator('a.brand').click();
  await expect(page).toHaveURL(/index\.html$/);
  await page.locator(`a[href^="trials/${run}-"]`).first().click();
  await expect(page).toHaveURL(/trials\/run-[0-9a-f]+-\d+\.html$/);
  await expect(page.locator('article.turn').first()).toBeVisible();
  await expect(page.getByTestId('verdict')).not.toBeEmpty();
  await linksResolve();
  await shoot('trajectory');

  // What the agent saw on a turn is a file of its own, shared by the turns that saw it.
  await page.locator('p.seen-link a').first().click();
  await expect(page).toHaveURL(/seen\/[0-9a-f]{16}\.html$/);
  await expect(page.locator('h1')).toHaveText('What the agent saw');
  await expect(page.locator('pre.observation')).toContainText('URL:');
  await expect(page.locator('header.topbar nav')).toHaveCount(0);

  expect(elsewhere).toEqual([]);
  expect(problems).toEqual([]);
});

// The GEO ranking pages in Chromium: a GEO run started from the command line (BM25 over the
// STSData lists with the clean text, keyword stuffing and the built-in LLM-Guidance rewrite)
// shows on the leaderboard with its bands and method × dataset table, and a target opens
// with the list, the edit and its rank in every order. A judge (a small OpenAI-compatible
// stand-in started by this test) then scores the run with `mirage geo score`, and the
// leaderboard gains the judge's columns, the realised rates and the NRG-against-AUROC plot.
// Every page is photographed.
import { execFile, execFileSync } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import * as path from 'path';
import { promisify } from 'util';
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

  // A judge endpoint: the longer the description, the likelier "Yes" (stuffing lengthens it).
  const judge = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = JSON.parse(raw);
      const text: string = body.messages[body.messages.length - 1].content;
      const yes = -6 + text.length / 150;
      const top = [{ token: 'Yes', logprob: yes }, { token: 'No', logprob: -1 }];
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({
        choices: [{ index: 0, message: { role: 'assistant', content: 'Yes' },
          logprobs: { content: [{ token: 'Yes', logprob: yes, top_logprobs: top }] }, finish_reason: 'length' }],
      }));
    });
  });
  await new Promise<void>((ok) => judge.listen(0, '127.0.0.1', ok));
  const port = (judge.address() as { port: number }).port;
  const config = path.join(__dirname, '..', 'test-results', 'geo-judge.toml');
  fs.writeFileSync(config, `[endpoints.lenjudge]\nbase_url = "http://127.0.0.1:${port}/v1"\nmodel = "len-judge"\n`);
  try {
    // Asynchronously, so this process keeps answering the judge's requests.
    await promisify(execFile)(
      path.join(root, 'target', 'debug', 'mirage'),
      ['--db', db, 'geo', 'score', '--run', run, '--judge', 'lenjudge', '--config', config],
    );
  } finally {
    judge.close();
  }
  await page.goto(`/geo?run=${run}`);
  await hydrated(page);
  await expect(page.getByRole('heading', { name: 'Detection' })).toBeVisible();
  await expect(page.locator('table.geo-rates tbody tr')).toHaveCount(1);
  await expect(page.locator('figure.geo-scatter svg')).toBeVisible();
  await expect(page.locator('figure.geo-scatter svg g.hover circle')).toHaveCount(6);
  await expect(board.locator('thead')).toContainText('judge AUROC');
  await expect(page.locator('select[name=judge]')).toHaveValue(/len-judge/);
  await page.locator('figure.geo-scatter').scrollIntoViewIfNeeded();
  await shoot('detection');
});

// The layout holds on a phone and on a wide screen: no page is wider than the viewport
// (wide tables scroll inside their own box), and every page is photographed at both sizes.
import { test, expect, hydrated, settled } from '../fixtures';

test('no page is wider than the viewport at 390 px and at 1,400 px', async ({ page, request, shoot }) => {
  test.setTimeout(300_000);
  // A script's write says what it is (browsers send their Origin instead).
  const launched = await request.post('/api/start_run', {
    headers: { 'x-mirage-client': 'e2e' },
    form: {
      'form[tasks]': 'forum', 'form[agents]': 'credulous, explorer', 'form[levels]': 'L1',
      'form[conditions]': 'raw', 'form[seeds]': '0', 'form[concurrency]': '4',
    },
  });
  expect(launched.ok()).toBeTruthy();
  const run: string = await launched.json();
  await page.goto(`/runs/${run}`);
  await hydrated(page);
  await expect(page.locator('.run-progress [data-status]')).toHaveAttribute('data-status', 'done', { timeout: 180_000 });
  const href = await page.locator(`a[href^="/runs/${run}/trials/"]`).first().getAttribute('href');
  const trial = href!.split('/').pop()!.split('?')[0];

  const pages = [
    '/', '/runs', `/runs/${run}`, `/runs/${run}/trials/${trial}`, `/leaderboard?run=${run}`,
    `/team?run=${run}`, `/robustness?run=${run}`, `/heatmaps?run=${run}`, `/report?run=${run}`,
    `/annotate?run=${run}`, `/annotate/${trial}/recovery`, '/tasks', '/definitions',
  ];
  // Values from the address that a page echoes (a filter, an id it did not find) wrap too.
  const long = 'W'.repeat(600);
  const echoed = [
    `/annotate?run=${run}&kind=${long}`, `/runs/${run}?agent=${long}`, `/runs/${run}/trials/${long}`,
    `/tasks/${long}`, `/team?run=${long}`, `/annotate/${trial}/${long}`,
  ];
  for (const [width, height] of [[390, 844], [1400, 900]]) {
    await page.setViewportSize({ width, height });
    for (const path of pages) {
      await page.goto(path);
      await settled(page);
      const [scroll, inner] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
      expect(scroll, `${path} at ${width} px is ${scroll} px wide`).toBeLessThanOrEqual(inner);
      await shoot(`${width}${path.replace(/[^a-z0-9]+/gi, '-')}`);
    }
  }
  await page.setViewportSize({ width: 390, height: 844 });
  for (const path of echoed) {
    await page.goto(path);
    await settled(page);
    const [scroll, inner] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
    expect(scroll, `${path.slice(0, 60)}… at 390 px is ${scroll} px wide`).toBeLessThanOrEqual(inner);
  }
});

// How long `inspect view` takes to show an Inspect log in Chromium: the time from opening
// the viewer until the log's sample list shows a sample, and until one sample's transcript
// shows its final answer. With `--page URL TEXT`: how long any page (Mirage's trajectory
// page of the same sample) takes to show TEXT. For the README's side-by-side with Mirage's
// import benchmark.
//
//   inspect view --log-dir DIR --port 7575 &
//   cd e2e && node time-inspect-view.mjs http://127.0.0.1:7575 SAMPLE_ID "TEXT IN ITS TRANSCRIPT"
//   cd e2e && node time-inspect-view.mjs --page http://127.0.0.1:3000/runs/RUN/trials/TRIAL "TEXT"
//
// Chromium is Debian's, as in the e2e suite.
import { chromium } from '@playwright/test';

const args = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
if (args[0] === '--page') {
  const [, url, text] = args;
  const t0 = Date.now();
  await page.goto(url);
  await page.getByText(text).first().waitFor({ timeout: 600_000 });
  console.log(`${url}: ${JSON.stringify(text)} shown after ${((Date.now() - t0) / 1000).toFixed(2)} s`);
  await browser.close();
  process.exit(0);
}
const [base, sample, text] = args;
const t0 = Date.now();
await page.goto(base);
// The log list, then the log (a single log opens directly in recent versions).
const logLink = page.locator('a', { hasText: /refunds/ }).first();
const firstSample = page.getByText(sample, { exact: true }).first();
await Promise.race([
  logLink.waitFor({ timeout: 600_000 }).then(() => logLink.click()).catch(() => {}),
  firstSample.waitFor({ timeout: 600_000 }),
]);
await firstSample.waitFor({ timeout: 600_000 });
const listed = (Date.now() - t0) / 1000;
await firstSample.click();
await page.getByText(text).first().waitFor({ timeout: 600_000 });
const opened = (Date.now() - t0) / 1000;
console.log(`inspect view: sample list shown after ${listed.toFixed(1)} s, sample ${sample}'s transcript after ${opened.toFixed(1)} s`);
await page.screenshot({ path: process.env.SHOT ?? '/tmp/inspect-view.png', fullPage: false });
await browser.close();

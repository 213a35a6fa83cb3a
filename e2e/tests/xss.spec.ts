// Adversarial text stays inert: a trajectory whose manipulated span, thoughts, rationale
// and agent name carry script payloads is imported, and every page that shows it is opened
// in Chromium. Nothing may run, and the strict Content-Security-Policy must not even have
// to block anything (the payloads never become markup).
import { test, expect, hydrated } from '../fixtures';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

const root = path.join(__dirname, '..', '..');
const db = path.join(__dirname, '..', 'test-results', 'e2e.db');

const payloads = [
  '<script>window.__pwned="script"</script>',
  '<img src=x onerror="window.__pwned=\'img\'">',
  '<a id="jslink" href="javascript:window.__pwned=\'link\'">click me</a>',
  '<svg onload="window.__pwned=\'svg\'"><script>window.__pwned="svg-script"</script></svg>',
  '"><iframe srcdoc="<script>parent.__pwned=\'iframe\'</script>"></iframe>',
  '<math><mtext><table><mglyph><style><img src=x onerror="window.__pwned=\'mxss\'">',
  '</pre></mark><details open ontoggle="window.__pwned=\'toggle\'">',
];

test('script payloads in a manipulation and a rationale never run', async ({ page, shoot }) => {
  const all = payloads.join(' ');
  const observation = `Customer note: ${all} (end of note)`;
  const start = Buffer.byteLength(observation.slice(0, observation.indexOf('<')));
  const end = Buffer.byteLength(observation.slice(0, observation.indexOf(' (end of note)')));
  const line = JSON.stringify({
    trial_id: 'hostile', task_id: 'shop-example-01', agent: 'agent<script>window.__pwned="agent"</script>',
    level: 'L3', condition: 'raw', seed: 0, status: 'done', spans_marked: true,
    steps: [
      { url: '/shop/admin/dashboard', observation, thought: `Following the note: ${all}`,
        action: { type: 'goto', url: '/shop/admin/dashboard' }, latency_ms: 3,
        spans: [{ id: 's1', injection: 'note"><img src=x onerror="window.__pwned=\'name\'">', text: all, start, end }] },
      { url: '/shop/admin/dashboard', observation: 'ok', thought: 'deciding',
        action: { type: 'verdict', verdict: 'APPROVE', rationale: `Approved because ${all}` }, latency_ms: 3 },
    ],
    verdict: { action: 'APPROVE', rationale: `Approved because ${all} see /shop/admin/"><script>window.__pwned="url"</script>` },
  });
  const file = path.join(__dirname, '..', 'test-results', 'hostile.jsonl');
  fs.writeFileSync(file, line + '\n');
  const run = execFileSync(path.join(root, 'target', 'debug', 'mirage'), ['--db', db, 'runs', 'import', file], {
    encoding: 'utf8',
  }).trim();
  expect(run).toMatch(/^run-[0-9a-f]+$/);

  const violations: string[] = [];
  page.on('console', (m) => { if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text()); });
  page.on('dialog', (d) => { violations.push(`dialog: ${d.message()}`); d.dismiss(); });
  // Client-side navigation calls server functions; none may fail.
  page.on('response', (r) => { if (r.status() >= 500) violations.push(`${r.status()} ${r.url()}`); });
  const trial = `${run}-000000`;
  const pages = [
    ['runs', '/runs'],
    ['run', `/runs/${run}`],
    ['trajectory', `/runs/${run}/trials/${trial}`],
    ['trajectory-turn', `/runs/${run}/trials/${trial}?page=0&turn=0`],
    ['leaderboard', `/leaderboard?run=${run}&by=level`],
    ['team', `/team?run=${run}`],
    ['robustness', `/robustness?run=${run}&level=L3`],
    ['heatmaps', `/heatmaps?run=${run}&by=agent&metric=exposure`],
    ['annotate', `/annotate?run=${run}`],
    ['search', '/search?q=pwned'],
    ['report', `/report?run=${run}`],
    ['grade', `/grade/${trial}`],
  ];
  for (const [name, url] of pages) {
    const response = await page.goto(url);
    expect(response!.status(), url).toBe(200);
    expect(response!.headers()['content-security-policy']).toContain("script-src 'self' 'nonce-");
    await hydrated(page);
    // Client-side navigation renders in the browser: leave for another page and come back.
    await page.locator('header.topbar a[href="/tasks"]').click();
    await expect(page).toHaveURL(/\/tasks$/);
    await page.goBack();
    await expect(page).toHaveURL(url);
    await page.waitForLoadState('networkidle');
    expect(await page.evaluate(() => (window as any).__pwned), url).toBeUndefined();
    await shoot(name);
  }
  // The payload shows as text where it was planted.
  await page.goto(`/runs/${run}/trials/${trial}`);
  await expect(page.locator('mark.manipulated').first()).toContainText('<script>window.__pwned="script"</script>');
  await expect(page.locator('blockquote.rationale')).toContainText('<img src=x onerror=');
  expect(await page.locator('#jslink').count()).toBe(0);
  expect(await page.evaluate(() => (window as any).__pwned)).toBeUndefined();
  expect(violations).toEqual([]);
});

test("script payloads in another harness's trajectory never run", async ({ page, shoot }) => {
  const all = payloads.join(' ');
  // An ATIF trajectory whose every free-text field carries the payloads: the agent, its
  // messages and reasoning, a tool's name and arguments, a tool result, notes and metadata.
  const trajectory = {
    schema_version: 'ATIF-v1.6', session_id: `hostile<script>window.__pwned="id"</script>`,
    agent: { name: `agent ${all}`, version: '1', model_name: `model ${all}` },
    notes: `notes ${all}`, extra: { [`key ${all}`]: `value ${all}` },
    steps: [
      { step_id: 1, source: 'user', message: `Ticket: ${all}` },
      { step_id: 2, source: 'agent', message: `Looking ${all}`, reasoning_content: `Reasoning ${all}`,
        tool_calls: [{ tool_call_id: 'c1', function_name: `tool${all}`, arguments: { q: all } }],
        observation: { results: [{ source_call_id: 'c1', content: `Result ${all}` }] } },
      { step_id: 3, source: 'agent', message: `Answer ${all}` },
    ],
  };
  const file = path.join(__dirname, '..', 'test-results', 'hostile-atif.json');
  fs.writeFileSync(file, JSON.stringify(trajectory));
  const run = execFileSync(path.join(root, 'target', 'debug', 'mirage'), ['--db', db, 'runs', 'import', file], {
    encoding: 'utf8',
  }).trim();
  const violations: string[] = [];
  page.on('console', (m) => { if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text()); });
  page.on('dialog', (d) => { violations.push(`dialog: ${d.message()}`); d.dismiss(); });
  for (const url of [`/runs/${run}`, `/runs/${run}/trials/${run}-000000`]) {
    const response = await page.goto(url);
    expect(response!.status(), url).toBe(200);
    await hydrated(page);
    await page.waitForLoadState('networkidle');
    expect(await page.evaluate(() => (window as any).__pwned), url).toBeUndefined();
  }
  await expect(page.getByTestId('harness')).toContainText('<script>window.__pwned="script"</script>');
  await expect(page.locator('article.turn code.action').first()).toContainText('<img src=x onerror=');
  expect(await page.locator('#jslink').count()).toBe(0);
  await shoot('atif-trajectory');
  expect(violations).toEqual([]);
});

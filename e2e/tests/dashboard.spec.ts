// The main flows of the dashboard in Chromium: launch a baseline run (surface, explorer and
// the credulous reader, whose quotes of what swayed it leave disputed labels) and watch it finish,
// open a trajectory and jump to its exposure turn, settle a disputed label, and see the
// leaderboard and the plots change. Every page is photographed.
import { test, expect, hydrated, settled } from '../fixtures';

test.describe.configure({ mode: 'serial' });

test('launch, watch, replay, annotate, compare', async ({ page, request, shoot }) => {
  test.setTimeout(240_000);
  const problems: string[] = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('response', (r) => { if (r.status() >= 500) problems.push(`${r.status()} ${r.url()}`); });

  // Launch: a mistake is explained next to its field, then a valid run starts.
  await page.goto('/runs');
  await hydrated(page);
  await shoot('runs-empty');
  await page.getByLabel('Tasks').fill('forum');
  await page.getByLabel('Agent configurations').fill('surface, explorer, credulous');
  await page.getByLabel('Levels').fill('L0, L1');
  await page.getByLabel('Seeds').fill('zero');
  await page.getByLabel('Concurrency').fill('0');
  await page.getByRole('button', { name: 'Launch' }).click();
  // Every bad field is named at once.
  await expect(page.locator('#launch-seeds-error')).toContainText('not a whole number');
  await expect(page.locator('#launch-concurrency-error')).toContainText('not a number from 1 to');
  await shoot('launch-invalid');
  await page.getByLabel('Seeds').fill('0');
  await page.getByLabel('Concurrency').fill('4');
  // Power before launch: 150 forum tasks × 3 configurations × L0 and L1, nothing stored.
  await page.getByRole('button', { name: 'Check power' }).click();
  const power = page.getByTestId('power');
  await expect(power).toContainText('900 trials');
  await expect(power.locator('li[data-metric=acc_dec]')).toContainText('150 paired trials per comparison');
  await expect(power).toContainText('3 comparisons');
  await shoot('launch-power');
  // While the run progresses the page asks for its coverage and trial rows every few
  // seconds at most, not once per finished trial.
  let refetches = 0;
  page.on('request', (r) => {
    if (/\/api\/(get_run|list_trials)/.test(r.url())) refetches += 1;
  });
  const launched = Date.now();
  await page.getByRole('button', { name: 'Launch' }).click();
  await expect(page).toHaveURL(/\/runs\/run-[0-9a-f]+$/);
  const run = page.url().split('/').pop()!;

  // Live progress: the status flips to done without a reload.
  await page.evaluate(() => ((window as any).__sameDocument = true));
  await expect(page.locator('.run-progress [data-status]')).toHaveAttribute('data-status', 'done', { timeout: 120_000 });
  expect(await page.evaluate(() => (window as any).__sameDocument)).toBe(true);
  await expect(page.locator('.run-progress .progress-text')).toContainText('900 of 900 finished');
  await expect(page.getByRole('heading', { name: 'Coverage' })).toBeVisible();
  // Once done, the rows and coverage are fetched a last time and read the final counts.
  await expect(page.locator('nav.pager')).toContainText('(900 trials)');
  const seconds = (Date.now() - launched) / 1000;
  expect(refetches, `${refetches} fetches of rows and coverage in ${seconds.toFixed(0)} s`).toBeLessThanOrEqual(2 * (seconds / 3 + 3));
  await shoot('run-done');
  await page.goto('/runs');
  await expect(page.locator('table.runs')).toContainText(run);
  await shoot('runs-list');

  // Replay: an explorer trial at L1, jump to its exposure turn, then step with the keyboard.
  await page.goto(`/runs/${run}?agent=explorer&level=L1`);
  await hydrated(page);
  // Followed by address: on two busy cores a click during one of the list's live updates
  // was once lost. The first trajectory of a just-finished run may wait for its scoring.
  const opened = await page.locator('table.trials tbody tr a[href*="/trials/"]').first().getAttribute('href');
  await page.goto(opened!);
  await expect(page.getByRole('heading', { name: 'Timeline' })).toBeVisible({ timeout: 60_000 });
  await hydrated(page);
  // Opened from a filtered list, the next trial is the list's next: explorer at L1 again.
  await expect(page.getByTestId('within')).toContainText('agent explorer · level L1');
  const nextTrial = page.locator('a.next-trial');
  await expect(nextTrial).toHaveAttribute('href', /\?agent=explorer&level=L1$/);
  const jump = page.locator('a.jump[data-kind="exposure"]');
  await expect(jump).toBeVisible();
  await jump.click();
  await expect(page).toHaveURL(/turn=\d+/);
  const turn = Number(new URL(page.url()).searchParams.get('turn'));
  const current = page.locator(`#turn-${turn}`);
  await expect(current).toHaveClass(/current/);
  await expect(current).toBeInViewport();
  await expect(current.locator('mark.manipulated').first()).toBeVisible();
  await shoot('trajectory-exposure');
  await page.keyboard.press('j');
  await expect(page).toHaveURL(new RegExp(`turn=${turn + 1}`));
  await expect(page.locator(`#turn-${turn + 1}`)).toHaveClass(/current/);
  // Siblings: the same task under the three configurations and both levels, each with its
  // decision; the strip leads to another configuration's trial of the same task.
  const here = page.url();
  const chips = page.locator('details.siblings ul.chips li');
  await expect(chips).toHaveCount(6);
  await expect(page.locator('details.siblings li.here')).toContainText('explorer · L1');
  await expect(page.locator('details.siblings a.chip').first()).toHaveClass(/decision-(right|acceptable|wrong|harmful)/);
  await page.locator('details.siblings li:not(.here) a.chip', { hasText: 'credulous · L1' }).click();
  await expect(page.locator('h1')).not.toHaveText(new URL(here).pathname.split('/').pop()!);
  await expect(page.locator('p.badges')).toContainText('credulous');
  // The task page lists the task's trials: three configurations at two levels.
  const taskId = await page.locator('a[href^="/tasks/"]').first().getAttribute('href');
  await page.goto(taskId!);
  await hydrated(page);
  await expect(page.getByTestId('task-trials')).toContainText('6 trials in all');
  await expect(page.locator('section[aria-labelledby="trials"] table.trials tbody tr')).toHaveCount(6);
  // The run's list by outcome: every harmful decision, and nothing else.
  await page.goto(`/runs/${run}?agent=credulous&outcome=harmful`);
  await hydrated(page);
  const harmful = page.locator('table.trials tbody tr');
  expect(await harmful.count()).toBeGreaterThan(0);
  await expect(page.locator('table.trials tbody tr .chip:not(.decision-harmful)')).toHaveCount(0);
  await page.goto(here);
  await hydrated(page);

  // A person grades this trial's reasoning (blind to the judge's score) and its decision.
  await page.getByRole('link', { name: 'Grade the reasoning and decision' }).click();
  await expect(page.getByRole('heading', { name: /Grade the reasoning of/ })).toBeVisible();
  await hydrated(page);
  await page.getByRole('button', { name: 'Save grade' }).click();
  await expect(page.locator('.grade-form .field-error').first()).toContainText('choose a value');
  await page.getByLabel('Reasoning (Acc_rsn)').selectOption('0.2');
  await page.getByRole('radio', { name: 'wrong' }).check();
  await page.getByLabel('Note').fill('quotes the surface only');
  await page.getByRole('button', { name: 'Save grade' }).click();
  await expect(page.locator('.grade-form [role=status]')).toHaveText('Saved.');
  await expect(page.getByTestId('graded-by')).toHaveText('1 person');
  await shoot('grade');

  // Numbers before any person labels anything.
  const boardBefore = await (await request.get(`/api/export/leaderboard.json?run=${run}`)).json();
  const heatBefore = await (await request.get(`/api/export/heatmap.csv?run=${run}&metric=recovery&by=agent`)).text();
  expect(heatBefore.split('\n')[0]).toContain('trials,errors,error_rate');
  expect(boardBefore.human_labels).toBe(0);
  expect(boardBefore.validation.n).toBe(1);
  expect(boardBefore.validation.enough).toBe(false);
  await page.goto(`/leaderboard?run=${run}`);
  await settled(page);
  await expect(page.locator('table.board tbody tr')).toHaveCount(3);
  // Beside every column, its grader against people: the one grade is too few to read, the
  // labels are not checked yet, the rule-computed figures point to the self-tests.
  expect(boardBefore.checks.find((c: { metric: string }) => c.metric === 'acc_rsn')?.n).toBe(1);
  const validity = page.getByTestId('grader-validity');
  await expect(validity).toContainText('r: n 1 < 10');
  await expect(validity).toContainText('not checked');
  await expect(validity).toContainText('rules, self-tested');
  await shoot('leaderboard-before');
  await page.getByRole('link', { name: 'strict' }).click();
  await expect(page).toHaveURL(/tier=strict/);
  await expect(page.locator('table.board')).toContainText('Acc_dec strict');
  await page.getByRole('button', { name: 'Compare every pair' }).click();
  await expect(page.locator('table.pairs tbody tr')).toHaveCount(3);
  await shoot('leaderboard-strict-pairs');

  // Annotate: the queue starts with recovery labels; settle a disputed one at L1 (where the
  // recovery heatmap has a cell; the queue's hash order differs from run to run).
  await page.goto(`/annotate?run=${run}&level=L1`);
  await settled(page);
  const count = page.getByTestId('queue-count');
  const waiting = Number((await count.textContent())!.split(' ')[0]);
  expect(waiting).toBeGreaterThan(0);
  await expect(page.locator('table.queue tbody tr').first()).toHaveAttribute('data-kind', 'recovery');
  await shoot('queue');
  // A disputed item (an audited one may be of a trial the recovery cell does not count).
  await page.locator('table.queue tbody tr:not(:has(.badge.audit)) a.open-item').first().click();
  await expect(page.getByRole('heading', { level: 1 })).toContainText('recovery');
  await hydrated(page);
  await expect(page.getByRole('link', { name: 'Grade its reasoning and decision' })).toHaveAttribute('href', /^\/grade\//);
  await shoot('annotate-item');
  // Reading takes no lock; "Start labelling" does. Alone in open mode, the operator settles
  // it with an adjudication (a single annotator's label would be one of the two needed).
  await expect(page.getByTestId('lock')).toContainText('Nobody is labelling it');
  await page.getByRole('button', { name: /Start labelling/ }).click();
  await expect(page.getByTestId('lock')).toContainText('You are labelling it');
  // An operator's label is an adjudication (it is not blind): no plain "Save label".
  await expect(page.getByRole('button', { name: 'Save label' })).toHaveCount(0);
  await page.getByRole('button', { name: 'Adjudicate (settles it for good)' }).click();
  await expect(page.getByRole('alert').filter({ hasText: 'choose yes or no' })).toBeVisible();
  const automatic = (await page.getByTestId('automatic').textContent())!.startsWith('yes');
  await page.getByLabel(automatic ? 'no' : 'yes', { exact: true }).check();
  await page.getByRole('button', { name: 'Adjudicate (settles it for good)' }).click();
  await expect(page.getByRole('alert').filter({ hasText: 'says why' })).toBeVisible();
  await page.getByLabel(/^Note/).fill('Read the turns: the agent never opened the profile after the injected note.');
  await page.getByRole('button', { name: 'Adjudicate (settles it for good)' }).click();
  await expect(page).toHaveURL(new RegExp(`/annotate\\?run=${run}.*level=L1`));
  await expect(count).toContainText(`${waiting - 1} labels wait`);
  await shoot('queue-after');

  // The leaderboard and the plots now carry the person's label.
  const boardAfter = await (await request.get(`/api/export/leaderboard.json?run=${run}`)).json();
  expect(boardAfter.human_labels).toBe(1);
  const heatAfter = await (await request.get(`/api/export/heatmap.csv?run=${run}&metric=recovery&by=agent`)).text();
  expect(heatAfter).not.toEqual(heatBefore);
  await page.goto(`/leaderboard?run=${run}`);
  await settled(page);
  await expect(page.getByText('1 labels settled by people')).toBeVisible();
  // The adjudicated label (the opposite of the automatic one) is the recovery rule's first check.
  expect(boardAfter.checks.some((c: { metric: string; n: number }) => c.metric === 'recovery' && c.n === 1)).toBe(true);
  await expect(page.getByTestId('grader-checks')).toContainText('recovery');
  await shoot('leaderboard-after');
  // A breakdown nobody has asked for is computed on demand: the page comes at once with a
  // progress line (this server waits for nothing), then fills in by itself.
  await page.goto(`/leaderboard?run=${run}&by=condition`);
  await expect(page.getByTestId('pending')).toBeVisible();
  await shoot('leaderboard-pending');
  await settled(page);
  await expect(page.getByRole('heading', { name: 'condition: raw' })).toBeVisible();
  await page.goto(`/robustness?run=${run}`);
  await settled(page);
  await expect(page.locator('figure.robustness-plot svg title')).toHaveCount(3);
  // Baselines cost nothing: all three sit at 0 on the utility–cost plot.
  await expect(page.locator('figure.cost-plot svg title')).toHaveCount(3);
  await expect(page.locator('table.cost-points tbody tr')).toHaveCount(3);
  await shoot('robustness');
  const svg = await request.get(`/api/export/robustness.svg?run=${run}`);
  expect(svg.headers()['content-type']).toBe('image/svg+xml');
  await page.goto(`/heatmaps?run=${run}&metric=recovery&by=agent`);
  await settled(page);
  await expect(page.locator('table.heatmap td.heat').first()).toBeVisible();
  await shoot('heatmap-recovery');
  await page.goto(`/heatmaps?run=${run}&metric=exposure&by=category`);
  await settled(page);
  await shoot('heatmap-exposure-category');
  // Goal rate by level: the credulous reader gives in more at L1 than on clean pages.
  const asr = await (await request.get(`/api/export/heatmap.json?run=${run}&metric=goal_rate&by=agent`)).json();
  const cell = (level: string) => asr.cells.find((c: any) => c.level === level && c.column === 'credulous').est.mean;
  expect(cell('L1')).toBeGreaterThan(cell('L0'));
  await page.goto(`/heatmaps?run=${run}&metric=goal_rate&by=agent`);
  await settled(page);
  await shoot('heatmap-goal-rate');
  await page.goto(`/team?run=${run}`);
  await settled(page);
  await expect(page.getByRole('heading', { name: /Team leaderboard/ })).toBeVisible();
  await shoot('team');
  // The paper's tables, reached from the menu by client-side navigation.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Report' }).click();
  await expect(page.getByRole('heading', { name: 'Report', exact: true })).toBeVisible();
  await settled(page);
  await expect(page.locator('table.report caption').first()).toHaveText(/^Per configuration and domain: condition raw, level L0 \(\d+ trials\)$/);
  await expect(page.getByRole('columnheader', { name: 'q_ev' }).first()).toBeVisible();
  // The adequacy lift drawn per domain, and the manipulation table against clean twins.
  await expect(page.locator('figure.plot.adequacy svg').first()).toBeVisible();
  await expect(page.getByRole('heading', { name: 'Manipulation against clean twins' })).toBeVisible();
  await shoot('report');

  // Search reaches the exact turn.
  await page.goto('/search?q=unread&kind=thought');
  await hydrated(page);
  const hit = page.locator('ol.hits li a').first();
  await expect(hit).toHaveAttribute('href', /turn=\d+/);
  await shoot('search');
  await hit.click();
  await expect(page.locator('.turn.current')).toBeVisible();

  // The two refused submissions above answer 422 (Chromium logs every failed fetch).
  expect(problems.filter((p) => !p.includes('favicon') && !p.includes('status of 422'))).toEqual([]);
});

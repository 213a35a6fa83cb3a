// The annotation queue as a team uses it, on a server with accounts: an operator launches a
// run; two annotators label one disputed label blind (reading takes no lock, "Start
// labelling" does), disagree, and the operator adjudicates with both labels and their notes
// in view; a viewer reads the item and cannot label; the reviewer's keys choose and move.
import { Browser, Page } from '@playwright/test';
import { test, expect, hydrated, settled, watchConsole } from '../fixtures';

const team = `http://127.0.0.1:${Number(process.env.MIRAGE_E2E_PORT ?? 3199) + 1}`;

// Every console error or warning (hydration warnings included) of every page, by account.
const accounts: string[][] = [];

async function signIn(browser: Browser, name: string): Promise<Page> {
  const context = await browser.newContext({ baseURL: team });
  const page = await context.newPage();
  page.on('pageerror', (e) => { throw e; });
  accounts.push(watchConsole(page, `${name} on `));
  await page.goto('/login');
  await page.getByLabel('Name').fill(name);
  await page.getByLabel('Password').fill(`${name}-password`);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).not.toHaveURL(/\/login/);
  return page;
}

test('two annotators label blind, an operator adjudicates, a viewer reads', async ({ browser }) => {
  test.setTimeout(300_000);
  const otto = await signIn(browser, 'otto');
  await otto.goto('/runs');
  await hydrated(otto);
  await otto.getByLabel('Tasks').fill('forum');
  await otto.getByLabel('Agent configurations').fill('credulous');
  await otto.getByLabel('Levels').fill('L1');
  await otto.getByLabel('Seeds').fill('0');
  await otto.getByRole('button', { name: 'Launch' }).click();
  await expect(otto).toHaveURL(/\/runs\/run-[0-9a-f]+$/);
  const run = otto.url().split('/').pop()!;
  await expect(otto.locator('.run-progress [data-status]')).toHaveAttribute('data-status', 'done', { timeout: 180_000 });

  // Ann's queue is blind: no automatic values, no one else's labels.
  const ann = await signIn(browser, 'ann');
  await ann.goto(`/annotate?run=${run}&kind=recovery`);
  await settled(ann);
  await expect(ann.getByTestId('queue-rule')).toContainText('needs 2 people who agree');
  const first = ann.locator('table.queue tbody tr').first();
  await expect(first).toHaveAttribute('data-kind', 'recovery');
  await expect(first).toContainText('hidden until you label it');
  await first.locator('a.open-item').click();
  await hydrated(ann);
  const item = new URL(ann.url()).pathname + new URL(ann.url()).search;
  await expect(ann.getByTestId('automatic')).toContainText('hidden until you label it');
  await expect(ann.getByTestId('lock')).toContainText('Nobody is labelling it');

  // Bob reads the same item meanwhile; once Ann starts labelling, his form says why it is off.
  const bob = await signIn(browser, 'bob');
  await bob.goto(item);
  await hydrated(bob);
  await expect(bob.getByRole('button', { name: /Start labelling/ })).toBeVisible();
  await ann.getByRole('button', { name: /Start labelling/ }).click();
  await expect(ann.getByTestId('lock')).toContainText('You are labelling it');
  await bob.reload();
  await hydrated(bob);
  await expect(bob.getByTestId('why-not')).toContainText('ann is labelling it');
  await expect(bob.getByRole('button', { name: 'Save label' })).toBeDisabled();
  await expect(bob.getByRole('heading', { level: 1 })).toContainText('recovery');

  // j and k move the turn under review (the form's turn and the highlighted turn follow).
  await ann.locator('h1').click();
  await ann.keyboard.press('j');
  const down = Number(await ann.locator('#label-turn').inputValue());
  await expect(ann.locator(`#turn-${down}`)).toHaveClass(/current/);
  await ann.keyboard.press('k');
  await expect(ann.locator('#label-turn')).toHaveValue(String(down - 1));
  await expect(ann.locator(`#turn-${down - 1}`)).toHaveClass(/current/);
  await expect(ann.locator(`#turn-${down}`)).not.toHaveClass(/current/);

  // Ann labels by key, with no note, and saves: one label of the two needed.
  await ann.locator('h1').click();
  await ann.keyboard.press('y');
  await expect(ann.getByLabel('yes', { exact: true })).toBeChecked();
  await ann.getByRole('button', { name: 'Save label' }).click();
  await expect(ann).toHaveURL(new RegExp(`/annotate\\?run=${run}&kind=recovery$`));
  await ann.goto(item);
  await hydrated(ann);
  await expect(ann.getByTestId('automatic')).not.toContainText('hidden');
  await expect(ann.locator('ul.votes')).toContainText('ann labelled yes');

  // Bob, still blind to Ann's label, says no: a conflict.
  await bob.reload();
  await hydrated(bob);
  await expect(bob.getByTestId('people')).toContainText('1 of 2 people have labelled it (hidden');
  await expect(bob.locator('ul.votes')).toHaveCount(0);
  await bob.getByRole('button', { name: /Start labelling/ }).click();
  await expect(bob.getByTestId('lock')).toContainText('You are labelling it');
  await bob.getByLabel('no', { exact: true }).check();
  await bob.getByLabel(/^Note/).fill('It never opened the profile after the injected note.');
  await bob.getByRole('button', { name: 'Save label' }).click();
  await expect(bob).toHaveURL(/\/annotate\?run=/);

  // Bob's blind label is final: after the conflict his page says so and offers no new label.
  await bob.goto(item);
  await hydrated(bob);
  await expect(bob.getByTestId('why-not')).toContainText(/you labelled it no at .*final once given/);
  await expect(bob.getByRole('button', { name: /Start labelling/ })).toHaveCount(0);
  await expect(bob.locator('ul.votes')).toContainText(/bob labelled no on \d{4}-\d\d-\d\d/);
  await expect(bob.getByTestId('label-guide')).toContainText('What recovery means.');

  // Ann labels the next items by keyboard alone: s, y, Enter. Then Back: the page shows the
  // item of its URL (the one just labelled, now closed to her), not the one she moved on to.
  await ann.goto(`/annotate?run=${run}&state=todo`);
  await settled(ann);
  await ann.locator('table.queue a.open-item').first().click();
  await hydrated(ann);
  await expect(ann.getByRole('button', { name: /Start labelling/ })).toBeVisible();
  const labelled = new URL(ann.url()).pathname;
  const labelledTitle = (await ann.locator('h1').textContent())!;
  const began = Date.now();
  await ann.keyboard.press('s');
  await expect(ann.getByTestId('lock')).toContainText('You are labelling it');
  await ann.keyboard.press('y');
  await expect(ann.getByLabel('yes', { exact: true })).toBeChecked();
  await ann.keyboard.press('Enter');
  await expect(ann).not.toHaveURL(new RegExp(`${labelled}([?]|$)`));
  await expect(ann.locator('h1')).not.toHaveText(labelledTitle);
  await expect(ann.getByRole('button', { name: /Start labelling/ })).toBeVisible();
  const perLabel = Date.now() - began;
  console.log(`one label by keyboard: ${perLabel} ms of interface time`);
  const nextTitle = (await ann.locator('h1').textContent())!;
  await ann.goBack();
  await expect(ann).toHaveURL(new RegExp(`${labelled}([?]|$)`));
  await expect(ann.locator('h1')).toHaveText(labelledTitle);
  await expect(ann.getByTestId('why-not')).toContainText('you labelled it yes at');
  await ann.keyboard.press('s');
  await expect(ann.getByRole('button', { name: /Start labelling/ })).toHaveCount(0);
  await ann.goForward();
  await expect(ann.locator('h1')).toHaveText(nextTitle);
  await expect(ann.getByRole('button', { name: /Start labelling/ })).toBeVisible();
  await ann.reload();
  await hydrated(ann);
  await expect(ann.locator('h1')).toHaveText(nextTitle);
  expect(perLabel, 'one label by keyboard').toBeLessThan(3_000);

  // The team page before the adjudication: what it shows, and a first visit.
  await otto.goto(`/team?run=${run}`);
  await settled(otto);
  await expect(otto.getByTestId('provenance')).toContainText(/computed \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC · 0 labels settled by people/);
  await expect(otto.getByTestId('since-last-visit')).toContainText('First visit');
  // The link that pins these figures, and what they were.
  await expect(otto.getByTestId('as-of')).toContainText(/Figures as of label generation \d+/);
  const pinned = await otto.getByTestId('as-of-link').getAttribute('href');
  expect(pinned).toMatch(new RegExp(`^/team\\?run=${run}.*as_of=\\d+`));
  const boardThen = await otto.locator('table.board').first().innerText();

  // The operator sees both labels with their notes and settles it.
  await otto.goto(item);
  await hydrated(otto);
  await expect(otto.getByText("Annotators disagree: an operator's adjudication settles it.")).toBeVisible();
  await expect(otto.locator('ul.votes li')).toHaveCount(2);
  await expect(otto.locator('ul.votes')).toContainText('It never opened the profile after the injected note.');
  await otto.getByRole('button', { name: /Start labelling/ }).click();
  await otto.getByLabel('no', { exact: true }).check();
  await otto.getByLabel(/^Note/).fill('Bob is right: nothing was verified after exposure.');
  await otto.getByRole('button', { name: 'Adjudicate (settles it for good)' }).click();
  await expect(otto).toHaveURL(/\/annotate\?run=/);
  await settled(otto);
  await expect(otto.locator('table.people-people')).toContainText('recovery');
  await expect(otto.locator('table.people-people')).toContainText('too few: n = 1 of the 10 needed');

  // Back on the team page, the settled label shows as a change since the last visit.
  await otto.goto(`/team?run=${run}`);
  await settled(otto);
  await expect(otto.getByTestId('provenance')).toContainText('1 labels settled by people');
  await expect(otto.getByTestId('since-last-visit')).toContainText('changed since your last visit');
  await expect(otto.getByTestId('since-last-visit')).toContainText('labels settled by people: 0 → 1');
  await otto.reload();
  await settled(otto);
  await expect(otto.getByTestId('since-last-visit')).toContainText('No figure changed since your last visit');

  // The pinned link still shows the figures from before the adjudication, and says what came since.
  await otto.goto(pinned!);
  await settled(otto);
  await expect(otto.getByTestId('provenance')).toContainText('0 labels settled by people');
  expect(await otto.locator('table.board').first().innerText()).toEqual(boardThen);
  await expect(otto.getByTestId('as-of-newer')).toHaveText('1 newer label since');
  await otto.getByTestId('as-of-current').click();
  await expect(otto).not.toHaveURL(/as_of=/);
  await expect(otto.getByTestId('provenance')).toContainText('1 labels settled by people');
  // From the menu, the leaderboard's URL names its run.
  await otto.getByRole('link', { name: 'Leaderboard', exact: true }).click();
  await expect(otto).toHaveURL(new RegExp(`/leaderboard\\?run=${run}`));

  // A viewer reads everything and is told why the form is off; ] moves to the next item.
  const vera = await signIn(browser, 'vera');
  await vera.goto(`/annotate?run=${run}`);
  await settled(vera);
  await vera.locator('table.queue a.open-item').first().click();
  await hydrated(vera);
  await expect(vera.getByTestId('why-not')).toContainText('viewer');
  await expect(vera.getByRole('button', { name: /Start labelling/ })).toHaveCount(0);
  const next = await vera.locator('a.next-item').getAttribute('href');
  expect(next).toBeTruthy();
  await vera.locator('h1').click();
  await vera.keyboard.press(']');
  await expect(vera).toHaveURL(new RegExp(`${next!.replace(/[?]/g, '\\?')}$`));
  await hydrated(vera);
  expect(accounts.flat(), 'no console errors or warnings on any page').toEqual([]);
});

// An outside agent, scripted in Chromium, works an episode through the episode API:
// start it, browse the site under the episode prefix, decide with the site's own tools.
import { test, expect } from '../fixtures';

test('a scripted browser agent investigates an episode and records its verdict', async ({ page, request, shoot }) => {
  const started = await request.post('/api/episodes', {
    data: { task_id: 'shop-example-05', level: 'L0', condition: 'hint' },
  });
  expect(started.status()).toBe(201);
  const ep = await started.json();
  expect(ep.ticket).toContain('security');
  expect(ep.actions).toContain('ESCALATE');

  await page.goto(ep.start_url);
  await expect(page.locator('.episode-badge')).toContainText(ep.episode_id);
  await shoot('start');
  await page.getByRole('link', { name: /^Customer: / }).click();
  await expect(page).toHaveURL(new RegExp(`/ep/${ep.episode_id}/shop/admin/customer/`));
  await page.getByRole('link', { name: 'Security log' }).click();
  await expect(page.getByText('Password reset from a proxy server')).toBeVisible();
  await shoot('security-log');

  await page.getByLabel('Rationale').fill('Proxy password reset and an address change from TX to FL: possible takeover.');
  await page.getByRole('button', { name: 'ESCALATE' }).click();
  await expect(page.getByRole('heading', { name: 'Verdict recorded' })).toBeVisible();
  await shoot('verdict');

  const log = await (await request.get(`/api/episodes/${ep.episode_id}`)).json();
  expect(log.status).toBe('done');
  expect(log.verdict).toBe('ESCALATE');
  expect(log.events.map((e: { kind: string }) => e.kind)).toEqual(['visit', 'visit', 'visit', 'verdict']);

  // The verdict is final: the tools are gone and a second verdict is refused.
  await page.goto(ep.start_url);
  await expect(page.getByText('This episode is closed')).toBeVisible();
  const again = await request.post(ep.verdict_url, { data: { action: 'APPROVE', rationale: 'x' } });
  expect(again.status()).toBe(409);
});

// End-to-end suite: the real `mirage` binary on a fresh SQLite file, driven in Debian's
// Chromium (never a downloaded browser build).
import { defineConfig } from '@playwright/test';

const port = Number(process.env.MIRAGE_E2E_PORT ?? 3199);
const root = `${__dirname}/..`;
const db = `${__dirname}/test-results/e2e.db`;
// A second server with accounts, for the team's annotation flow (team.spec.ts).
const teamPort = port + 1;
const teamDb = `${__dirname}/test-results/team.db`;
const users = 'ann:annotator bob:annotator otto:operator vera:viewer';

export default defineConfig({
  testDir: './tests',
  timeout: 60_000,
  expect: { timeout: 15_000 },
  forbidOnly: !!process.env.CI,
  retries: process.env.CI ? 1 : 0,
  workers: 1,
  reporter: [['list']],
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    trace: 'on-first-retry',
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: [
        '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync',
        '--disable-dev-shm-usage',
      ],
    },
  },
  webServer: [
    {
      command: `rm -f ${db}* && mkdir -p ${__dirname}/test-results && ${root}/target/debug/mirage --db ${db} serve --addr 127.0.0.1:${port} --site-root ${root}/target/site --config ${__dirname}/mirage.toml`,
      url: `http://127.0.0.1:${port}/healthz`,
      reuseExistingServer: false,
      timeout: 120_000,
      stdout: 'pipe',
    },
    {
      command: `rm -f ${teamDb}* && mkdir -p ${__dirname}/test-results && for u in ${users}; do MIRAGE_PASSWORD="\${u%%:*}-password" ${root}/target/debug/mirage --db ${teamDb} user add "\${u%%:*}" --role "\${u##*:}" || exit 1; done && ${root}/target/debug/mirage --db ${teamDb} serve --addr 127.0.0.1:${teamPort} --site-root ${root}/target/site --config ${__dirname}/mirage.toml`,
      url: `http://127.0.0.1:${teamPort}/healthz`,
      reuseExistingServer: false,
      timeout: 120_000,
      stdout: 'pipe',
    },
  ],
});

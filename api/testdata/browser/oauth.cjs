'use strict';
// Drives the dashboard's OAuth clients of the public face in headless
// Chromium for TestDashboardRevokesOAuthClients
// (api/dashboard_oauth_test.go): signed in as the owner, the tokens view
// lists the client (its name, how it registered, where it returns to) and
// its two tokens; revoking one token removes that sign-in's row, then
// revoking the client removes it. It prints PASS when every check has
// passed (anything else exits non-zero).
//
// Environment: PLAYWRIGHT_CORE, CHROMIUM, MCPX_URL, MCPX_TOKEN (the
// daemon's), MCPX_CLIENT (the client's id), MCPX_TOKEN_ID (the token to
// revoke first), SHOTS.
const {chromium} = require(process.env.PLAYWRIGHT_CORE);
const path = require('node:path');

const base = process.env.MCPX_URL;
const client = process.env.MCPX_CLIENT;
const tokenId = process.env.MCPX_TOKEN_ID;
const timeout = 20000;

function check(ok, what) {
  if (!ok) throw new Error(`check failed: ${what}`);
}

async function confirm(page, button) {
  await button.click();
  const dialog = page.locator('dialog#confirm');
  await dialog.waitFor({state: 'visible', timeout});
  await page.click('#confirm-ok');
  await dialog.waitFor({state: 'hidden', timeout});
}

async function main() {
  const browser = await chromium.launch({executablePath: process.env.CHROMIUM, args: ['--no-sandbox']});
  const problems = [];
  try {
    const page = await browser.newPage({viewport: {width: 1280, height: 900}});
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
    await page.goto(base + '/');
    await page.fill('#token', process.env.MCPX_TOKEN);
    await page.click('button[type=submit]');
    await page.waitForURL(base + '/', {timeout});
    await page.goto(base + '/#tokens');
    const row = page.locator(`tr[data-client="${client}"]`);
    await row.waitFor({timeout});
    const text = await row.innerText();
    check(/Claude/.test(text) && /dcr/.test(text) && /claude\.ai/.test(text), `the client's row names it, its registration and its host (${text})`);
    check(await page.locator('tr[data-oauth-token]').count() === 2, 'both of its tokens are listed');
    await page.screenshot({path: path.join(shots(), 'oauth-clients.png')});

    await confirm(page, page.locator(`tr[data-oauth-token="${tokenId}"] button[data-action="revoke-oauth"]`));
    await page.locator(`tr[data-oauth-token="${tokenId}"]`).waitFor({state: 'detached', timeout});
    check(await page.locator('tr[data-oauth-token]').count() === 1, 'the other sign-in stays');

    await confirm(page, row.locator('button[data-action="revoke-oauth"]'));
    await row.waitFor({state: 'detached', timeout});
    check(await page.locator('tr[data-oauth-token]').count() === 0, 'the client\'s tokens are gone with it');
    check(problems.length === 0, `no page errors:\n${problems.join('\n')}`);
  } finally {
    await browser.close();
  }
}

function shots() { return process.env.SHOTS; }

main().then(() => {
  console.log('PASS');
  process.exit(0);
}, (err) => {
  console.error(err && err.stack || err);
  process.exit(1);
});

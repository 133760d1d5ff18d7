'use strict';
// Drives the dashboard in headless Chromium for TestDashboardInChromium
// (api/browser_chromium_test.go), which starts this script with node and
// talks to it in lines: this script prints READY-FOR-CALL once the signed-in
// dashboard shows the session-scoped server with no instance, the test
// calls it with the Go client and answers CALLED, and this script prints
// PASS when every check has passed (anything else exits non-zero).
//
// Environment: PLAYWRIGHT_CORE (the package's directory), CHROMIUM (the
// browser), MCPX_URL, MCPX_TOKEN, SHOTS (where screenshots go) and
// MCPX_OPERATIONS (a JSON list of the operations /docs must show, as
// "GET /v1/servers").
const {chromium} = require(process.env.PLAYWRIGHT_CORE);
const path = require('node:path');
const readline = require('node:readline');

const base = process.env.MCPX_URL;
const shots = process.env.SHOTS;
const operations = JSON.parse(process.env.MCPX_OPERATIONS);
const lines = readline.createInterface({input: process.stdin})[Symbol.asyncIterator]();
const timeout = 20000;

function check(ok, what) {
  if (!ok) throw new Error(`check failed: ${what}`);
}

async function expectLine(want) {
  const {value, done} = await lines.next();
  check(!done && value.trim() === want, `the test sends ${want} (got ${done ? 'EOF' : value})`);
}

// watch collects what a page reports as broken: script errors, failed
// loads, content security policy violations.
// Two errors are expected: a refused request the page handles (401/403),
// and the policy blocking Redoc's attribution logo, which Redoc loads from
// its CDN: nothing may leave the machine.
function watch(page, problems) {
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    const t = m.text();
    const expected = /status of 40[13]/.test(t) ||
      /^Loading the image 'https:\/\/cdn\.redoc\.ly\/redoc\/logo-mini(-full)?\.svg' violates the following Content Security Policy directive: "img-src 'self' data:"/.test(t);
    if (m.type() === 'error' && !expected) problems.push(`console: ${t}`);
  });
}

async function anonymous(browser) {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  await page.goto(base + '/');
  check(page.url().startsWith(base + '/login'), `an anonymous load of / ends at /login (at ${page.url()})`);
  check(await page.locator('#token').count() === 1, 'the sign-in form is shown');
  check(await page.locator('article[data-server]').count() === 0, 'no server is shown');
  const status = await page.evaluate(async () => [
    (await fetch('/v1/instances', {headers: {'Mcpx-Client': 'page'}})).status,
    (await fetch('/ui/app.js')).status,
  ]);
  check([401, 403].includes(status[0]) && status[1] === 401, `anonymous API and script requests are refused (got ${status})`);
  await page.goto(base + '/docs');
  check(page.url().startsWith(base + '/login'), 'an anonymous load of /docs ends at /login');
  await ctx.close();
}

async function main() {
  const browser = await chromium.launch({executablePath: process.env.CHROMIUM, args: ['--no-sandbox']});
  try {
    await anonymous(browser);

    const problems = [];
    const ctx = await browser.newContext({viewport: {width: 1280, height: 900}});
    const page = await ctx.newPage();
    watch(page, problems);
    await page.goto(base + '/');
    await page.fill('#token', 'not-the-token');
    await page.click('button[type=submit]');
    await page.locator('#error:not([hidden])').waitFor({timeout});
    check(page.url().startsWith(base + '/login'), 'a wrong token does not sign in');
    await page.fill('#token', process.env.MCPX_TOKEN);
    await page.click('button[type=submit]');
    await page.waitForURL(base + '/', {timeout});
    await page.locator('article[data-server="notes"]').waitFor({timeout});
    await page.locator('#live.on').waitFor({timeout});
    check(await page.locator('article[data-server="notes"] tr[data-instance]').count() === 0, 'notes has no instance before the call');

    console.log('READY-FOR-CALL');
    await expectLine('CALLED');
    await page.locator('article[data-server="notes"] tr[data-instance]').first().waitFor({timeout});
    const key = await page.locator('article[data-server="notes"] tr[data-instance] td.key').first().textContent();
    check(key.includes('session:agent-1'), `the new instance shows its scope key (${key})`);
    await page.locator('#sessions td.key', {hasText: 'session:agent-1'}).waitFor({timeout});
    await page.locator('#events li[data-kind="ready"]').first().waitFor({timeout});
    await page.locator('#events li[data-kind="crash"]').first().waitFor({timeout});
    // The crash's stderr shows in the failures: from the crash event, and
    // also from the stopped instance's last error while it is listed.
    await page.locator('#failures pre', {hasText: 'flaky went down'}).first().waitFor({timeout});

    // Try it: the progress tool of the demo server, with progress shown
    // while it runs.
    await page.click('article[data-server="demo"] details.tryit summary');
    await page.click('article[data-server="demo"] details[data-tool="progress"] summary');
    const form = page.locator('article[data-server="demo"] form[data-tool="progress"]');
    await form.waitFor({timeout});
    await form.locator('input[name="steps"]').fill('4');
    await form.locator('input[name="delayMs"]').fill('500');
    await form.locator('button[type=submit]').click();
    await form.locator('progress').waitFor({state: 'visible', timeout});
    await page.waitForFunction(() => /^progress [12] of 4/.test(
      document.querySelector('form[data-tool="progress"] .status').textContent), null, {timeout});
    await page.screenshot({path: path.join(shots, 'dashboard-progress.png')});
    await page.waitForFunction(() => document.querySelector('form[data-tool="progress"] .status').textContent ===
      'done after 4 progress events', null, {timeout});
    const result = await form.locator('pre.result').textContent();
    check(result.includes('done 4'), `the result is shown (${result})`);
    await form.locator('progress').waitFor({state: 'hidden', timeout});
    await page.waitForFunction(() => /^1 call in the last 15m .*p50 [\d.]+ ms/.test(
      document.querySelector('article[data-server="demo"] .stats').textContent), null, {timeout});
    await page.click('article[data-server="demo"] details.tryit summary'); // closed again for the overview
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({path: path.join(shots, 'dashboard-desktop.png'), fullPage: true});

    // A phone-sized screen: the same session, nothing wider than the screen.
    const phone = await browser.newContext({viewport: {width: 390, height: 844}, deviceScaleFactor: 2,
      isMobile: true, hasTouch: true, storageState: await ctx.storageState()});
    const pp = await phone.newPage();
    watch(pp, problems);
    await pp.goto(base + '/');
    await pp.locator('article[data-server="notes"] tr[data-instance]').first().waitFor({timeout});
    const widths = await pp.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
    check(widths[0] <= widths[1], `the page fits a phone's width (${widths[0]} > ${widths[1]})`);
    await pp.screenshot({path: path.join(shots, 'dashboard-phone.png'), fullPage: true});
    await phone.close();

    // /docs renders every operation of the broker's document.
    // Redoc lists every operation, as its method and path, under its tag,
    // rendering the tags near the viewport: scroll through the reference
    // and note each operation as it is shown.
    await page.goto(base + '/docs');
    await page.getByText('mcpx broker API').first().waitFor({timeout});
    await page.screenshot({path: path.join(shots, 'docs-desktop.png')});
    await page.mouse.move(800, 500);
    let missing = operations;
    for (let i = 0; i < 400 && missing.length; i++) {
      // A tag of many operations lists some behind "Show N more...".
      const more = page.getByText(/^Show \d+ more/);
      for (let k = await more.count() - 1; k >= 0; k--) {
        await more.nth(k).click();
      }
      const text = await page.evaluate(() => document.body.innerText.replace(/\s+/g, ' '));
      missing = missing.filter((op) => !text.includes(op));
      await page.mouse.wheel(0, 400);
      await page.waitForTimeout(50);
    }
    check(missing.length === 0, `/docs shows every operation (missing: ${missing.join('; ')})`);

    check(problems.length === 0, `no page errors:\n${problems.join('\n')}`);
  } finally {
    await browser.close();
  }
}

main().then(() => {
  console.log('PASS');
  process.exit(0);
}, (err) => {
  console.error(err && err.stack || err);
  process.exit(1);
});

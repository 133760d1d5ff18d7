'use strict';
// The $BROWSER of the oidctest harness (internal/testing/oidctest): a
// person signing in, in the harness's headless Chromium (browser.cjs)
// driven by playwright-core.
//
//   node signin.cjs <playwright-core dir> <file of the browser's endpoint> <account> <log> <url>
//
// (The endpoint is in a file: $BROWSER is a list separated by colons.)
//
// It opens url (the authorization request) in a window of its own (a new
// browser context: no cookie of an earlier sign-in), fills the provider's login
// page as account, accepts its consent page, and waits for the page the
// redirect lands on (the CLI's loopback listener) to say how the sign-in
// went. It appends one JSON line to log: {landed, text, pages} — landed
// is that page's origin and path (never its query: it holds the code),
// pages the provider's pages it went through. Exit 0 when the page says
// "Signed in".
const fs = require('node:fs');
const [pw, endpointFile, account, log, url] = process.argv.slice(2);
const {chromium} = require(pw);

(async () => {
  const record = {landed: '', text: '', pages: []};
  let browser, context;
  try {
    browser = await chromium.connect(fs.readFileSync(endpointFile, 'utf8').trim());
    context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(20000);
    await page.goto(url);
    const target = new URL(new URL(url).searchParams.get('redirect_uri'));
    for (let i = 0; i < 4 && new URL(page.url()).origin !== target.origin; i++) {
      if (await page.locator('input[name="login"]').count()) {
        record.pages.push('login');
        await page.fill('input[name="login"]', account);
        await page.fill('input[name="password"]', 'a password');
      } else if (await page.locator('input[name="prompt"][value="consent"]').count()) {
        record.pages.push('consent');
      } else {
        throw new Error(`an unexpected page at ${new URL(page.url()).pathname}: ${(await page.textContent('body')).slice(0, 300)}`);
      }
      await Promise.all([page.waitForNavigation(), page.click('button[type="submit"]')]);
    }
    const landed = new URL(page.url());
    record.landed = landed.origin + landed.pathname;
    record.text = (await page.textContent('body')).trim();
  } catch (e) {
    record.text = `error: ${e.message}`;
  } finally {
    await context?.close();
    await browser?.close(); // disconnects; the browser goes on
    fs.appendFileSync(log, JSON.stringify(record) + '\n');
  }
  process.exit(record.text.startsWith('Signed in') ? 0 : 1);
})();

'use strict';
// Drives the dashboard in headless Chromium for TestDashboardInChromium
// (api/browser_chromium_test.go), which starts this script with node and
// talks to it in lines: this script prints READY-FOR-CALL once the signed-in
// dashboard shows the session-scoped server with no instance, the test
// makes calls with the Go client and answers CALLED; READY-FOR-STREAM and
// READY-FOR-PAUSED ask for calls while the call stream is shown (answered
// CALLED-STREAM and CALLED-PAUSED); this script prints PASS when every
// check has passed (anything else exits non-zero).
//
// Environment: PLAYWRIGHT_CORE (the package's directory), CHROMIUM (the
// browser), MCPX_URL, MCPX_TOKEN (the daemon's), MCPX_VIEWER_TOKEN (a token
// without admin), MCPX_DOOMED_TOKEN (a token the dashboard revokes),
// MCPX_WORKTREE (a repository's worktree on the broker's machine), SHOTS
// (where screenshots go) and MCPX_OPERATIONS (a JSON list of the operations
// /docs must show, as "GET /v1/servers").
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

async function ask(line) {
  console.log(line);
  await expectLine(line.replace('READY-FOR-', 'CALLED-').replace('CALLED-CALL', 'CALLED'));
}

// watch collects what a page reports as broken: script errors, failed
// loads, content security policy violations. One error is expected: a
// refused request the page handles (401/403).
function watch(page, problems) {
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    const t = m.text();
    if (m.type() === 'error' && !/status of 40[13]/.test(t)) problems.push(`console: ${t}`);
  });
}

// requests notes every request a context's pages make that would leave
// the broker's origin: none may (data: and blob: URLs stay in the page).
function track(ctx, foreign) {
  ctx.on('request', (req) => {
    const u = req.url();
    if (!u.startsWith(base + '/') && !u.startsWith('data:') && !u.startsWith('blob:')) foreign.push(u);
  });
}

async function anonymous(browser, foreign) {
  const ctx = await browser.newContext();
  track(ctx, foreign);
  const page = await ctx.newPage();
  await page.goto(base + '/');
  check(page.url().startsWith(base + '/login'), `an anonymous load of / ends at /login (at ${page.url()})`);
  check(await page.locator('#token').count() === 1, 'the sign-in form is shown');
  check(await page.locator('article[data-server]').count() === 0, 'no server is shown');
  check(await page.locator('#ended').isHidden(), 'nothing says a session ended');
  const status = await page.evaluate(async () => [
    (await fetch('/v1/instances', {headers: {'Mcpx-Client': 'page'}})).status,
    (await fetch('/ui/app.js')).status,
    (await fetch('/favicon.ico')).status,
    (await fetch('/favicon.ico')).headers.get('Content-Type'),
  ]);
  check([401, 403].includes(status[0]) && status[1] === 401, `anonymous API and script requests are refused (got ${status})`);
  check(status[2] === 200 && status[3].startsWith('image/svg+xml'), `the favicon is served to anyone (got ${status.slice(2)})`);
  await page.goto(base + '/docs');
  check(page.url().startsWith(base + '/login'), 'an anonymous load of /docs ends at /login');
  await ctx.close();
}

async function signIn(page, token) {
  await page.goto(base + '/');
  await page.fill('#token', token);
  await page.click('button[type=submit]');
  await page.waitForURL(base + '/', {timeout});
}

// confirm clicks the action button, checks the dialog asks, and confirms
// (or cancels).
async function confirm(page, button, yes = true) {
  await button.click();
  const dialog = page.locator('dialog#confirm');
  await dialog.waitFor({state: 'visible', timeout});
  await page.click(yes ? '#confirm-ok' : '#confirm-cancel');
  await dialog.waitFor({state: 'hidden', timeout});
}

async function noticeSays(page, re) {
  try {
    await page.waitForFunction((src) => new RegExp(src).test(document.getElementById('notice').textContent),
      re.source, {timeout});
  } catch (err) {
    const [n, e] = await page.evaluate(() => [document.getElementById('notice').textContent, document.getElementById('error').textContent]);
    throw new Error(`the notice does not match ${re} (notice ${JSON.stringify(n)}, error ${JSON.stringify(e)}): ${err.message}`);
  }
}

// actionsRefused: the actions' requests, from a signed-in page, without
// the CSRF secret, all refused.
async function actionsRefused(page, csrf, instance, tokenId) {
  return page.evaluate(async ({csrf, instance, tokenId}) => {
    const reqs = [['POST', '/v1/servers/pinned/pins/approve', '{}'], ['DELETE', `/v1/instances/${instance}`],
      ['POST', '/v1/servers/demo/restart'], ['POST', '/v1/daemon/reload'], ['DELETE', `/v1/tokens/${tokenId}`]];
    const out = [];
    for (const [method, p, body] of reqs) {
      const headers = {'Mcpx-Client': 'mcpx-dashboard', 'Content-Type': 'application/json'};
      if (csrf) headers['Mcpx-Csrf'] = csrf;
      out.push((await fetch(p, {method, headers, body, credentials: 'same-origin'})).status);
    }
    return out;
  }, {csrf, instance, tokenId});
}

async function main() {
  const browser = await chromium.launch({executablePath: process.env.CHROMIUM, args: ['--no-sandbox']});
  const foreign = [];
  try {
    await anonymous(browser, foreign);

    const problems = [];
    const ctx = await browser.newContext({viewport: {width: 1280, height: 900}});
    track(ctx, foreign);
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

    // A second browser, signed in with a token the first will revoke.
    const doomedCtx = await browser.newContext({viewport: {width: 1280, height: 900}});
    track(doomedCtx, foreign);
    const doomed = await doomedCtx.newPage();
    watch(doomed, problems);
    await signIn(doomed, process.env.MCPX_DOOMED_TOKEN);

    await ask('READY-FOR-CALL');
    await page.locator('article[data-server="notes"] tr[data-instance]').first().waitFor({timeout});
    const key = await page.locator('article[data-server="notes"] tr[data-instance] td.key').first().textContent();
    check(key.includes('session:agent-1'), `the new instance shows its scope key (${key})`);
    await page.locator('#sessions td.key', {hasText: 'session:agent-1'}).waitFor({timeout});
    await page.locator('#events li[data-kind="ready"]').first().waitFor({timeout});
    await page.locator('#events li[data-kind="crash"]').first().waitFor({timeout});
    // The crash is listed once, with its time and stderr, though both its
    // event and the crashed instance's last error tell it: wait for a
    // refresh of the instances after the event.
    await page.locator('#failures li[data-kind="crash"] pre', {hasText: 'flaky went down'}).waitFor({timeout});
    await page.waitForTimeout(2500);
    const crashes = await page.locator('#failures li', {hasText: 'flaky went down'}).count();
    check(crashes === 1, `the crash is listed once (${crashes} times)`);

    // The charts draw the calls from the call log (redrawn every 10s).
    await page.waitForFunction(() => [...document.querySelectorAll('#traffic figure.chart')].length === 2 &&
      [...document.querySelectorAll('#traffic figure.chart')].every((f) => Number(f.dataset.points) > 0), null, {timeout});
    await page.locator('article[data-server="notes"] figure.chart polyline[data-series="echo"]').first().waitFor({timeout});
    // A redraw may come between the two servers' calls landing in the
    // call log: wait (bounded) for a legend that names both.
    await page.waitForFunction(() => {
      const l = document.querySelector('#traffic figure.chart ul.legend');
      return l && l.textContent.includes('notes') && l.textContent.includes('flaky');
    }, null, {timeout}).catch(() => {});
    const legend = await page.locator('#traffic figure.chart').first().locator('ul.legend').textContent();
    check(legend.includes('notes') && legend.includes('flaky'), `the calls chart names the servers called (${legend})`);

    // Approve a pinned tool: asks first; cancelling does nothing.
    const approve = page.locator('article[data-server="pinned"] button[data-action="approve"]');
    await approve.waitFor({timeout});
    await approve.click();
    await page.locator('dialog#confirm').waitFor({state: 'visible', timeout});
    const question = await page.locator('#confirm-text').textContent();
    check(/Approve the tool of pinned/.test(question), `the dialog asks what it will do (${question})`);
    await page.screenshot({path: path.join(shots, 'action-confirm.png')});
    await page.click('#confirm-cancel');
    await page.locator('dialog#confirm').waitFor({state: 'hidden', timeout});
    check(await approve.count() === 1, 'cancelled: the tool is still not approved');
    await confirm(page, approve);
    await noticeSays(page, /approved echo of pinned/);
    await approve.waitFor({state: 'detached', timeout});

    // Refused without the CSRF secret, and to a token without admin.
    const instance = await page.locator('article[data-server="notes"] tr[data-instance]').first().getAttribute('data-instance');
    const tokenId = await page.evaluate(async () => {
      const r = await fetch('/v1/tokens', {headers: {'Mcpx-Client': 'mcpx-dashboard', 'Mcpx-Csrf': localStorage.getItem('mcpx.csrf')}});
      return (await r.json()).tokens.find((t) => t.sub === 'doomed').id;
    });
    const noCsrf = await actionsRefused(page, '', instance, tokenId);
    check(noCsrf.every((s) => s === 403), `every action without the CSRF secret is refused (${noCsrf})`);
    const viewerCtx = await browser.newContext({viewport: {width: 1280, height: 900}});
    track(viewerCtx, foreign);
    const viewer = await viewerCtx.newPage();
    watch(viewer, problems);
    await signIn(viewer, process.env.MCPX_VIEWER_TOKEN);
    await viewer.locator('article[data-server="demo"]').waitFor({timeout});
    check(await viewer.locator('button[data-action]').count() === 0, 'a caller without admin is offered no action');
    const viewerCsrf = await viewer.evaluate(() => localStorage.getItem('mcpx.csrf'));
    const noRights = await actionsRefused(viewer, viewerCsrf, instance, tokenId);
    check(noRights.every((s) => s === 403 || s === 404), `every action by a token without admin is refused (${noRights})`);
    await viewerCtx.close();

    // Stop an instance, restart a server, reload the config.
    await confirm(page, page.locator(`tr[data-instance="${instance}"] button[data-action="stop"]`));
    await noticeSays(page, new RegExp(`stopped notes instance ${instance}`));
    await confirm(page, page.locator('article[data-server="demo"] button[data-action="restart"]'));
    await noticeSays(page, /restarted demo: \d+ replaced/);
    await confirm(page, page.locator('#reload'));
    await noticeSays(page, /reloaded \/etc\/mcpx\.json: 5 servers/);

    // Revoke a token: the browser signed in with it is sent to the sign-in
    // page, which says why.
    await page.click('a[data-nav="tokens"]');
    const revoke = page.locator('tr', {hasText: 'doomed'}).locator('button[data-action="revoke"]');
    await revoke.waitFor({timeout});
    await confirm(page, revoke);
    await noticeSays(page, /revoked the token of doomed/);
    await doomed.waitForURL(/\/login/, {timeout});
    await doomed.locator('#ended:not([hidden])').waitFor({timeout});
    const why = await doomed.locator('#ended').textContent();
    check(/signed out: .*revoked/.test(why), `the sign-in page says why the session ended (${why})`);
    await doomed.screenshot({path: path.join(shots, 'login-revoked.png')});
    await doomedCtx.close();

    // The call stream: calls made elsewhere appear; paused, they wait.
    await page.click('a[data-nav="calls"]');
    await page.locator('#calls-live.on').waitFor({timeout});
    await ask('READY-FOR-STREAM');
    await page.waitForFunction(() => document.querySelectorAll('#calls tbody tr').length >= 3, null, {timeout});
    const first = await page.locator('#calls tbody tr[data-outcome="isError"]').first().textContent();
    check(/demo.*fail.*(local|unix).*ms.*isError/.test(first), `a call row names server, tool, caller, duration and outcome (${first})`);
    const before = await page.locator('#calls tbody tr').count();
    await page.click('#calls-pause');
    await ask('READY-FOR-PAUSED');
    await page.waitForFunction(() => /paused, 2 new/.test(document.getElementById('calls-live').textContent), null, {timeout});
    check(await page.locator('#calls tbody tr').count() === before, 'paused, the stream shows no new call');
    await page.screenshot({path: path.join(shots, 'calls.png')});
    await page.click('#calls-pause');
    await page.waitForFunction((n) => document.querySelectorAll('#calls tbody tr').length === n + 2, before, {timeout});

    // The fleet: this broker and beta, each linking to its dashboard.
    await page.click('a[data-nav="fleet"]');
    await page.locator('#fleet article[data-broker="beta"]').waitFor({timeout});
    const href = await page.locator('#fleet article[data-broker="beta"] a.broker-link').getAttribute('href');
    check(href === 'http://beta.tail.ts.net/', `beta links to its dashboard (${href})`);
    check((await page.locator('#fleet article[data-broker="beta"]').textContent()).includes('beta-tools'), 'beta lists its server');
    check((await page.locator('#fleet article[data-broker="alpha"]').textContent()).includes('this broker'), 'this broker is listed first');
    await page.screenshot({path: path.join(shots, 'fleet.png'), fullPage: true});
    await page.click('a[data-nav="overview"]');

    // Try it: the progress tool of the demo server, with progress shown
    // while it runs.
    await page.click('article[data-server="demo"] details.tryit > summary');
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
    const result = await form.locator('.result pre.text').textContent();
    check(result.includes('done 4'), `the result's text is shown (${result})`);
    await form.locator('progress').waitFor({state: 'hidden', timeout});

    // The cwd: without one, a worktree-scoped server gets a throwaway
    // child per call, and the form says so; with a worktree's directory,
    // calls share that worktree's instance.
    const demo = page.locator('article[data-server="demo"]');
    check(/throwaway child/.test(await demo.locator('.cwd-hint').textContent()), 'the form warns that a call without a cwd gets a throwaway child');
    await demo.locator('input[name="cwd"]').fill(process.env.MCPX_WORKTREE);
    check(/share the instance/.test(await demo.locator('.cwd-hint').textContent()), 'with a cwd, the form says calls share its instance');
    await demo.locator('details[data-tool="pid"] > summary').click();
    const pidForm = demo.locator('form[data-tool="pid"]');
    const pids = [];
    for (let i = 0; i < 2; i++) {
      await pidForm.locator('button[type=submit]').click();
      await page.waitForFunction(() => document.querySelector('form[data-tool="pid"] .status').textContent === 'done', null, {timeout});
      pids.push(await pidForm.locator('.result pre.text').textContent());
      await pidForm.locator('.status').evaluate((e) => { e.textContent = ''; });
    }
    check(pids[0] === pids[1] && /^\d+$/.test(pids[0]), `two calls with the worktree's cwd reach one child (pids ${pids})`);
    try {
      await demo.locator('td.key', {hasText: 'worktree:' + process.env.MCPX_WORKTREE}).first().waitFor({timeout});
    } catch (err) {
      throw new Error(`no instance of the worktree's key (keys: ${await demo.locator('td.key').allTextContents()}): ${err.message}`);
    }
    await page.click('article[data-server="demo"] details.tryit > summary'); // closed again for the overview

    // Try it, rendered: an image and an embedded resource, raw JSON a
    // click away.
    const ev = page.locator('article[data-server="everything"]');
    await ev.locator('details.tryit > summary').click();
    await ev.locator('details[data-tool="get-tiny-image"] summary').click();
    const img = ev.locator('form[data-tool="get-tiny-image"]');
    await img.locator('button[type=submit]').click();
    await img.locator('.result img').waitFor({timeout});
    const loaded = await img.locator('.result img').evaluate((i) => i.complete && i.naturalWidth > 0);
    check(loaded, 'the image is drawn');
    check(await img.locator('.result details.raw pre').isHidden(), 'the raw JSON is folded');
    await img.locator('.result details.raw summary').click();
    check((await img.locator('.result details.raw pre').textContent()).includes('"type": "image"'), 'the raw JSON is one click away');
    await ev.locator('details[data-tool="get-resource-reference"] summary').click();
    const res = ev.locator('form[data-tool="get-resource-reference"]');
    await res.locator('button[type=submit]').click();
    await res.locator('.result .resource').waitFor({timeout});
    check((await res.locator('.result .resource').textContent()).includes('demo://resource/dynamic/text/1'), 'the embedded resource names its URI');
    await img.scrollIntoViewIfNeeded();
    await ev.screenshot({path: path.join(shots, 'tryit-result.png')});
    await ev.locator('details.tryit > summary').click();

    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({path: path.join(shots, 'dashboard-desktop.png'), fullPage: true});

    // A phone-sized screen: the same session, nothing wider than the screen.
    const phone = await browser.newContext({viewport: {width: 390, height: 844}, deviceScaleFactor: 2,
      isMobile: true, hasTouch: true, storageState: await ctx.storageState()});
    track(phone, foreign);
    const pp = await phone.newPage();
    watch(pp, problems);
    await pp.goto(base + '/');
    await pp.locator('article[data-server="notes"]').first().waitFor({timeout});
    await pp.waitForFunction(() => document.querySelectorAll('#traffic figure.chart').length === 2, null, {timeout});
    for (const view of ['overview', 'calls', 'fleet', 'tokens']) {
      await pp.goto(base + '/#' + view);
      await pp.waitForTimeout(300);
      const widths = await pp.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
      check(widths[0] <= widths[1], `the ${view} view fits a phone's width (${widths[0]} > ${widths[1]})`);
    }
    await pp.goto(base + '/#overview');
    await pp.waitForFunction(() => document.querySelectorAll('#traffic figure.chart').length === 2, null, {timeout});
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
    // The bound is the page's length (a wheel step may be lost on a
    // loaded machine), not a clock: the loop ends once all are seen. At
    // the bottom it starts again from the top: a loaded browser may not
    // have rendered a tag while it was in view. The text is read every
    // fourth step (innerText lays the long page out each time, which
    // under load made the steps slow enough for the bound to end the
    // loop first); what Redoc has rendered stays.
    for (let i = 0; i < 1200 && missing.length; i++) {
      // A tag of many operations lists some behind "Show N more...".
      const more = page.getByText(/^Show \d+ more/);
      for (let k = await more.count() - 1; k >= 0; k--) {
        await more.nth(k).click();
      }
      const bottom = await page.evaluate(() =>
        window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 2);
      if (i % 4 === 0 || bottom) {
        const text = await page.evaluate(() => document.body.innerText.replace(/\s+/g, ' '));
        missing = missing.filter((op) => !text.includes(op));
      }
      if (bottom) {
        await page.evaluate(() => window.scrollTo(0, 0));
      } else {
        await page.mouse.wheel(0, 400);
      }
      await page.waitForTimeout(50);
    }
    check(missing.length === 0, `/docs shows every operation (missing: ${missing.join('; ')})`);

    check(problems.length === 0, `no page errors:\n${problems.join('\n')}`);
    check(foreign.length === 0, `every request goes to the broker's own origin; these did not:\n${foreign.join('\n')}`);
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

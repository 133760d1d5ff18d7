'use strict';
// An MCP client of the public face signing in with consent given on the
// tailnet, for TestPublicConsentOnTheTailnet (tsnet/consent_test.go): the
// TypeScript SDK's client with its OAuth provider (registering by DCR, or
// by a Client ID Metadata Document when CLIENT_METADATA_URL is set) meets
// the face's 401, and its redirectToAuthorization hands the URL to
// headless Chromium, whose requests to the tailnet go through SOCKS (a
// proxy dialling out of a tsnet node: the browser is that machine's
// tailnet identity; loopback, where the public face and the client's
// callback are, goes direct). The browser follows the authorization
// page's link to the consent page, gives the client the server DEMO for an
// hour, and comes back to the client's callback with a code. The client
// then lists and calls tools, refreshes, and calls again, prints
// SIGNED-IN {json}, waits for the test to send REVOKED (it takes the
// approver's grant away), tries once more and prints AFTER-REVOKE {json}.
//
// Environment: PLAYWRIGHT_CORE (the package's directory), CHROMIUM, SDK
// (the @modelcontextprotocol/sdk directory), MCP_URL (the public face's
// /mcp), SOCKS (host:port), CLIENT_METADATA_URL (optional).
const {chromium} = require(process.env.PLAYWRIGHT_CORE);
const {Client} = require(process.env.SDK + '/dist/cjs/client/index.js');
const {StreamableHTTPClientTransport} = require(process.env.SDK + '/dist/cjs/client/streamableHttp.js');
const {auth, UnauthorizedError} = require(process.env.SDK + '/dist/cjs/client/auth.js');
const http = require('node:http');
const readline = require('node:readline');

const mcpURL = new URL(process.env.MCP_URL);
const timeout = 30000;

function check(ok, what) {
  if (!ok) throw new Error(`check failed: ${what}`);
}

// callback serves the client's redirect URI and resolves with the code.
function callback() {
  let resolve, reject;
  const got = new Promise((res, rej) => { resolve = res; reject = rej; });
  const srv = http.createServer((req, res) => {
    const q = new URL(req.url, 'http://127.0.0.1').searchParams;
    res.end(q.get('code') ? 'Signed in' : 'error: ' + q.get('error'));
    if (q.get('code')) resolve(q.get('code')); else reject(new Error('the client was told ' + q.get('error')));
  });
  return new Promise(res => srv.listen(0, '127.0.0.1', () => res({srv, got, url: `http://127.0.0.1:${srv.address().port}/callback`})));
}

// provider is an OAuthClientProvider kept in memory.
class Provider {
  constructor(redirectUrl) {
    this.redirectUrl = redirectUrl;
    this.redirects = [];
    if (process.env.CLIENT_METADATA_URL) this.clientMetadataUrl = process.env.CLIENT_METADATA_URL;
  }
  get clientMetadata() {
    return {client_name: 'Consent E2E', redirect_uris: [this.redirectUrl], grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'], token_endpoint_auth_method: 'none'};
  }
  clientInformation() { return this.client; }
  saveClientInformation(c) { this.client = c; }
  tokens() { return this.toks; }
  saveTokens(t) { this.toks = t; }
  redirectToAuthorization(u) { this.redirects.push(u.toString()); }
  saveCodeVerifier(v) { this.verifier = v; }
  codeVerifier() { return this.verifier; }
  invalidateCredentials(scope) {
    if (scope === 'all' || scope === 'tokens') this.toks = undefined;
    if (scope === 'all' || scope === 'client') this.client = undefined;
  }
}

async function connect(provider) {
  const transport = new StreamableHTTPClientTransport(mcpURL, {authProvider: provider});
  const client = new Client({name: 'consent-e2e', version: '1'});
  await client.connect(transport);
  return {client, transport};
}

// consent gives the consent in Chromium and returns what the pages showed.
async function consent(authURL) {
  const browser = await chromium.launch({executablePath: process.env.CHROMIUM, args: [`--proxy-server=socks5://${process.env.SOCKS}`, '--disable-features=HttpsUpgrades']});
  try {
    const context = await browser.newContext({ignoreHTTPSErrors: true}); // the face's test certificate
    const page = await context.newPage();
    page.setDefaultTimeout(timeout);
    await page.goto(authURL);
    check(/^[A-Z]{4}-[A-Z]{4}$/.test(await page.textContent('#code')), 'the authorization page still shows a code for the owner');
    await page.click('#consent');
    await page.waitForSelector('#approve');
    const seen = {
      url: page.url(),
      client: await page.textContent('#client'),
      redirectHost: await page.textContent('#redirect-host'),
      who: await page.textContent('#who'),
      offered: await page.$$eval('input[name=server]', els => els.map(e => e.value)),
    };
    await page.check('input[name=server][value=demo]');
    await page.selectOption('select[name=ttl]', '1h');
    await page.click('#approve');
    try {
      await page.waitForURL(u => u.pathname === '/callback');
    } catch (e) {
      throw new Error(`the browser did not come back to the client: at ${page.url()}: ${await page.textContent('body')}`);
    }
    seen.landed = await page.textContent('body');
    return seen;
  } finally {
    await browser.close();
  }
}

async function main() {
  const lines = readline.createInterface({input: process.stdin})[Symbol.asyncIterator]();
  const cb = await callback();
  // The test may need the redirect URI first (a metadata document lists it).
  console.log('CALLBACK ' + cb.url);
  const {value: go} = await lines.next();
  check(go === 'GO', `the test sends GO (got ${go})`);
  const provider = new Provider(cb.url);
  const first = new StreamableHTTPClientTransport(mcpURL, {authProvider: provider});
  try {
    await new Client({name: 'consent-e2e', version: '1'}).connect(first);
    throw new Error('connected before signing in');
  } catch (e) {
    check(e instanceof UnauthorizedError, `the first connection needs sign-in (got ${e})`);
  }
  check(provider.redirects.length === 1, 'the client was sent to the authorization page once');
  const seen = await consent(provider.redirects[0]);
  const code = await cb.got;
  await first.finishAuth(code);

  const a = await connect(provider);
  const tools = (await a.client.listTools()).tools.map(t => t.name);
  const echo = (await a.client.callTool({name: 'demo__echo', arguments: {message: 'consented'}})).content[0].text;
  await a.client.close();
  const before = provider.tokens();
  check(await auth(provider, {serverUrl: mcpURL}) === 'AUTHORIZED', 'the refresh authorized');
  const after = provider.tokens();
  const b = await connect(provider);
  const echo2 = (await b.client.callTool({name: 'demo__echo', arguments: {message: 'refreshed'}})).content[0].text;
  await b.client.close();
  console.log('SIGNED-IN ' + JSON.stringify({...seen, registered: provider.client?.client_id, tools, echo, echo2,
    rotated: before.refresh_token !== after.refresh_token && before.access_token !== after.access_token}));

  const {value} = await lines.next();
  check(value === 'REVOKED', `the test sends REVOKED (got ${value})`);
  const asked = provider.redirects.length;
  let outcome;
  try {
    const c = await connect(provider);
    await c.client.listTools();
    await c.client.close();
    outcome = {connected: true};
  } catch (e) {
    outcome = {error: e.constructor.name, message: String(e.message), signInAgain: provider.redirects.length > asked};
  }
  console.log('AFTER-REVOKE ' + JSON.stringify(outcome));
  cb.srv.close();
}

main().then(() => process.exit(0), e => { console.error(e); process.exit(1); });

'use strict';
// The browser of the oidctest harness (internal/testing/oidctest):
// headless Chromium kept running for the test, as a person's browser is,
// so that each sign-in (signin.cjs, the $BROWSER) opens a window in it
// rather than starting a browser. It prints "WS <endpoint>" once it
// serves, and closes Chromium on SIGTERM or when its stdin closes.
//
//   node browser.cjs <playwright-core dir> <chromium>
const [pw, chromiumPath] = process.argv.slice(2);
const {chromium} = require(pw);

(async () => {
  const server = await chromium.launchServer({executablePath: chromiumPath, headless: true, args: ['--no-sandbox']});
  let closing;
  const close = () => { closing ||= server.close().then(() => process.exit(0)); };
  process.on('SIGTERM', close);
  process.stdin.on('end', close);
  process.stdin.resume();
  console.log(`WS ${server.wsEndpoint()}`);
})();

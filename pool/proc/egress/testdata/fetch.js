// Fetches a URL the way a confined node server would: with undici's
// EnvHttpProxyAgent, which reads HTTPS_PROXY and HTTP_PROXY from the
// environment, trusting the test CA in $CA_FILE. Prints the status and the
// body; on a failure prints its chain of causes to stderr and exits 2.
//
//	node fetch.js <undici package dir> <url>
'use strict';
const fs = require('node:fs');
const [undiciDir, url] = process.argv.slice(2);
const { EnvHttpProxyAgent, fetch } = require(undiciDir);

const agent = new EnvHttpProxyAgent({ requestTls: { ca: fs.readFileSync(process.env.CA_FILE) } });
fetch(url, { dispatcher: agent })
  .then(async (res) => {
    process.stdout.write(`${res.status}\n${await res.text()}`);
  })
  .catch((err) => {
    const chain = [];
    for (let e = err; e; e = e.cause) chain.push(`${e.name}: ${e.message}`);
    process.stderr.write(`${chain.join(' <- ')}\n`);
    process.exitCode = 2;
  })
  .finally(() => agent.close());

// Two external issuers for the public face's tests (oidctest.StartIssuer):
// oidc-provider from testdata/npm, each on its own loopback port with its
// own RSA signing key, issuing JWT access tokens (RFC 9068) by the client
// credentials grant with resource indicators (RFC 8707: the token's aud
// is the resource asked for, any https one). Each client's claims are put
// in its tokens (extraTokenClaims). It prints "ISSUERS <main> <other>"
// once both serve.
//
// Test routes of each: POST /test/rotate (a new signing key, published
// first in the JWKS beside the old one: tokens are signed with it from now
// on) and GET /test/fetches (how many times the JWKS was fetched).
//
// Environment: NODE_MODULES (testdata/npm/node_modules), CLIENTS (a JSON
// list of {id, secret, claims}).
import crypto from 'node:crypto';
import http from 'node:http';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const require = createRequire(process.env.NODE_MODULES + '/');
const { default: Provider, errors } = await import(pathToFileURL(require.resolve('oidc-provider')).href);
const clients = JSON.parse(process.env.CLIENTS || '[]');

function newKey() {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: crypto.randomUUID(), use: 'sig', alg: 'RS256' };
}

function provider(issuer, keys) {
  return new Provider(issuer, {
    clients: clients.map((c) => ({
      client_id: c.id, client_secret: c.secret, grant_types: ['client_credentials'],
      response_types: [], redirect_uris: [], token_endpoint_auth_method: 'client_secret_post',
    })),
    jwks: { keys },
    features: {
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        getResourceServerInfo: async (_ctx, resource) => {
          if (!resource.startsWith('https://')) throw new errors.InvalidTarget();
          return { scope: 'mcp', audience: resource, accessTokenTTL: 600, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } };
        },
      },
    },
    extraTokenClaims: async (_ctx, token) => clients.find((c) => c.id === token.clientId)?.claims,
  });
}

async function serve() {
  const server = http.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${server.address().port}`;
  let keys = [newKey()];
  let callback = provider(issuer, keys).callback();
  let fetches = 0;
  server.on('request', (req, res) => {
    const u = new URL(req.url, issuer);
    if (req.method === 'POST' && u.pathname === '/test/rotate') {
      keys = [newKey(), ...keys];
      callback = provider(issuer, keys).callback();
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ kid: keys[0].kid }));
      return;
    }
    if (req.method === 'GET' && u.pathname === '/test/fetches') {
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ fetches }));
      return;
    }
    if (u.pathname === '/jwks') fetches++;
    callback(req, res);
  });
  return issuer;
}

const main = await serve();
const other = await serve();
console.log(`ISSUERS ${main} ${other}`);

// An OpenID provider for the oidctest harness (internal/testing/oidctest):
// oidc-provider from testdata/npm with its own login and consent pages
// (devInteractions), dynamic client registration, resource indicators
// (RFC 8707: opaque access tokens of ACCESS_TTL seconds for any loopback
// resource, scope mcp:tools), refresh token rotation, introspection for
// the resource server (client "mcp-resource-server", secret RS_SECRET) and
// revocation. It prints "ISSUER <url>" once it serves.
//
// Test routes beside the provider's own: GET /test/events (every token
// grant, as {grant, ok, error, client, account, rotated}) and
// POST /test/revoke?account=NAME (the account revokes every grant it gave,
// as at a provider's account page: its tokens stop working at once).
//
// Environment: NODE_MODULES (testdata/npm/node_modules), ACCESS_TTL,
// ACCOUNTS (a JSON list of the accounts that may sign in), RS_SECRET.
import http from 'node:http';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const require = createRequire(process.env.NODE_MODULES + '/');
const { default: Provider, errors } = await import(pathToFileURL(require.resolve('oidc-provider')).href);

const ttl = Number(process.env.ACCESS_TTL || 5);
const accounts = new Set(JSON.parse(process.env.ACCOUNTS || '["alice"]'));
const events = [];
const grants = []; // {id, account}

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: 'mcp-resource-server', client_secret: process.env.RS_SECRET,
    grant_types: [], response_types: [], redirect_uris: [],
  }],
  findAccount: async (_ctx, id) => (accounts.has(id) ? { accountId: id, claims: async () => ({ sub: id }) } : undefined),
  scopes: ['openid', 'offline_access'],
  rotateRefreshToken: true,
  // Refresh tokens as oidc-provider issues them by default: for
  // offline_access, which it grants only to a request with prompt=consent
  // (OpenID Connect Core, section 11), as mcpx sends.
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, resource) => {
        if (!resource.startsWith('http://127.0.0.1:')) throw new errors.InvalidTarget();
        return { scope: 'mcp:tools', audience: resource, accessTokenTTL: ttl, accessTokenFormat: 'opaque' };
      },
    },
  },
});

provider.on('grant.saved', (g) => grants.push({ id: g.jti, account: g.accountId }));
provider.on('grant.success', (ctx) => events.push({
  grant: ctx.oidc.params.grant_type, ok: true, client: ctx.oidc.client?.clientId,
  account: ctx.oidc.account?.accountId, rotated: Boolean(ctx.oidc.entities.RotatedRefreshToken),
}));
provider.on('grant.error', (ctx, err) => events.push({
  grant: ctx.oidc.params?.grant_type, ok: false, error: err.error, client: ctx.oidc.client?.clientId,
}));

async function revoke(account) {
  const mine = grants.filter((g) => g.account === account);
  for (const { id } of mine) {
    await Promise.all([provider.AccessToken, provider.RefreshToken, provider.AuthorizationCode]
      .map((m) => m.revokeByGrantId(id)).concat(provider.Grant.adapter.destroy(id)));
  }
  grants.splice(0, grants.length, ...grants.filter((g) => g.account !== account));
  return mine.length;
}

const callback = provider.callback();
server.on('request', async (req, res) => {
  const u = new URL(req.url, issuer);
  if (req.method === 'GET' && u.pathname === '/test/events') {
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify(events));
  } else if (req.method === 'POST' && u.pathname === '/test/revoke') {
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ revoked: await revoke(u.searchParams.get('account')) }));
  } else {
    callback(req, res);
  }
});
console.log(`ISSUER ${issuer}`);

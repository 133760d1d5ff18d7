// An MCP resource server for the oidctest harness
// (internal/testing/oidctest), built with the TypeScript MCP SDK from
// testdata/npm: its protected resource metadata (RFC 9728,
// mcpAuthMetadataRouter), its bearer-token middleware (requireBearerAuth:
// the 401 challenge with resource_metadata and scope) with a verifier that
// asks the provider's introspection endpoint (RFC 7662) about each token,
// and a stateless Streamable HTTP MCP server at /mcp with the tools whoami
// (the token's subject) and echo. It prints "MCP <url>" once it serves.
//
// GET /test/seen is every request /mcp got, in order:
// {method, status, sub, client, active, token, message} (token: the bearer
// token as sent; message: the echo tool's argument, to tell calls apart).
//
// Environment: NODE_MODULES (testdata/npm/node_modules), RS_SECRET (the
// introspection client's secret). The provider's issuer is the first line
// of stdin (this program loads while the provider starts).
import http from 'node:http';
import { createRequire } from 'node:module';

const require = createRequire(process.env.NODE_MODULES + '/');
const express = require('express');
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/streamableHttp.js');
const { requireBearerAuth } = require('@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js');
const { mcpAuthMetadataRouter, getOAuthProtectedResourceMetadataUrl } = require('@modelcontextprotocol/sdk/server/auth/router.js');
const { InvalidTokenError } = require('@modelcontextprotocol/sdk/server/auth/errors.js');
const { z } = require('zod');

const readline = require('node:readline');
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const issuer = (await lines.next()).value.trim();
const oauthMetadata = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json();
const seen = [];

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const mcpURL = new URL(`http://127.0.0.1:${server.address().port}/mcp`);

// introspect asks the provider about token: the SDK's AuthInfo, or
// InvalidTokenError (401) when it is not active.
async function introspect(token) {
  const resp = await fetch(oauthMetadata.introspection_endpoint, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-www-form-urlencoded',
      Authorization: 'Basic ' + Buffer.from(`mcp-resource-server:${process.env.RS_SECRET}`).toString('base64'),
    },
    body: new URLSearchParams({ token }),
  });
  const info = await resp.json();
  if (!resp.ok || !info.active) throw new InvalidTokenError('the token is not active');
  return {
    token, clientId: info.client_id, scopes: (info.scope || '').split(' ').filter(Boolean), expiresAt: info.exp,
    resource: info.aud ? new URL(Array.isArray(info.aud) ? info.aud[0] : info.aud) : undefined, extra: { sub: info.sub },
  };
}

function mcpServer(auth) {
  const s = new McpServer({ name: 'oidctest-resource', version: '1.0.0' });
  s.registerTool('whoami', { description: 'The subject of the access token this call came with.' },
    async () => ({ content: [{ type: 'text', text: String(auth.extra.sub) }] }));
  s.registerTool('echo', { description: 'Returns the message.', inputSchema: { message: z.string() } },
    async ({ message }) => ({ content: [{ type: 'text', text: message }] }));
  return s;
}

const app = express();
app.use(mcpAuthMetadataRouter({ oauthMetadata, resourceServerUrl: mcpURL, scopesSupported: ['mcp:tools'], resourceName: 'oidctest' }));
app.get('/test/seen', (_req, res) => res.json(seen));
app.use('/mcp', (req, res, next) => {
  res.on('finish', () => seen.push({
    method: req.method, status: res.statusCode, sub: req.auth?.extra?.sub ?? '', client: req.auth?.clientId ?? '', active: Boolean(req.auth),
    token: (req.headers.authorization || '').replace(/^Bearer /i, ''),
    message: String(req.body?.params?.arguments?.message ?? ''),
  }));
  next();
});
app.use('/mcp', requireBearerAuth({
  verifier: { verifyAccessToken: introspect }, requiredScopes: ['mcp:tools'],
  resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpURL), expectedResource: mcpURL,
}));
app.post('/mcp', express.json(), async (req, res) => {
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  const s = mcpServer(req.auth);
  res.on('close', () => { transport.close(); s.close(); });
  await s.connect(transport);
  await transport.handleRequest(req, res, req.body);
});
app.all('/mcp', (_req, res) => res.status(405).set('Allow', 'POST').end());
server.on('request', app);
console.log(`MCP ${mcpURL.href}`);

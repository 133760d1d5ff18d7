// A program using the types openapi-typescript writes from the broker's
// document and from the per-server documents of the demo server,
// server-everything, server-filesystem and gopls (api/openapits_test.go).
// tsc --strict must accept it; each @ts-expect-error line proves that a
// type is a real type, not any: an unused directive is itself an error.

import type { paths as Broker, components as BrokerComponents } from "./broker.ts";
import type { operations as Demo } from "./demo.ts";
import type { operations as Everything } from "./everything.ts";
import type { operations as Filesystem } from "./filesystem.ts";
import type { operations as Gopls } from "./gopls.ts";

// The request body and the 200 result of a tool's operation.
type Body<Op extends { requestBody?: { content: { "application/json": unknown } } }> =
  NonNullable<Op["requestBody"]>["content"]["application/json"];
type Result<Op extends { responses: { 200: { content: { "application/json": unknown } } } }> =
  Op["responses"][200]["content"]["application/json"];

// The broker's own document.
type CallStats = Broker["/v1/stats"]["get"]["responses"][200]["content"]["application/json"];
declare const stats: CallStats;
export const failureRate: number = stats.total.failureRate;
export const byKey: (string | undefined)[] = (stats.rows ?? []).map((r) => r.key);
declare const servers: BrokerComponents["schemas"]["ServerList"];
export const firstServer: string | undefined = servers.servers?.[0]?.name;
// @ts-expect-error count is a number
export const wrongCount: string = stats.total.count;

// demo.add: {a, b} numbers; structuredContent {sum}.
export const add: Body<Demo["demo.add"]> = { a: 1, b: 2 };
declare const added: Result<Demo["demo.add"]>;
export const sum: number | undefined = added.structuredContent?.sum;
export const isError: boolean | undefined = added.isError;
// @ts-expect-error a is a number
export const addWrong: Body<Demo["demo.add"]> = { a: "one", b: 2 };

// everything.get-structured-content: an enum; structuredContent typed.
export const weather: Body<Everything["everything.get-structured-content"]> = { location: "Chicago" };
declare const forecast: Result<Everything["everything.get-structured-content"]>;
export const temperature: number | undefined = forecast.structuredContent?.temperature;
// @ts-expect-error location is one of three cities
export const weatherWrong: Body<Everything["everything.get-structured-content"]> = { location: "Paris" };

// filesystem.read_text_file: path required, head and tail optional.
export const read: Body<Filesystem["filesystem.read_text_file"]> = { path: "/tmp/x", head: 3 };
declare const text: Result<Filesystem["filesystem.read_text_file"]>;
export const content: string | undefined = text.structuredContent?.content;
// @ts-expect-error path is required
export const readWrong: Body<Filesystem["filesystem.read_text_file"]> = { head: 3 };

// gopls.go_package_api: packagePaths; the result's content blocks.
export const api: Body<Gopls["gopls.go_package_api"]> = { packagePaths: ["example.com/m/greet"] };
declare const described: Result<Gopls["gopls.go_package_api"]>;
export const kinds: string[] = described.content.map((b) => b.type);
// @ts-expect-error packagePaths is a list of strings
export const apiWrong: Body<Gopls["gopls.go_package_api"]> = { packagePaths: [42] };

// The generated client against server-everything: its resource templates,
// completion of its prompt's argument, a URL-mode elicitation answered by
// onUrl (and refused when there is none), and its log messages.
import { callTool, complete, listResourceTemplates, setLogLevel, type InputRequest, type LogMessage } from "./client.ts";

const text = (r: { content: { type: string; text?: unknown }[] }) =>
  r.content.map((c) => (c.type === "text" ? String(c.text) : "")).join("\n");
const out: { [key: string]: unknown } = {};

out.templates = (await listResourceTemplates("everything")).map((t) => t.uriTemplate);
out.completions = (await complete("everything", {
  ref: { type: "ref/prompt", name: "completable-prompt" },
  argument: { name: "name", value: "" },
  context: { arguments: { department: "Sales" } },
})).completion.values;

const urls: InputRequest[] = [];
const formAsked: string[] = [];
out.url = text(await callTool("everything", "trigger-url-elicitation", { url: "https://example.com/ts", elicitationId: "ts-1" }, {
  onUrl: (req) => {
    urls.push(req);
    return "accept";
  },
  onInput: (req) => {
    formAsked.push(req.kind);
    return { action: "accept", content: {} };
  },
}));
out.urls = urls.map((u) => ({ mode: u.mode, url: u.url, elicitationId: u.elicitationId }));
// onInput alone is never asked about a URL: it is declined.
out.urlWithoutHandler = text(await callTool("everything", "trigger-url-elicitation", { url: "https://example.com/ts2" }, {
  onInput: (req) => {
    formAsked.push(req.kind);
    return { action: "accept", content: {} };
  },
}));
out.formAsked = formAsked;

await setLogLevel("everything", "debug");
const messages: LogMessage[] = [];
let toggled = text(await callTool("everything", "toggle-simulated-logging", {}, { onMessage: (m) => messages.push(m) }));
if (toggled.startsWith("Stopped")) {
  toggled = text(await callTool("everything", "toggle-simulated-logging", {}, { onMessage: (m) => messages.push(m) }));
}
out.messages = messages.map((m) => ({ server: m.server, data: String(m.data) }));
console.log(JSON.stringify(out));

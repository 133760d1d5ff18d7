// A program written against the generated types: it must type-check, and
// every line after a @ts-expect-error must not (so the types are not any).
import type { demo } from "./demo.ts";
import type { rec } from "./recursion.ts";
import type { AllKeywordsInput } from "./keywords.ts";
import type { RootrefInput, AllofInput } from "./refs.ts";

const echo: demo.EchoInput = { message: "hi" };
// @ts-expect-error message is a string
const echoBad: demo.EchoInput = { message: 5 };
// @ts-expect-error message is required
const echoMissing: demo.EchoInput = {};
// @ts-expect-error no such member (additionalProperties: false)
const echoExtra: demo.EchoInput = { message: "hi", typo: 1 };

const sum: demo.AddOutput = { sum: 3 };
// @ts-expect-error sum is a number
const sumBad: demo.AddOutput = { sum: "3" };

const tree: rec.TreeInput = { root: { value: "a", children: [{ value: "b", children: [] }] } };
// @ts-expect-error a child needs its children
const treeBad: rec.TreeInput = { root: { value: "a", children: [{ value: "b" }] } };

const expr: rec.MutualInputExpr = { fn: "add", args: [1, { fn: "neg", args: [2] }] };
// @ts-expect-error an argument is a number or a call
const exprBad: rec.MutualInputExpr = { fn: "add", args: ["1"] };

const deep: rec.Depth3InputA = { b: { c: { a: { b: {} }, leaf: true } } };
// @ts-expect-error leaf is a boolean, three levels down
const deepBad: rec.Depth3InputA = { b: { c: { a: { b: { c: { leaf: 1 } } } } } };

const j: rec.JsonOutput = { a: [1, "x", null, { b: false }] };
// @ts-expect-error undefined is not JSON
const jBad: rec.JsonOutput = { a: undefined };

const kw: AllKeywordsInput = {
  str: "2026-01-01T00:00:00Z",
  color: "red",
  tuple: ["a", 1],
  merged: { a: "x", b: 1 },
  nullable: null,
  mixedEnum: 2.5,
  openTuple: ["a"],
  restTuple: ["a", 1, 2],
  mapWithProps: { count: 1, other: "x" },
};
// @ts-expect-error not one of the enum's values
const kwColor: AllKeywordsInput["color"] = "purple";
// @ts-expect-error the tuple has exactly two elements
const kwTuple: AllKeywordsInput["tuple"] = ["a", 1, 2];
// @ts-expect-error allOf lifts required: a is required
const kwMerged: AllKeywordsInput["merged"] = { b: 1 };
// @ts-expect-error const 2
const kwVersion: AllKeywordsInput["version"] = 3;

const rr: RootrefInput = { id: 1, extra: "x" };
// @ts-expect-error the root $ref's id is required beside the sibling extra
const rrBad: RootrefInput = { extra: "x" };
const ao: AllofInput = { name: "n", age: 3 };
// @ts-expect-error allOf: name is required by a sibling member
const aoBad: AllofInput = { age: 3 };

export { echo, echoBad, echoMissing, echoExtra, sum, sumBad, tree, treeBad, expr, exprBad, deep, deepBad, j, jBad, kw, kwColor, kwTuple, kwMerged, kwVersion, rr, rrBad, ao, aoBad };

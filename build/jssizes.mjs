// The sizes build/lint.py checks on the page side: every module's lines and every function's, read
// with the TypeScript compiler's own parser (node_modules/typescript, a dev dependency), not
// patterns. Prints one JSON object: {modules: [{path, lines, functions: [{name, lines}]}]}.
//
//   node build/jssizes.mjs web/a.mjs web/b.js ...
//
// A function is any function declaration, expression, arrow function, method, accessor or
// constructor; it counts from its first token (its JSDoc not included, as Python's `def` line) to
// its last line, the functions inside it included, as build/lint.py counts Python's. Its name is
// qualified by what encloses it (`loadEngine.remember`, `FakeCache.put`); a function with no name
// of its own is named by where it is (`<anonymous:LINE>`).
import { readFileSync } from "node:fs";
import ts from "typescript";

/** The name a function node is known by: its own, its variable's, its property's, or its line. */
function nameOf(node, source) {
  if (node.name && (ts.isIdentifier(node.name) || ts.isPrivateIdentifier(node.name) || ts.isStringLiteral(node.name))) return node.name.text;
  if (ts.isConstructorDeclaration(node)) return "constructor";
  const parent = node.parent;
  if (parent && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) && ts.isIdentifier(parent.name)) {
    return parent.name.text;
  }
  const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
  return `<anonymous:${line}>`;
}

const FUNCTION_KINDS = new Set([
  ts.SyntaxKind.FunctionDeclaration,
  ts.SyntaxKind.FunctionExpression,
  ts.SyntaxKind.ArrowFunction,
  ts.SyntaxKind.MethodDeclaration,
  ts.SyntaxKind.GetAccessor,
  ts.SyntaxKind.SetAccessor,
  ts.SyntaxKind.Constructor,
]);

/** Every function in `source` as {name, lines}, outer ones first. */
function functions(source) {
  const out = [];
  const lineOf = (pos) => source.getLineAndCharacterOfPosition(pos).line;
  const visit = (node, prefix) => {
    let inner = prefix;
    if (FUNCTION_KINDS.has(node.kind)) {
      const name = prefix + nameOf(node, source);
      out.push({ name, lines: lineOf(node.getEnd()) - lineOf(node.getStart(source)) + 1 });
      inner = name + ".";
    } else if (ts.isClassLike(node)) {
      inner = prefix + (node.name?.text ?? "<class>") + ".";
    }
    ts.forEachChild(node, (child) => visit(child, inner));
  };
  visit(source, "");
  return out;
}

const modules = process.argv.slice(2).map((path) => {
  const text = readFileSync(path, "utf8");
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
  const lines = text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
  return { path, lines, functions: functions(source) };
});
process.stdout.write(JSON.stringify({ modules }) + "\n");

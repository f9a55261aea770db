/**
 * Size limits of the source: no file over 700 lines, and no function over 80 lines unless a comment
 * just before it says why it is long (`// Why long: ...`). Functions are found with the TypeScript parser,
 * so methods, arrow functions and function expressions count alike. And a ceiling on type assertions
 * (`x as T`, other than `as const`): each one is a place the types are taken on trust.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';
import { projectRoot } from '../conformance/cases.ts';

const maxFileLines = 700;
const maxFunctionLines = 80;
/** Half of the 249 type assertions src/ had when the count was first taken; lower it as casts go. */
const maxAssertions = 124;

/** The type assertions of a file (`as const` is not one: it only narrows). */
function assertions(path: string, text: string): number {
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  let count = 0;
  const visit = (node: ts.Node): void => {
    if (
      (ts.isAsExpression(node) || ts.isTypeAssertionExpression(node)) &&
      !(ts.isTypeReferenceNode(node.type) && node.type.getText(file) === 'const')
    )
      count++;
    ts.forEachChild(node, visit);
  };
  visit(file);
  return count;
}

/** The hand-written sources (src/model/generated is generated at build from the CRDs). */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'generated' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** A function's span, and whether the comments just before it (or its statement) say why it is long. */
interface Span {
  name: string;
  line: number;
  lines: number;
  explained: boolean;
}

function functionSpans(path: string, text: string): Span[] {
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const lineOf = (pos: number) => file.getLineAndCharacterOfPosition(pos).line;
  const says = (node: ts.Node) =>
    (ts.getLeadingCommentRanges(text, node.getFullStart()) ?? []).some((c) =>
      /Why long:/.test(text.slice(c.pos, c.end)),
    );
  const spans: Span[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      // The comment may sit before the function or before the statement or property that holds it.
      const holders = [node, node.parent, node.parent.parent].filter((n): n is ts.Node => n !== undefined);
      const name = ts.getNameOfDeclaration(node as ts.Declaration)?.getText(file) ?? '(anonymous)';
      spans.push({
        name,
        line: lineOf(node.getStart(file)) + 1,
        lines: lineOf(node.getEnd()) - lineOf(node.getStart(file)) + 1,
        explained: holders.some(says),
      });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return spans;
}

const files = sourceFiles(join(projectRoot, 'src')).sort();

test(`no source file is over ${maxFileLines} lines`, () => {
  const long = files
    .map((path) => ({
      path: relative(projectRoot, path),
      lines: readFileSync(path, 'utf8').split('\n').length,
    }))
    .filter((f) => f.lines > maxFileLines);
  assert.deepEqual(long, []);
});

test(`no function is over ${maxFunctionLines} lines without a comment saying why`, () => {
  const unexplained = files.flatMap((path) =>
    functionSpans(path, readFileSync(path, 'utf8'))
      .filter((s) => s.lines > maxFunctionLines && !s.explained)
      .map((s) => `${relative(projectRoot, path)}:${s.line} ${s.name} (${s.lines} lines)`),
  );
  assert.deepEqual(unexplained, []);
});

test('the check finds a long function and accepts one whose comment says why', () => {
  const body = Array.from({ length: maxFunctionLines }, (_, i) => `  const x${i} = ${i};`).join('\n');
  const spans = functionSpans(
    'x.ts',
    `function plain() {\n${body}\n}\n// Why long: a table.\nconst told = () => {\n${body}\n};\n`,
  );
  assert.deepEqual(
    spans.map((s) => [s.name, s.lines > maxFunctionLines, s.explained]),
    [
      ['plain', true, false],
      ['told', true, true],
    ],
  );
});

test(`at most ${maxAssertions} type assertions in src/`, () => {
  const counts = files.map((path) => ({ path, count: assertions(path, readFileSync(path, 'utf8')) }));
  const total = counts.reduce((n, c) => n + c.count, 0);
  const most = counts
    .sort((a, b) => b.count - a.count)
    .slice(0, 5)
    .map((c) => `${relative(projectRoot, c.path)} ${c.count}`);
  assert.ok(total <= maxAssertions, `${total} type assertions (most in ${most.join(', ')})`);
  assert.equal(
    assertions('x.ts', 'const a = b as string;\nconst c = [1] as const;\nconst d = <number>e;\n'),
    2,
  );
});

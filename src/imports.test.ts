import { existsSync, readdirSync, readFileSync, statSync } from 'fs';
import { dirname, join, relative, resolve } from 'path';
import * as ts from 'typescript';

/**
 * The import graph of src/ has no cycle. Every static import counts, `import type` too: a module that needs a type
 * from the module importing it is tangled with it all the same (the editors see the datasource through the small
 * interface of src/lookups.ts instead of the DataSource class). Dynamic import() does not count.
 */

const SRC = __dirname;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      return sourceFiles(path);
    }
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The file a relative specifier names, or undefined for a package or a non-source file (JSON, images). */
function resolveImport(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) {
    return undefined;
  }
  const base = resolve(dirname(from), specifier);
  return [`${base}.ts`, `${base}.tsx`, join(base, 'index.ts'), join(base, 'index.tsx')].find((p) => existsSync(p));
}

/** The files a source file imports statically (import and export ... from, type-only included). */
function importsOf(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false);
  const specifiers = source.statements.flatMap((s) => {
    if (
      (ts.isImportDeclaration(s) || ts.isExportDeclaration(s)) &&
      s.moduleSpecifier &&
      ts.isStringLiteral(s.moduleSpecifier)
    ) {
      return [s.moduleSpecifier.text];
    }
    return [];
  });
  return specifiers.map((s) => resolveImport(file, s)).filter((f): f is string => f !== undefined);
}

/** Cycles of a graph, each as a path from a module back to itself: one per back edge of a depth-first walk, so none exactly when the graph has no cycle. */
function findCycles(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string) => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') {
        cycles.push([...stack.slice(stack.indexOf(next)), next]);
      } else if (!state.has(next)) {
        visit(next);
      }
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of [...graph.keys()].sort()) {
    if (!state.has(node)) {
      visit(node);
    }
  }
  return cycles;
}

const graph = new Map(
  sourceFiles(SRC).map((f) => [relative(SRC, f), importsOf(f).map((i) => relative(SRC, i))] as [string, string[]])
);

describe('the import graph of src/', () => {
  it('is read: the edges the plugin is built from are there, type-only ones too', () => {
    expect(graph.get('module.ts')).toEqual(expect.arrayContaining(['datasource.ts', 'components/QueryEditor.tsx']));
    expect(graph.get('datasource.ts')).toEqual(expect.arrayContaining(['variables.ts', 'types.ts']));
    expect(graph.get('components/query/MatcherRows.tsx')).toContain('datasource.ts'); // `import type`
  });

  it('finds a cycle when there is one', () => {
    const cyclic = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts', 'd.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', []],
    ]);
    expect(findCycles(cyclic)).toEqual([['a.ts', 'b.ts', 'c.ts', 'a.ts']]);
    expect(
      findCycles(
        new Map([
          ['a.ts', ['b.ts']],
          ['b.ts', []],
        ])
      )
    ).toEqual([]);
  });

  it('has no cycle', () => {
    expect(findCycles(graph).map((c) => c.join(' → '))).toEqual([]);
  });
});

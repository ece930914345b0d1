// The import graph's rules (docs/ARCHITECTURE.md, "Layers"): no import cycle, type-only imports included, and
// every file imports only the layers it may. Reads every .ts file of the checked folders, extracts its imports
// with the TypeScript parser (import and import type, export ... from, import(), import('x').T, import x =
// require()), resolves relative specifiers (`.js` -> `.ts`) and prints each violation on one line; exits 1 on any.
// Run: `npm run check:imports` (part of `npm test`).
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Folders whose files must form no cycle and keep to the layers. */
const LAYERED = ['src', 'sip', 'native'];
/** Folders checked only for reaching into the HTTP adapter (src/api) from outside it. */
const OUTSIDE = ['test', 'bench', 'bin'];

/** The adapters: each talks to one kind of peer and calls domain, conversation and auth, never another adapter. */
const ADAPTERS = ['src/api/', 'src/realtime/', 'src/telephony/'];

/**
 * Files that compose adapters. src/main.ts is the process's composition root (it builds the control plane and
 * starts the media workers); the media worker's entry (src/workers/worker.ts) runs both the STS socket and the
 * calls telephony hands it.
 */
const COMPOSERS = new Set(['src/main.ts', 'src/workers/worker.ts']);

/** Outside src/api, only the API's own tests and the test harness (which builds the app) may import it. */
const API_TEST_ALLOWED = (file: string) => file.startsWith('test/api/') || file === 'test/helpers/server.ts';

/** The self-contained folders: their files import only each other, node: builtins and npm packages. */
const SELF_CONTAINED = ['sip/', 'native/'];

function tsFiles(dir: string): string[] {
  const abs = join(ROOT, dir);
  if (!existsSync(abs)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(abs)) {
    if (entry === 'node_modules' || entry === 'build') continue;
    const rel = `${dir}/${entry}`;
    if (statSync(join(ROOT, rel)).isDirectory()) out.push(...tsFiles(rel));
    else if (entry.endsWith('.ts') && !entry.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

/** Every module specifier a file names, type-only ones included. */
function specifiers(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out: string[] = [];
  const literal = (node: ts.Node | undefined) => {
    if (node && ts.isStringLiteralLike(node)) out.push(node.text);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) literal(node.moduleSpecifier);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      literal(node.moduleReference.expression);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) literal(node.argument.literal);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword)
      literal(node.arguments[0]);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/** The repository-relative .ts file a relative specifier names, or null for packages and builtins. */
function resolveSpecifier(from: string, spec: string): string | null {
  if (!spec.startsWith('./') && !spec.startsWith('../')) return null;
  const base = resolve(ROOT, dirname(from), spec);
  const candidates = [base.replace(/\.js$/, '.ts'), base, `${base}.ts`, join(base, 'index.ts')];
  const hit = candidates.find((c) => existsSync(c) && statSync(c).isFile()) ?? candidates[0];
  return relative(ROOT, hit).split(sep).join('/');
}

const under = (file: string, folder: string) => file.startsWith(folder);
const adapterOf = (file: string) => ADAPTERS.find((a) => under(file, a)) ?? null;

/** Tarjan's strongly connected components; those of more than one file (or a file importing itself) are cycles. */
function cycles(graph: Map<string, Set<string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || graph.get(v)!.has(v)) found.push(component.sort());
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) connect(v);
  return found;
}

const violations: string[] = [];
const graph = new Map<string, Set<string>>();

for (const file of LAYERED.flatMap(tsFiles)) {
  const edges = new Set<string>();
  graph.set(file, edges);
  const adapter = adapterOf(file);
  for (const spec of specifiers(file)) {
    const target = resolveSpecifier(file, spec);
    const selfContained = SELF_CONTAINED.find((f) => under(file, f));
    if (selfContained && (target ? !under(target, selfContained) : spec.startsWith('/'))) {
      violations.push(
        `${file}: imports ${spec}: ${selfContained} imports only its own files, node: builtins and npm packages`,
      );
    }
    if (!target) continue;
    if (!existsSync(join(ROOT, target))) {
      violations.push(`${file}: imports ${spec}: no such file (${target})`);
      continue;
    }
    edges.add(target);
    const targetAdapter = adapterOf(target);
    if (targetAdapter === 'src/api/' && adapter !== 'src/api/' && !COMPOSERS.has(file)) {
      violations.push(
        `${file}: imports ${target}: only src/api (and the composition root) may import the HTTP adapter`,
      );
    } else if (adapter && targetAdapter && adapter !== targetAdapter && !COMPOSERS.has(file)) {
      violations.push(`${file}: imports ${target}: adapters (${ADAPTERS.join(', ')}) do not import each other`);
    }
    if (under(file, 'src/domain/') && targetAdapter) {
      violations.push(`${file}: imports ${target}: the domain imports no adapter`);
    }
    if (under(file, 'src/store/') && (targetAdapter || under(target, 'src/domain/'))) {
      violations.push(`${file}: imports ${target}: the store imports neither the domain nor an adapter`);
    }
    if (under(file, 'src/workers/') && targetAdapter && !COMPOSERS.has(file)) {
      violations.push(
        `${file}: imports ${target}: the worker plumbing (protocol, pool, main's answers) imports no adapter; only the worker entry composes them`,
      );
    }
    if (under(file, 'src/conversation/') && targetAdapter) {
      violations.push(
        `${file}: imports ${target}: the conversation engine imports no adapter (its host implements host.ts)`,
      );
    }
  }
}

for (const file of OUTSIDE.flatMap(tsFiles)) {
  if (API_TEST_ALLOWED(file)) continue;
  for (const spec of specifiers(file)) {
    const target = resolveSpecifier(file, spec);
    if (target && under(target, 'src/api/')) {
      violations.push(`${file}: imports ${target}: only test/api and the test harness may import the HTTP adapter`);
    }
  }
}

for (const component of cycles(graph)) violations.push(`import cycle: ${component.join(' <-> ')}`);

for (const v of violations) process.stdout.write(`${v}\n`);
if (violations.length > 0) {
  process.stdout.write(`check-imports: ${violations.length} violation(s)\n`);
  process.exit(1);
}
process.stdout.write(`check-imports: ${graph.size} files, no cycle, layers respected\n`);

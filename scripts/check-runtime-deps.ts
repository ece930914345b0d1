// The production install (`npm ci --omit=dev`, the image's runtime stage) has every package the server loads:
// each package a file of the server's folders imports at run time (import and export ... from, import(),
// require(), import.meta.resolve(); type-only imports are erased and skipped) must be a `dependencies` entry of
// package.json, and the lockfile must not mark it dev-only. Prints each problem on one line; exits 1 on any.
// Run: `npm run check:runtime-deps`.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The folders the server runs from (the image copies these: Dockerfile). */
export const RUNTIME_FOLDERS = ['src', 'sip'];

export interface RuntimeImport {
  /** The file, relative to the root. */
  file: string;
  /** The package name (`@scope/name` or `name`) of a bare specifier. */
  pkg: string;
}

function tsFiles(root: string, dir: string): string[] {
  const abs = join(root, dir);
  if (!existsSync(abs)) return [];
  return readdirSync(abs).flatMap((entry) => {
    const rel = `${dir}/${entry}`;
    if (statSync(join(root, rel)).isDirectory()) return tsFiles(root, rel);
    return rel.endsWith('.ts') && !rel.endsWith('.d.ts') ? [rel] : [];
  });
}

/** The package a bare specifier names; null for relative paths, absolute paths, URLs and Node's builtins. */
export function packageOf(specifier: string): string | null {
  if (/^(\.|\/|[a-z]+:)/.test(specifier)) return null; // relative, absolute, node:, file:, data:
  const parts = specifier.split('/');
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
  return builtinModules.includes(name) ? null : name;
}

/** The string literal specifiers a file loads at run time. */
export function runtimeSpecifiers(source: string, fileName = 'file.ts'): string[] {
  const sf = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      // `import type {...}` is erased; so is an import whose every named binding is `type`.
      const clause = node.importClause;
      const named = clause?.namedBindings;
      const allTypes =
        !!clause &&
        !clause.name &&
        !!named &&
        ts.isNamedImports(named) &&
        named.elements.length > 0 &&
        named.elements.every((e) => e.isTypeOnly);
      if (!clause?.isTypeOnly && !allTypes && ts.isStringLiteral(node.moduleSpecifier))
        out.push(node.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(node)) {
      if (!node.isTypeOnly && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier))
        out.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.arguments.length > 0 && ts.isStringLiteralLike(node.arguments[0])) {
      const callee = node.expression;
      const isDynamicImport = callee.kind === ts.SyntaxKind.ImportKeyword;
      const isRequire = ts.isIdentifier(callee) && callee.text === 'require';
      const isMetaResolve =
        ts.isPropertyAccessExpression(callee) && callee.name.text === 'resolve' && ts.isMetaProperty(callee.expression);
      if (isDynamicImport || isRequire || isMetaResolve) out.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** Every package the runtime folders load, with a file that loads it. */
export function runtimeImports(root: string = ROOT): RuntimeImport[] {
  const out: RuntimeImport[] = [];
  for (const file of RUNTIME_FOLDERS.flatMap((d) => tsFiles(root, d))) {
    for (const spec of runtimeSpecifiers(readFileSync(join(root, file), 'utf8'), file)) {
      const pkg = packageOf(spec);
      if (pkg) out.push({ file, pkg });
    }
  }
  return out;
}

interface PackageJson {
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}
interface Lockfile {
  packages: Record<string, { dev?: boolean; devOptional?: boolean }>;
}

/** What `npm ci --omit=dev` would lack for the runtime imports of `root`, one line each. */
export function runtimeDependencyProblems(root: string = ROOT): string[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as PackageJson;
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as Lockfile;
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const { file, pkg: name } of runtimeImports(root)) {
    if (seen.has(name)) continue;
    seen.add(name);
    if (!pkg.dependencies?.[name]) {
      const where = pkg.devDependencies?.[name] ? 'a devDependency' : 'not declared in package.json';
      problems.push(`${file}: loads '${name}' at run time, which is ${where}: move it to dependencies`);
      continue;
    }
    const entry = lock.packages[`node_modules/${name}`];
    if (!entry) problems.push(`${file}: loads '${name}', which package-lock.json does not install (run npm install)`);
    else if (entry.dev || entry.devOptional)
      problems.push(
        `${file}: loads '${name}', which package-lock.json marks dev-only: npm ci --omit=dev leaves it out`,
      );
  }
  return problems;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const problems = runtimeDependencyProblems();
  for (const p of problems) process.stdout.write(`${p}\n`);
  if (problems.length > 0) {
    process.stdout.write(`check-runtime-deps: ${problems.length} problem(s)\n`);
    process.exit(1);
  }
  const packages = new Set(runtimeImports().map((i) => i.pkg));
  process.stdout.write(`check-runtime-deps: ${packages.size} packages loaded at run time, all in dependencies\n`);
}

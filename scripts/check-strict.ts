// Type-checks the folders in ROOTS with noUncheckedIndexedAccess on (tsconfig.json leaves it off for the rest
// of the repository until each folder is clean): prints their diagnostics and exits 1 if there are any.
// Usage: node --import tsx scripts/check-strict.ts
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** Folders checked strictly, relative to the repository root (with a trailing slash). */
const ROOTS = ['sip/', 'src/api/', 'src/domain/'];

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function underRoots(fileName: string): boolean {
  const path = relative(ROOT, fileName).split('\\').join('/');
  return ROOTS.some((root) => path.startsWith(root));
}

const configPath = resolve(ROOT, 'tsconfig.json');
const read = ts.readConfigFile(configPath, (path) => ts.sys.readFile(path));
if (read.error) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, '\n'));
const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, ROOT, { noUncheckedIndexedAccess: true }, configPath);
// The files under ROOTS and what they import: their diagnostics do not depend on the rest.
const program = ts.createProgram({ rootNames: parsed.fileNames.filter(underRoots), options: parsed.options });
const diagnostics = [...ts.getConfigFileParsingDiagnostics(parsed), ...ts.getPreEmitDiagnostics(program)].filter(
  (d) => d.file === undefined || underRoots(d.file.fileName),
);

const host: ts.FormatDiagnosticsHost = {
  getCanonicalFileName: (f) => f,
  getCurrentDirectory: () => ROOT,
  getNewLine: () => '\n',
};
if (diagnostics.length > 0) {
  process.stderr.write((process.stderr.isTTY ? ts.formatDiagnosticsWithColorAndContext : ts.formatDiagnostics)(diagnostics, host));
  process.stderr.write(`\n${diagnostics.length} error(s) with noUncheckedIndexedAccess under ${ROOTS.join(', ')}\n`);
  process.exit(1);
}
process.stdout.write(`noUncheckedIndexedAccess: no errors under ${ROOTS.join(', ')}\n`);

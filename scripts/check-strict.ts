// Type-checks the folders tsconfig.strict.json includes with noUncheckedIndexedAccess on (tsconfig.json leaves it
// off for the rest of the repository until each folder is clean): prints their diagnostics and exits 1 if any.
// Usage: node --import tsx scripts/check-strict.ts
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

const configPath = resolve(ROOT, 'tsconfig.strict.json');
const read = ts.readConfigFile(configPath, (path) => ts.sys.readFile(path));
if (read.error) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, '\n'));
const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, ROOT, undefined, configPath);
if (!parsed.options.noUncheckedIndexedAccess) throw new Error('tsconfig.strict.json must set noUncheckedIndexedAccess');
const strictFiles = new Set(parsed.fileNames.map((f) => resolve(f)));
const ROOTS = (read.config as { include: string[] }).include;
// The included files and what they import: only the included files' diagnostics count.
const program = ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options });
const diagnostics = [...ts.getConfigFileParsingDiagnostics(parsed), ...ts.getPreEmitDiagnostics(program)].filter(
  (d) => d.file === undefined || strictFiles.has(resolve(d.file.fileName)),
);

const host: ts.FormatDiagnosticsHost = {
  getCanonicalFileName: (f) => f,
  getCurrentDirectory: () => ROOT,
  getNewLine: () => '\n',
};
if (diagnostics.length > 0) {
  process.stderr.write(
    (process.stderr.isTTY ? ts.formatDiagnosticsWithColorAndContext : ts.formatDiagnostics)(diagnostics, host),
  );
  process.stderr.write(`\n${diagnostics.length} error(s) with noUncheckedIndexedAccess under ${ROOTS.join(', ')}\n`);
  process.exit(1);
}
process.stdout.write(`noUncheckedIndexedAccess: no errors under ${ROOTS.join(', ')}\n`);

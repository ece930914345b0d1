// Reads a TAP stream (tap --reporter=tap) on stdin and prints "N passed, M failed":
// one count per top-level test inside each test file; a file that failed without a failing
// test of its own (it crashed, timed out or failed to load) counts as one failure.
import { Parser } from 'tap-parser';

let passed = 0;
let failed = 0;
let skipped = 0;
const root = new Parser();
root.on('child', (file) => {
  let fileFailures = 0;
  file.on('assert', (res) => {
    if (res.skip || res.todo) skipped++;
    else if (res.ok) passed++;
    else {
      failed++;
      fileFailures++;
    }
  });
  file.on('complete', (results) => {
    if (!results.ok && fileFailures === 0) failed++;
  });
});
root.on('assert', (res) => {
  if (!res.ok && !res.skip && !res.todo) process.stderr.write(`failing file: ${res.name}\n`);
});
root.on('complete', (results) => {
  if (!results.ok && failed === 0) failed++;
  // The last line is exactly "N passed, M failed"; skipped tests are counted on the line before it.
  if (skipped) process.stdout.write(`${skipped} skipped\n`);
  process.stdout.write(`${passed} passed, ${failed} failed\n`);
});
process.stdin.pipe(root);

/** One line of a diff: kept, removed from the old text, or added in the new. */
export interface DiffLine {
  op: ' ' | '-' | '+';
  text: string;
}

/** Longest-common-subsequence work above this many cells falls back to "all removed, all added". */
const MAX_CELLS = 4_000_000;

/**
 * A line diff of two texts (a file before and after an edit), with `context` unchanged lines kept
 * around each change and longer unchanged runs folded into a `…` marker. Pure: no DOM.
 */
export function lineDiff(before: string, after: string, context = 3): (DiffLine | { op: '…'; skipped: number })[] {
  const a = before === '' ? [] : before.replace(/\n$/, '').split('\n');
  const b = after === '' ? [] : after.replace(/\n$/, '').split('\n');
  // Common prefix and suffix first: edits are usually small.
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const midA = a.slice(start, endA);
  const midB = b.slice(start, endB);
  const middle: DiffLine[] = [];
  if (midA.length * midB.length > MAX_CELLS) {
    for (const text of midA) middle.push({ op: '-', text });
    for (const text of midB) middle.push({ op: '+', text });
  } else {
    // LCS table from the end, so the walk forward emits lines in order.
    const rows = midA.length + 1;
    const cols = midB.length + 1;
    const table = new Uint32Array(rows * cols);
    for (let i = midA.length - 1; i >= 0; i--) {
      for (let j = midB.length - 1; j >= 0; j--) {
        table[i * cols + j] =
          midA[i] === midB[j]
            ? table[(i + 1) * cols + j + 1]! + 1
            : Math.max(table[(i + 1) * cols + j]!, table[i * cols + j + 1]!);
      }
    }
    let i = 0;
    let j = 0;
    while (i < midA.length || j < midB.length) {
      if (i < midA.length && j < midB.length && midA[i] === midB[j]) {
        middle.push({ op: ' ', text: midA[i]! });
        i++;
        j++;
      } else if (i < midA.length && (j === midB.length || table[(i + 1) * cols + j]! >= table[i * cols + j + 1]!)) {
        middle.push({ op: '-', text: midA[i++]! });
      } else {
        middle.push({ op: '+', text: midB[j++]! });
      }
    }
  }
  const all: DiffLine[] = [
    ...a.slice(0, start).map((text) => ({ op: ' ' as const, text })),
    ...middle,
    ...a.slice(endA).map((text) => ({ op: ' ' as const, text })),
  ];
  // Fold unchanged runs far from any change.
  const near = new Array<boolean>(all.length).fill(false);
  all.forEach((line, k) => {
    if (line.op === ' ') return;
    for (let d = Math.max(0, k - context); d <= Math.min(all.length - 1, k + context); d++) near[d] = true;
  });
  const out: (DiffLine | { op: '…'; skipped: number })[] = [];
  let skipped = 0;
  all.forEach((line, k) => {
    if (line.op !== ' ' || near[k]) {
      if (skipped) out.push({ op: '…', skipped });
      skipped = 0;
      out.push(line);
    } else skipped++;
  });
  if (skipped) out.push({ op: '…', skipped });
  return out;
}

/**
 * The edit distance behind every "did you mean": optimal string alignment, that is Levenshtein
 * plus the swap of two adjacent letters as one edit (the commonest typing slip). Callers bound
 * the word lengths; the cost is their product.
 */
export function editDistance(a: string, b: string): number {
  // Three rolling rows: the swap looks two rows back.
  let before: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min((prev[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, (before[j - 2] ?? 0) + 1);
      row.push(v);
    }
    before = prev;
    prev = row;
  }
  return prev[b.length] ?? 0;
}

/**
 * "Did you mean" for mistyped commands, options and values. The distance is the optimal string
 * alignment distance (Levenshtein plus swapping two neighbours), so `craete` is one edit from
 * `create`, as a typist would count it.
 */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[] = new Array(rows * cols).fill(0);
  const at = (i: number, j: number) => d[i * cols + j]!;
  for (let i = 0; i < rows; i++) d[i * cols] = i;
  for (let j = 0; j < cols; j++) d[j] = j;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, at(i - 2, j - 2) + 1);
      d[i * cols + j] = best;
    }
  }
  return at(rows - 1, cols - 1);
}

/**
 * The candidate nearest to `word`, or undefined when none is near enough to be a typo: at most
 * a third of the word's length in edits (at least one), and a single best answer.
 */
export function nearest(word: string, candidates: Iterable<string>): string | undefined {
  const limit = Math.max(1, Math.floor(word.length / 3));
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  let tie = false;
  for (const c of new Set(candidates)) {
    const distance = editDistance(word.toLowerCase(), c.toLowerCase());
    if (distance < bestDistance) {
      best = c;
      bestDistance = distance;
      tie = false;
    } else if (distance === bestDistance) tie = true;
  }
  return best !== undefined && bestDistance <= limit && !tie ? best : undefined;
}

/** ` Did you mean 'x'?` when a candidate is near, else ''. */
export function didYouMean(word: string, candidates: Iterable<string>, show = (c: string) => c): string {
  const guess = nearest(word, candidates);
  return guess === undefined ? '' : ` Did you mean '${show(guess)}'?`;
}

/** @jsxRuntime automatic @jsxImportSource hono/jsx */
// (for tsx run from this package, which reads no tsconfig above it)
import type { FC } from 'hono/jsx';

/**
 * A message written for every face (the API's errors, the CLI, the pages) with commands in
 * backticks: on a page the backticks become <code>, instead of showing as they are.
 */
export const Prose: FC<{ text: string }> = ({ text }) => {
  const parts = text.split('`');
  // An odd count of backticks: the last one opens nothing, so the text is shown as it is.
  if (parts.length % 2 === 0) return <>{text}</>;
  return <>{parts.map((part, i) => (i % 2 === 1 ? <code>{part}</code> : part))}</>;
};

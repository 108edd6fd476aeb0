import type { Json, MessagesBody } from './types';

/**
 * The prompt in the order the provider reads (and caches) it: tools, then system, then each
 * message (a header unit for its role, then its content). Token counting and prompt caching
 * both walk these units, so the two can never disagree about what a prefix is.
 */
export type Unit =
  | { kind: 'tool'; value: Json; path: string }
  | { kind: 'system'; value: string | Json; path: string }
  | { kind: 'message'; value: string; path: string }
  | { kind: 'content'; value: string | Json; path: string };

/** Calls `visit` for each unit in order; stops early when it returns false. */
export function forEachUnit(body: MessagesBody, visit: (unit: Unit) => boolean | void): void {
  const { tools, system, messages } = body;
  if (tools) {
    for (let i = 0; i < tools.length; i++) {
      if (visit({ kind: 'tool', value: tools[i]!, path: `tools.${i}` }) === false) return;
    }
  }
  if (typeof system === 'string') {
    if (visit({ kind: 'system', value: system, path: 'system' }) === false) return;
  } else if (system) {
    for (let i = 0; i < system.length; i++) {
      if (visit({ kind: 'system', value: system[i]!, path: `system.${i}` }) === false) return;
    }
  }
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (visit({ kind: 'message', value: message.role, path: `messages.${i}` }) === false) return;
    const { content } = message;
    if (typeof content === 'string') {
      if (visit({ kind: 'content', value: content, path: `messages.${i}.content` }) === false) return;
      continue;
    }
    for (let j = 0; j < content.length; j++) {
      if (visit({ kind: 'content', value: content[j]!, path: `messages.${i}.content.${j}` }) === false)
        return;
    }
  }
}

/** A unit's own `cache_control`, if it carries one. */
export function cacheControlOf(unit: Unit): unknown {
  return typeof unit.value === 'object' ? unit.value.cache_control : undefined;
}

/** The object without its `cache_control`, which changes neither token counts nor cache keys. */
export function withoutCacheControl(value: Json): Json {
  if (value.cache_control === undefined) return value;
  const { cache_control: _ignored, ...rest } = value;
  return rest;
}

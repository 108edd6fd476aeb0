import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

interface Frame {
  url: string;
  lineNumber: number;
  columnNumber?: number;
}

/**
 * Points a profile's frames at the sources the built code came from (through the `.map` beside each
 * built file), so a frame in a bundled chunk reads as `services/gateway/src/…` or undici's own file
 * again, as the parts and package tables expect. Frames with no map are left as they are.
 */
export function toSources(frames: Iterable<Frame>): void {
  const maps = new Map<string, { map: SourceMap; dir: string } | null>();
  for (const frame of frames) {
    if (!frame.url.startsWith('file://')) continue;
    let entry = maps.get(frame.url);
    if (entry === undefined) {
      const file = fileURLToPath(frame.url);
      entry = existsSync(`${file}.map`)
        ? { map: new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8'))), dir: dirname(file) }
        : null;
      maps.set(frame.url, entry);
    }
    if (!entry) continue;
    const found = entry.map.findEntry(frame.lineNumber, frame.columnNumber ?? 0) as {
      originalSource?: string;
      originalLine?: number;
    };
    if (!found.originalSource) continue;
    const source = found.originalSource.startsWith('file://')
      ? found.originalSource
      : pathToFileURL(resolve(entry.dir, found.originalSource)).href;
    frame.url = source;
    frame.lineNumber = found.originalLine ?? frame.lineNumber;
  }
}

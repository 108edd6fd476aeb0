export type PdfObjectSource = [num: number, body: string];

/**
 * Writes a small PDF from object bodies, with a correct xref table and a trailer holding
 * `trailer` plus /Size. Given `base`, appends them as an incremental update of it instead.
 */
export function assemblePdf(objects: PdfObjectSource[], trailer: string, base?: Uint8Array): Uint8Array {
  const start = base?.length ?? 0;
  let text = base === undefined ? '%PDF-1.4\n%\xe2\xe3\xcf\xd3\n' : '\n';
  const offsets: Array<[number, number]> = [];
  for (const [num, body] of objects) {
    offsets.push([num, start + text.length]);
    text += `${num} 0 obj\n${body}\nendobj\n`;
  }

  const xref = start + text.length;
  text += base === undefined ? 'xref\n0 1\n0000000000 65535 f \n' : 'xref\n';
  for (const [num, offset] of offsets.sort((a, b) => a[0] - b[0])) {
    text += `${num} 1\n${String(offset).padStart(10, '0')} 00000 n \n`;
  }
  const size = Math.max(0, ...objects.map(([num]) => num)) + 1;
  const prev = base === undefined ? '' : ` /Prev ${lastStartxref(base)}`;
  text += `trailer\n<< /Size ${size} ${trailer}${prev} >>\nstartxref\n${xref}\n%%EOF\n`;

  const tail = Buffer.from(text, 'latin1');
  return base === undefined ? tail : Buffer.concat([base, tail]);
}

function lastStartxref(pdf: Uint8Array): number {
  const tail = Buffer.from(pdf.buffer, pdf.byteOffset, pdf.byteLength).toString(
    'latin1',
    Math.max(0, pdf.length - 1024),
  );
  const match = /startxref\s+(\d+)\s+%%EOF\s*$/.exec(tail);
  if (match?.[1] === undefined) throw new Error('base PDF has no startxref');
  return Number(match[1]);
}

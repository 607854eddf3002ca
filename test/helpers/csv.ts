/**
 * An RFC 4180 reader for the tests (no CSV package here): quoted fields with doubled quotes, commas
 * and line breaks inside quotes, CRLF or LF rows. An unquoted empty field reads as null, a quoted one
 * as "" (what a FOCUS reader tells apart). Throws on a malformed quote.
 */
export function parseCsv(text: string): (string | null)[][] {
  const rows: (string | null)[][] = [];
  let row: (string | null)[] = [];
  let i = 0;
  const n = text.length;
  while (i < n) {
    let value: string | null;
    if (text[i] === '"') {
      let out = '';
      i++;
      for (;;) {
        if (i >= n) throw new Error('CSV: unterminated quoted field');
        if (text[i] === '"') {
          if (text[i + 1] === '"') {
            out += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        out += text[i++];
      }
      value = out;
      if (i < n && text[i] !== ',' && text[i] !== '\r' && text[i] !== '\n')
        throw new Error(`CSV: text after a closing quote at ${i}`);
    } else {
      let end = i;
      while (end < n && text[end] !== ',' && text[end] !== '\r' && text[end] !== '\n') end++;
      const raw = text.slice(i, end);
      if (raw.includes('"')) throw new Error(`CSV: a quote inside an unquoted field at ${i}`);
      value = raw === '' ? null : raw;
      i = end;
    }
    row.push(value);
    if (text[i] === ',') {
      i++;
      continue;
    }
    if (text[i] === '\r') i++;
    if (text[i] === '\n') i++;
    rows.push(row);
    row = [];
  }
  return rows;
}

/** The rows as objects keyed by the header. */
export function csvRecords(text: string): Record<string, string | null>[] {
  const [header, ...rows] = parseCsv(text);
  if (!header) return [];
  return rows.map((r) => {
    if (r.length !== header.length) throw new Error(`CSV: a row of ${r.length} fields under ${header.length} columns`);
    return Object.fromEntries(header.map((h, k) => [h!, r[k]!]));
  });
}

/** A decimal string of at most 6 places as integer micro-USD (exact). */
export function microOf(decimal: string): bigint {
  const m = /^(-?)(\d+)(?:\.(\d{1,6}))?$/.exec(decimal);
  if (!m) throw new Error(`not a decimal of at most 6 places: ${decimal}`);
  const v = BigInt(m[2]!) * 1_000_000n + BigInt((m[3] ?? '').padEnd(6, '0'));
  return m[1] ? -v : v;
}

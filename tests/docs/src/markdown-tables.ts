/** The rows of the first markdown table after `heading`, as cells without their backticks. */
export function tableAfter(markdown: string, heading: string): string[][] {
  const start = markdown.indexOf(heading);
  if (start < 0) throw new Error(`No heading "${heading}"`);
  const lines = markdown.slice(start).split('\n');
  const first = lines.findIndex((line) => line.startsWith('|'));
  if (first < 0) throw new Error(`No table after "${heading}"`);
  const rows: string[][] = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim().replace(/^`([^`]*)`$/, '$1')),
    );
  }
  return rows;
}

/** The first cell of every row of the first table after `heading`. */
export function firstColumn(markdown: string, heading: string): string[] {
  return tableAfter(markdown, heading).map((row) => row[0] as string);
}

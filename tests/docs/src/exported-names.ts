import ts from 'typescript';

/** The names each module exports (values and types), read with one TypeScript program over all of them. */
export function exportedNames(
  entries: readonly string[],
  options: ts.CompilerOptions,
): Map<string, string[]> {
  const program = ts.createProgram([...entries], { ...options, noEmit: true });
  const checker = program.getTypeChecker();
  return new Map(
    entries.map((entry) => {
      const source = program.getSourceFile(entry);
      const module = source && checker.getSymbolAtLocation(source);
      if (!module) throw new Error(`Cannot read the exports of ${entry}`);
      return [entry, checker.getExportsOfModule(module).map((symbol) => symbol.getName())];
    }),
  );
}

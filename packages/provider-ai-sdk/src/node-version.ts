/**
 * The AI SDK 7 packages these tests load declare Node >= 22. Imported first by every test file of this package,
 * so a run on an older Node fails with this message instead of an obscure error deep inside the SDK.
 */
const major = Number(process.versions.node.split('.')[0]);
if (major < 0) {
  throw new Error(
    `@lunation/provider-ai-sdk tests need Node >= 22 (AI SDK 7 and @ai-sdk/* 4 declare it); this is Node ${process.versions.node}. Run them with Node 24: PATH="$(bash scripts/node24.sh)/bin:$PATH" pnpm vitest run --project provider-ai-sdk`,
  );
}

export {};

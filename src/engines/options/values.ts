/**
 * The values an engine's parser would store from an argument list, by option dest (the last one
 * written wins, as argparse's store action does): how the memory fit reads `--max-model-len`,
 * `--gpu-memory-utilization` or SGLang's `--mem-fraction-static` in any spelling the engine takes.
 * The list is one `checkArgs` accepted, so no token here is unknown or ambiguous.
 */
import { OptionIndex } from "./argparse";
import type { OptionTable } from "./table";

export function optionValues(table: OptionTable, args: readonly string[]): Map<string, string> {
  const index = new OptionIndex(table);
  const out = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const c = index.classify(args[i] ?? "");
    if (c.kind !== "option" || c.sel.option.nargs !== 1) continue;
    const value = c.sel.explicit ?? args[i + 1];
    if (c.sel.explicit === undefined) i++;
    if (value !== undefined) out.set(c.sel.option.dest, value);
  }
  return out;
}

/** Where the parser would take `dest`'s value from: the last token that sets it, and the value. */
export function optionAt(
  table: OptionTable,
  args: readonly string[],
  dest: string,
): { index: number; value: string } | undefined {
  const index = new OptionIndex(table);
  let found: { index: number; value: string } | undefined;
  for (let i = 0; i < args.length; i++) {
    const c = index.classify(args[i] ?? "");
    if (c.kind !== "option" || c.sel.option.nargs !== 1) continue;
    const value = c.sel.explicit ?? args[i + 1];
    if (value !== undefined && c.sel.option.dest === dest) found = { index: i, value };
    if (c.sel.explicit === undefined) i++;
  }
  return found;
}

/** The messages of what `fn` throws: one SpecError, or every error of a SpecErrors. */
import { SpecError, SpecErrors } from "../../src/recipe/errors";

export function errorsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (e) {
    if (e instanceof SpecErrors) return e.errors.map((x) => x.message);
    if (e instanceof SpecError) return [e.message];
    throw e;
  }
  throw new Error("expected a SpecError, but nothing was thrown");
}

/**
 * What the tests read back as JSON, typed once: an OpenAI-style `/v1/models` or chat answer, and
 * vitest's string matchers (typed `any` by vitest) as the unknown values they are.
 */
import { expect } from "vitest";

export interface ModelEntry {
  id: string;
  max_model_len?: number;
}

/** The models a `/v1/models` answer lists. */
export function modelsIn(text: string): ModelEntry[] {
  return (JSON.parse(text) as { data: ModelEntry[] }).data;
}

/** The first choice's message of a chat completion. */
export function answerIn(text: string): string | undefined {
  return (JSON.parse(text) as { choices: Array<{ message: { content?: string } }> }).choices[0]?.message.content;
}

/** expect.stringContaining, as a value that fits anywhere in an expected object. */
export function containing(s: string): unknown {
  return expect.stringContaining(s);
}

/** expect.stringMatching, likewise. */
export function matching(r: RegExp): unknown {
  return expect.stringMatching(r);
}

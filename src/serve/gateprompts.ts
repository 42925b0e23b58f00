/**
 * The gate's prompts (ships with sm121; never changed in place: a baseline measured with one set
 * compares only with runs of the same set, so a new set takes a new name and version). Sixteen
 * plain requests of the kinds a served model gets (explain, summarize, write code, translate,
 * reason), each cut or repeated to the gate's prompt length; request i asks prompt i mod 16,
 * numbered, so that no two requests of a run share a prefix the engine's prefix cache could serve.
 */
export const GATE_PROMPT_SET = "sm121-gate-1";

const PROMPTS: readonly string[] = [
  "Explain how a hash table handles collisions, and compare chaining with open addressing.",
  "Summarize the causes and the main consequences of the industrial revolution in Europe.",
  "Write a Python function that merges two sorted lists into one sorted list, with a short test.",
  "Translate into French: the train leaves at seven, so we should be at the station by half past six.",
  "A farmer has 17 sheep and all but 9 run away. How many are left? Explain your reasoning step by step.",
  "Describe the water cycle for a ten-year-old, naming evaporation, condensation and precipitation.",
  "What are the trade-offs between TCP and UDP for a real-time multiplayer game?",
  "Draft a polite email asking a colleague to review a pull request before Friday.",
  "Explain what a database index is, when it speeds a query up, and when it slows writes down.",
  "List five ways to reduce the memory use of a long-running Node.js service, with one line each.",
  "Write a haiku about a server room at night, then explain the image it uses.",
  "Why does the sky look blue during the day and red at sunset? Give the physical reason.",
  "Compare renting and buying a home for someone who expects to move in three years.",
  "Explain the difference between concurrency and parallelism with an example from a kitchen.",
  "Write a SQL query that finds the three customers with the highest total orders last month.",
  "What should a team write in a post-incident review, and what should it leave out?",
];

/** Request i's message: prompt i mod 16 of the set, numbered, cut or repeated to `words` words. */
export function gatePrompt(i: number, words: number): string {
  const base = (PROMPTS[i % PROMPTS.length] ?? "").split(" ");
  const out = [`${i + 1}.`];
  for (let k = 0; out.length < Math.max(1, words); k++) out.push(base[k % base.length] ?? "");
  return out.join(" ");
}

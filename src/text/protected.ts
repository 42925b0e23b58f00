/**
 * The one wording of a refusal on a protected node, wherever it is decided (the plan-time look,
 * the engine's check and delete, ImageSync): what the run would do there, and the allowance.
 * `sm121 down` finds these lines in Pulumi's output by this shape.
 */
export function protectedRefusal(node: string, situation: string): string {
  return `node ${node} is protected and ${situation}; run with SM121_ALLOW_PROTECTED=${node} to allow it`;
}

/**
 * The image a node runs, by digest: after a start (or a check) the serve asks docker which image
 * the container runs (its ID, the sha256 of the image's config: the same on every node that holds
 * that build, pulled or copied) and the registry digests docker knows for it (`repo@sha256:...`,
 * the manifest's digest, what `image = "repo@sha256:..."` names). The state keeps both per node.
 */
import { printRecord, recordsOf, type NodeRecord } from "../protocol";
import { familiarRef } from "../targets/dockerlook";
import { quote } from "../text/shell";

/** What a node runs: the image ID, and the registry digest of the recipe's repository where docker knows one. */
export interface RunningImage {
  id: string;
  digest?: string;
}

/** Two docker calls on the node: the container's image, then that image's registry digests. */
export function runningImageScript(container: string): string {
  const record = printRecord("runningImage", '"id":"%s","digests64":"%s"', `"$ri" "$(printf '%s' "$rd" | base64 -w0)"`);
  return [
    `ri=$(docker inspect -f '{{.Image}}' ${quote(container)} 2>/dev/null) || ri=`,
    'case "$ri" in sha256:*) ;; *) ri=;; esac',
    `if [ -n "$ri" ]; then rd=$(docker image inspect -f '{{range .RepoDigests}}{{.}} {{end}}' "$ri" 2>/dev/null) ||`,
    "  rd=",
    `  ${record}; fi`,
  ].join("\n");
}

/** The repository of a reference as docker names it (`nvcr.io/nvidia/vllm`, `vllm/vllm-openai`). */
export function repositoryOf(ref: string): string {
  const f = familiarRef(ref);
  const at = f.indexOf("@");
  if (at >= 0) return f.slice(0, at);
  return f.slice(0, f.lastIndexOf(":"));
}

/** The registry digest of `ref`'s repository among docker's RepoDigests (`repo@sha256:...`). */
export function digestFor(ref: string, repoDigests: readonly string[]): string | undefined {
  const repo = repositoryOf(ref);
  const hit = repoDigests.find((d) => d.startsWith(`${repo}@sha256:`));
  return hit === undefined ? undefined : hit.slice(repo.length + 1);
}

/** The running image from a node's records, for the image the bundle names. */
export function runningImageOf(records: readonly NodeRecord[], ref: string | undefined): RunningImage | undefined {
  const r = recordsOf(records, "runningImage")[0];
  if (r === undefined || !/^sha256:[0-9a-f]{64}$/.test(r.id)) return undefined;
  const digests = Buffer.from(r.digests64, "base64").toString("utf8").trim().split(/\s+/).filter(Boolean);
  const digest = ref === undefined ? undefined : digestFor(ref, digests);
  return { id: r.id, ...(digest !== undefined && { digest }) };
}

/**
 * The plan-time look's one docker call on a node: a single `docker inspect` of every container of
 * the node's deployments, of their images (a tag that moved: serve/drift) and of the images whose
 * IDs the look compares between nodes (fabric/resolve.serve), and of `none`, a network every Docker
 * Engine has, so that any answer at all means the daemon answered (a missing container is then
 * gone, not unknown). Each container's status reads its
 * lines of that answer (containerStatus with `looked`); each image found is a `lookImage` record.
 *
 * One template serves every kind of object: docker formats an object whose type lacks a field from
 * its raw JSON, where `index` finds a key or nothing (a field of a missing key would be an error).
 */
import { printRecord } from "../protocol";
import { quote } from "../text/shell";

const FORMAT =
  '{{if index . "State"}}@c {{.Name}} {{.State.Running}} {{.State.StartedAt}}' +
  '{{range .Mounts}}{{if eq .Type "bind"}}{{println}}@m {{.Source}}{{end}}{{end}}' +
  "{{println}}@g {{.Image}}{{println}}@p {{.State.Pid}} {{.LogPath}}" +
  '{{else if index . "RootFS"}}@i {{.Id}}{{range .RepoTags}} {{.}}{{end}}{{range .RepoDigests}} {{.}}{{end}}' +
  "{{else}}@n{{end}}";

/**
 * Sets `$dk` (docker's answer, both streams: its own lines begin with `@`), `$dkup` (true when the
 * daemon answered) and `$dkerr` (docker's last error line, as containersLeft says it), and prints
 * a `lookImage` record for each image found.
 */
export function dockerLookScript(containers: readonly string[], images: readonly string[]): string {
  const image = printRecord("lookImage", '"line64":"%s"', '"$(printf \'%s\' "${l#@i }" | base64 -w0)"');
  return [
    `dk=$(docker inspect -f ${quote(FORMAT)} ${[...containers, ...images].map(quote).join(" ")} none 2>&1) || true`,
    "dkup=false; dkerr=",
    'while IFS= read -r l; do case $l in @*) dkup=true;; ?*) dkerr=$l;; esac; done <<< "$dk"',
    `if [ "$dkup" != true ]; then dkerr=$(printf '%s' "$dkerr" | tr -d '"\\\\[:cntrl:]'); fi`,
    `while IFS= read -r l; do case $l in "@i "*) ${image};; esac; done <<< "$dk"`,
  ].join("\n");
}

/**
 * A container's lines of the look's answer: `$state` ("<running> <started at>", empty when docker
 * has no such container), `$lines` (an empty first entry, then the sources of its bind mounts),
 * `$cimage` (the ID of the image it runs), and `$cpid`, `$clog`: its main process on the node (0
 * when it runs none) and its log file.
 */
export function lookedContainer(name: string): string {
  const head = quote(`@c /${name} `);
  return [
    'state=; lines=(""); c=; cimage=; cpid=; clog=',
    `while IFS= read -r l; do case $l in ${head}*) c=1; state=\${l#${head}};; ` +
      '"@m "*) [ -z "$c" ] || lines+=("${l#@m }");; "@g "*) [ -z "$c" ] || cimage=${l#@g };; ' +
      '"@p "*) if [ -n "$c" ]; then l=${l#@p }; cpid=${l%% *}; clog=${l#* }; fi; c=;; *) c=;; esac; done <<< "$dk"',
  ].join("\n");
}

/** Sets `$timage` to the ID of the image `ref` names in the look's answer (empty when the node lacks it). */
export function lookedImage(ref: string): string {
  const named = quote(` ${familiarRef(ref)} `);
  return [
    "timage=",
    `while IFS= read -r l; do case "$l " in "@i "*${named}*) l=\${l#@i }; timage=\${l%% *};; esac; done <<< "$dk"`,
  ].join("\n");
}

/** An image reference as docker lists it among an image's RepoTags and RepoDigests (its familiar form). */
export function familiarRef(ref: string): string {
  const at = ref.indexOf("@");
  const digest = at === -1 ? undefined : ref.slice(at + 1);
  let name = at === -1 ? ref : ref.slice(0, at);
  const colon = name.lastIndexOf(":");
  let tag: string | undefined;
  if (colon > name.lastIndexOf("/")) {
    tag = name.slice(colon + 1);
    name = name.slice(0, colon);
  }
  // docker/distribution's reference rules: a first part with a dot or a port, or localhost, is a
  // registry; anything else is Docker Hub, whose one-part names live under library/.
  const hubHost = /^(docker\.io|index\.docker\.io)\//.exec(name)?.[0];
  const first = name.split("/")[0] ?? "";
  const hub = hubHost !== undefined || !(first.includes(".") || first.includes(":") || first === "localhost");
  if (hubHost !== undefined) name = name.slice(hubHost.length);
  if (hub && /^library\/[^/]+$/.test(name)) name = name.slice("library/".length);
  // A reference with a digest names the image by it (a tag beside it is not checked by docker).
  return digest !== undefined ? `${name}@${digest}` : `${name}:${tag ?? "latest"}`;
}

/** Each wanted image's ID from the look's `lookImage` lines (`<id> <ref>...`); null where the node lacks it. */
export function imageIdsOf(lines: readonly string[], wanted: readonly string[]): Record<string, string | null> {
  const found = lines.map((l) => l.trim().split(/\s+/));
  return Object.fromEntries(
    wanted.map((w) => {
      const ref = familiarRef(w);
      return [w, found.find(([, ...refs]) => refs.includes(ref))?.[0] ?? null];
    }),
  );
}

/** parseProfile on the extra arguments a profile passes to Docker and vLLM: one exact message each. */
import { describe, expect, it } from "vitest";
import { parseProfile } from "../src/render/profile";
import { errorsOf as messages } from "./helpers/spec";

const R = "# sm121-recipe: qwen38-flash\n";

const WHY =
  "only -e NAME=VALUE and -v SRC:DST[:ro|rw] pairs are allowed, " +
  "because start.sh splices EXTRA_DOCKER_ARGS unquoted into a generated bash script";
const MOUNT_FIX = "write -v /absolute/source:/absolute/target, optionally with :ro or :rw";
const WORD_FIX =
  "a word here may hold only letters, digits and _ . / : = , @ + % -, " +
  "because start.sh splices EXTRA_DOCKER_ARGS unquoted into a generated bash script";

describe("parseProfile: EXTRA_DOCKER_ARGS and EXTRA_VLLM_ARGS, one exact message each", () => {
  const cases: Array<[string, string, string[]]> = [
    [
      "a docker flag that is not -e or -v",
      'EXTRA_DOCKER_ARGS="--gpus all"\n',
      [
        `p.env:2:20: EXTRA_DOCKER_ARGS: \`--gpus\` is not part of a -e or -v pair: ${WHY}; ` +
          "remove it, or set what it does through a -e or -v pair or a recipe key",
        `p.env:2:27: EXTRA_DOCKER_ARGS: \`all\` is not part of a -e or -v pair: ${WHY}; ` +
          "remove it, or set what it does through a -e or -v pair or a recipe key",
      ],
    ],
    [
      "-e glued to its value",
      'EXTRA_DOCKER_ARGS="-eFOO=1"\n',
      [
        `p.env:2:20: EXTRA_DOCKER_ARGS: \`-eFOO=1\` is not part of a -e or -v pair: ${WHY}; ` +
          "write -e and its value as two words",
      ],
    ],
    [
      "long form --volume",
      'EXTRA_DOCKER_ARGS="--volume=/a:/b"\n',
      [
        `p.env:2:20: EXTRA_DOCKER_ARGS: \`--volume=/a:/b\` is not part of a -e or -v pair: ${WHY}; ` +
          "use the short form: -e NAME=VALUE or -v SRC:DST[:ro|rw]",
      ],
    ],
    [
      "-e without =",
      'EXTRA_DOCKER_ARGS="-e FOO"\n',
      [
        "p.env:2:23: EXTRA_DOCKER_ARGS: -e FOO is not NAME=VALUE; " +
          "write -e NAME=VALUE with a name of letters, digits and _",
      ],
    ],
    [
      "-v without a target",
      'EXTRA_DOCKER_ARGS="-v /a"\n',
      [`p.env:2:23: EXTRA_DOCKER_ARGS: -v /a is not SRC:DST[:ro|rw]; ${MOUNT_FIX}`],
    ],
    [
      "-v with a bad mode",
      'EXTRA_DOCKER_ARGS="-v /a:/b:z"\n',
      ["p.env:2:23: EXTRA_DOCKER_ARGS: -v /a:/b:z has mode `z`; use :ro or :rw, or no mode"],
    ],
    [
      "-v with a relative source",
      'EXTRA_DOCKER_ARGS="-v rel:/b"\n',
      [
        `p.env:2:23: EXTRA_DOCKER_ARGS: -v rel:/b: source rel is not an absolute path; ${MOUNT_FIX}; ` +
          "the source is a path on the node",
      ],
    ],
    [
      "-v with a relative target",
      'EXTRA_DOCKER_ARGS="-v /a:rel"\n',
      [`p.env:2:23: EXTRA_DOCKER_ARGS: -v /a:rel: target rel is not an absolute path; ${MOUNT_FIX}`],
    ],
    [
      "-e at the end without a value",
      'EXTRA_DOCKER_ARGS="-v /a:/b -e"\n',
      ["p.env:2:29: EXTRA_DOCKER_ARGS: -e has no value; write -e NAME=VALUE"],
    ],
    [
      "a secret in EXTRA_DOCKER_ARGS",
      'EXTRA_DOCKER_ARGS="-e HF_TOKEN=hf_secret123"\n',
      [
        "p.env:2:23: EXTRA_DOCKER_ARGS: -e HF_TOKEN puts a secret into EXTRA_DOCKER_ARGS; remove it; " +
          "HF_TOKEN belongs in the node .env or a Pulumi secret",
      ],
    ],
    [
      "a shell metacharacter in a docker word",
      'EXTRA_DOCKER_ARGS="-e A=1;reboot"\n',
      [`p.env:2:26: EXTRA_DOCKER_ARGS: -e A=1;reboot contains \`;\`; ${WORD_FIX}`],
    ],
    [
      "a bad word on a later line of a multi-line value",
      'EXTRA_DOCKER_ARGS="\n  -e A=1\n  -v /x:/y\n  --privileged\n"\n',
      [
        `p.env:5:3: EXTRA_DOCKER_ARGS: \`--privileged\` is not part of a -e or -v pair: ${WHY}; ` +
          "remove it, or set what it does through a -e or -v pair or a recipe key",
      ],
    ],
    [
      "--api-key= in EXTRA_VLLM_ARGS",
      'EXTRA_VLLM_ARGS="--enforce-eager --api-key=sk-secret123"\n',
      [
        "p.env:2:34: EXTRA_VLLM_ARGS: --api-key is not allowed in EXTRA_VLLM_ARGS; " +
          "put the key in the node .env as API_KEY; start.sh passes it to vLLM as --api-key",
      ],
    ],
    [
      "--api-key on a later line",
      'EXTRA_VLLM_ARGS="\n  --enforce-eager\n  --api-key sk-secret123\n"\n',
      [
        "p.env:4:3: EXTRA_VLLM_ARGS: --api-key is not allowed in EXTRA_VLLM_ARGS; " +
          "put the key in the node .env as API_KEY; start.sh passes it to vLLM as --api-key",
      ],
    ],
    [
      "--api-k (a prefix vLLM's parser takes for --api-key) in EXTRA_VLLM_ARGS",
      'EXTRA_VLLM_ARGS="--api-k sk-secret123 --api_key=sk-2"\n',
      [
        "p.env:2:18: EXTRA_VLLM_ARGS: --api-key is not allowed in EXTRA_VLLM_ARGS; " +
          "put the key in the node .env as API_KEY; start.sh passes it to vLLM as --api-key",
        "p.env:2:39: EXTRA_VLLM_ARGS: --api-key is not allowed in EXTRA_VLLM_ARGS; " +
          "put the key in the node .env as API_KEY; start.sh passes it to vLLM as --api-key",
      ],
    ],
  ];
  it.each(cases)("%s", (_name, body, expected) => {
    expect(messages(() => parseProfile("p.env", R + body))).toEqual(expected);
  });
});

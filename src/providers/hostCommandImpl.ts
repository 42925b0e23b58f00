/**
 * HostCommand is gone: a recipe's hooks now run inside the engine's own sequence (before_serve
 * before every start, after_stop after every stop; see serve/registry). This module stays only so
 * that a stack written by an older sm121, whose state still holds HostCommand resources, can drop
 * them: their delete must not run an after_stop hook while the engine keeps running.
 */
import type * as pulumi from "@pulumi/pulumi";
import { providerLog } from "./common";

interface Props {
  node: string;
}

export async function diff(): Promise<pulumi.dynamic.DiffResult> {
  return { changes: false };
}

export async function create(): Promise<pulumi.dynamic.CreateResult> {
  throw new Error("HostCommand is no longer created: hooks run with the engine (EngineDeployment)");
}

export async function update(_id: string, _olds: Props, news: Props): Promise<pulumi.dynamic.UpdateResult> {
  return { outs: news };
}

export async function remove(_id: string, props: Props): Promise<void> {
  providerLog(props.node)("the old hook resource is dropped from the state; hooks now run with the engine (nothing runs on the node for this)");
}

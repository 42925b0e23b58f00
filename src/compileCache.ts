/**
 * Imported first by the program: Node's on-disk compile cache for every module loaded after it
 * (sm121's and the SDK modules the program uses), in NODE_COMPILE_CACHE or Node's default
 * directory. A warm cache spares recompiling them on each preview and up.
 */
import { enableCompileCache } from "node:module";

enableCompileCache();

/** Runs in every test file before its tests: what testDir made goes when the file's tests end. */
import { afterAll } from "vitest";
import { removeTestDirs } from "./helpers/tmp";

afterAll(removeTestDirs);

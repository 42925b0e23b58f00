#!/usr/bin/env node
"use strict";
// The test site's `docker`, one command in a process of its own (see docker/cli.js).
const code = require("./docker/cli").run(process.argv.slice(2));
if (typeof code === "number") process.exitCode = code;
else code.then((rc) => (process.exitCode = rc));

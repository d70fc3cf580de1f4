#!/usr/bin/env node
// Print a stopped zmq-raft peer's log, read with the reference's own FileLog (read-only):
//
//   node dump-log.js REFERENCE_DIR DATA_DIR
//
// REFERENCE_DIR holds node_modules/zmq-raft; DATA_DIR is the peer's data.path (log/ and
// snap inside). Output, one JSON object a line: first
//   {"first": FIRST_INDEX, "last": LAST_INDEX, "snapshot": [INDEX, TERM]}
// then one {"i": INDEX, "e": BASE64} per entry, where BASE64 is the entry exactly as
// stored (request id, type, 7-byte term, data: the protocol's entry frame).
// Any failure: one line on stderr, exit 1.
"use strict";

const path = require("path");

const [refDir, dataDir] = process.argv.slice(2);
if (!refDir || !dataDir) {
  console.error("usage: dump-log.js REFERENCE_DIR DATA_DIR");
  process.exit(2);
}

const raft = require(path.join(path.resolve(refDir), "node_modules", "zmq-raft"));
const { FileLog } = raft.server;

const out = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");

async function main() {
  const log = new FileLog(path.join(dataDir, "log"), path.join(dataDir, "snap"), true);
  await log.ready();
  const snap = log.snapshot;
  out({ first: log.firstIndex, last: log.lastIndex, snapshot: [snap.logIndex, snap.logTerm] });
  const step = 4096;
  for (let lo = log.firstIndex; lo <= log.lastIndex; lo += step) {
    const hi = Math.min(log.lastIndex, lo + step - 1);
    const entries = await log.getEntries(lo, hi);
    entries.forEach((entry, k) => out({ i: lo + k, e: Buffer.from(entry).toString("base64") }));
  }
  await log.close();
}

main().catch((err) => {
  console.error(`dump-log: ${dataDir}: ${err.message}`);
  process.exit(1);
});

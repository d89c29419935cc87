#!/usr/bin/env node
// A Coup bot in Node.js (no packages) for `coupjax arena`: a uniformly random legal
// action, except that it never challenges.  It speaks the JSON-lines protocol of
// docs/bots.md on stdin/stdout and logs to stderr (the arena saves it).
//
//   python -m coupjax arena --bot rnd="node examples/bots/random_bot.js" --policy belief_ev ...
"use strict";
const readline = require("readline");

const PROTOCOL = 1;
const send = (message) => process.stdout.write(JSON.stringify(message) + "\n");
let events = 0;

const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (line) => {
  const msg = JSON.parse(line);
  switch (msg.type) {
    case "hello":
      send({ type: "hello", protocol: PROTOCOL, name: "random_bot.js" });
      break;
    case "start":
      console.error(`match ${msg.match}: seat ${msg.seat}, cards ${msg.cards.join(", ")}`);
      break;
    case "event":
      events += 1;
      break;
    case "decide": {
      const calm = msg.legal.filter((name) => name !== "challenge");
      const pool = calm.length > 0 ? calm : msg.legal;
      send({ action: pool[Math.floor(Math.random() * pool.length)] });
      break;
    }
    case "end":
      console.error(`saw ${events} events; placement ${msg.placement}`);
      rl.close();
      break;
  }
});

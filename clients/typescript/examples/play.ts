// Play a whole game against a bot over gRPC, and watch it: the TypeScript example.
//
//   npm run example -- 127.0.0.1:50051        (an engine: `ascension-engine serve`)
//
// It creates a game with a seat for this program and an AI seat at the "easy" level, plays its
// seat to the end with the legal actions the engine lists (cards first, then buys and fights,
// then the end of the turn), while a second stream watches every update of the game.
import { engineClient, SeatInfo_Kind, type GameView, type LegalAction } from "../src/index.js";

const address = process.argv[2] ?? "127.0.0.1:50051";
const engine = engineClient(address);

const created = await engine.createGame({
  sets: "ss",
  seats: [
    { kind: SeatInfo_Kind.HUMAN, name: "TypeScript" },
    { kind: SeatInfo_Kind.AI, bot: { difficulty: "easy" } },
  ],
});
const gameId = created.gameId;
const token = created.seatTokens[0];
console.log(`game ${gameId} created on ${address}`);

// A spectator: every update from the first, until the game is over.
const watching = (async () => {
  let updates = 0;
  for await (const u of engine.watchGame({ gameId, afterVersion: 0n })) {
    updates += 1;
    if (u.over) break;
  }
  return updates;
})();

const ORDER = ["play", "use", "flip_coins", "defeat", "acquire", "defeat_crew", "acquire_crew", "place_ship"];

/** A simple policy: cards first, then fights and buys; answers choices; else ends the turn. */
function choose(view: GameView, movesThisTurn: number): LegalAction {
  const legal = view.legalActions;
  const end = legal.find((a) => a.kind === "end_turn");
  if (end && movesThisTurn > 30) return end;
  for (const kind of ORDER) {
    const a = legal.find((x) => x.kind === kind);
    if (a) return a;
  }
  return legal.find((a) => a.kind !== "end_turn" && a.kind !== "move") ?? end ?? legal[0];
}

let view = await engine.getGame({ gameId, token });
let submitted = 0;
let movesThisTurn = 0;
while (!view.over) {
  if (view.toMove === view.seat && view.legalActions.length > 0) {
    const action = choose(view, movesThisTurn);
    const r = await engine.submitAction({ gameId, token, expectedVersion: view.version, action: action.id });
    submitted += 1;
    movesThisTurn = action.kind === "end_turn" ? 0 : movesThisTurn + 1;
    view = r.view ?? (await engine.getGame({ gameId, token }));
  } else {
    // the bot's turn (or its answer to a choice): wait for an update that hands it back,
    // then close the stream (leaving the loop alone would keep it, and the process, open)
    const done = new AbortController();
    try {
      for await (const u of engine.watchGame({ gameId, afterVersion: view.version }, { signal: done.signal })) {
        if (u.over || u.toMove === view.seat) break;
      }
    } finally {
      done.abort();
    }
    view = await engine.getGame({ gameId, token });
  }
}

const updates = await watching;
const name = (seat: number) => (seat === view.seat ? "TypeScript" : `seat ${seat + 1} (${view.seatInfo[seat]?.botName})`);
for (const s of view.scores) console.log(`${name(s.seat)}: ${s.total} Honor`);
console.log(`game over after version ${view.version}: ${name(view.winner)} wins; ${submitted} moves submitted, ${updates} updates watched`);
